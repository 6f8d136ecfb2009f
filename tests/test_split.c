/* Split models (NAME-00001-of-00003.gguf, ...): opened from the first file,
 * they must be the same model as the one file they were cut from: the same
 * tensors (names, types, shapes, bytes), the same metadata, and a forward pass
 * whose logits are bit-identical (the same weights in the same kernels).
 * Broken sets (a file missing, truncated, renamed, out of place, a tensor in
 * two files, counts that disagree) are the hostile corpus's (gen_hostile.c),
 * checked at the CLI in the normal and the sanitizer builds. */
#include <stdlib.h>
#include <unistd.h>

#include "model/context.h"
#include "test.h"
#include "tiny_model.h"

static char tmpdir[256];

typedef struct pair {
    nib_gguf *one, *split;
    char one_path[512], split_prefix[512], split_first[600];
} pair;

/* The tiny model written as one file and as three splits of the same bytes. */
static bool write_pair(pair *p, bool spm) {
    tiny_model t;
    tiny_defaults(&t, spm);
    t.untied = true;  /* one more tensor: 21, so the three files hold 7 each */
    snprintf(p->one_path, sizeof p->one_path, "%s/one-%d.gguf", tmpdir, spm);
    snprintf(p->split_prefix, sizeof p->split_prefix, "%s/split-%d", tmpdir, spm);
    snprintf(p->split_first, sizeof p->split_first, "%s-00001-of-00003.gguf", p->split_prefix);
    nib_error err = {0};
    if (tiny_write(&t, p->one_path, &err) != NIB_OK) {
        CHECK(0, "write one file: %s", err.msg);
        return false;
    }
    t.n_split = 3;
    if (tiny_write(&t, p->split_prefix, &err) != NIB_OK) {
        CHECK(0, "write splits: %s", err.msg);
        return false;
    }
    return true;
}

static void test_split_tensor_table(void) {
    pair p;
    if (!write_pair(&p, false)) return;
    nib_error err = {0};
    nib_gguf *one = nib_gguf_open_split(p.one_path, &err);
    CHECK(one, "open one file: %s", err.msg);
    nib_gguf *sp = nib_gguf_open_split(p.split_first, &err);
    CHECK(sp, "open splits: %s", err.msg);
    if (!one || !sp) goto done;
    CHECK(nib_gguf_n_splits(one) == 1 && nib_gguf_n_splits(sp) == 3, "n_splits %d and %d, want 1 and 3",
          nib_gguf_n_splits(one), nib_gguf_n_splits(sp));
    CHECK(nib_gguf_n_tensors(sp) == nib_gguf_n_tensors(one) && nib_gguf_n_tensors(one) == 21,
          "tensors: %lld split, %lld one, want 21", (long long)nib_gguf_n_tensors(sp), (long long)nib_gguf_n_tensors(one));
    /* tiny_write puts tensor i in file i % 3; the merged table lists file 0's, then 1's, then 2's */
    int per_file[3] = {0};
    for (int64_t i = 0; i < nib_gguf_n_tensors(sp); i++) {
        const nib_gguf_tensor *a = nib_gguf_tensor_at(sp, i);
        int f = nib_gguf_tensor_split(sp, i);
        CHECK(f >= 0 && f < 3, "tensor %lld in file %d", (long long)i, f);
        if (f < 0 || f >= 3) continue;
        CHECK(i == 0 || f >= nib_gguf_tensor_split(sp, i - 1), "files out of order at tensor %lld", (long long)i);
        per_file[f]++;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)a->name.len, a->name.ptr);
        int64_t j = nib_gguf_find_tensor(one, name);
        CHECK(j >= 0, "'%s' of the splits is not in the one file", name);
        if (j < 0) continue;
        CHECK(j % 3 == f, "'%s' is tensor %lld of the one file but in split %d", name, (long long)j, f + 1);
        const nib_gguf_tensor *b = nib_gguf_tensor_at(one, j);
        CHECK(a->type == b->type && a->n_bytes == b->n_bytes && !memcmp(a->ne, b->ne, sizeof a->ne),
              "'%s': type, shape or size differ", name);
        CHECK(a->n_bytes == b->n_bytes && !memcmp(a->data, b->data, (size_t)b->n_bytes), "'%s': data differ", name);
        CHECK(nib_gguf_find_tensor(sp, name) == i, "find_tensor('%s') on the splits is not %lld", name, (long long)i);
    }
    CHECK(per_file[0] == 7 && per_file[1] == 7 && per_file[2] == 7, "tensors per file %d %d %d, want 7 each",
          per_file[0], per_file[1], per_file[2]);
    /* metadata is the first file's: the one file's keys plus the three split keys */
    CHECK(nib_gguf_n_kv(sp) == nib_gguf_n_kv(one) + 3, "%lld keys in the first split, %lld in the one file",
          (long long)nib_gguf_n_kv(sp), (long long)nib_gguf_n_kv(one));
    int64_t n;
    CHECK(nib_gguf_get_int(sp, "split.tensors.count", &n, &err) == NIB_OK && n == 21, "split.tensors.count");
    CHECK(nib_gguf_find_tensor(sp, "no.such.tensor") == -1, "a missing name is found");
done:
    nib_gguf_close(one);
    nib_gguf_close(sp);
}

/* Logits of a few decode steps, bit for bit: the model is the same bytes. */
static void test_split_model_logits(void) {
    for (int spm = 0; spm < 2; spm++) {
        pair p;
        if (!write_pair(&p, spm)) return;
        nib_error err = {0};
        nib_model *a = nib_model_load(p.one_path, &err);
        CHECK(a, "load one file: %s", err.msg);
        nib_model *b = nib_model_load(p.split_first, &err);
        CHECK(b, "load splits: %s", err.msg);
        nib_ctx_params cp = {.n_ctx = 32, .n_threads = 2};
        nib_ctx *ca = a ? nib_ctx_new(a, &cp, &err) : NULL, *cb = b ? nib_ctx_new(b, &cp, &err) : NULL;
        CHECK(!a || !b || (ca && cb), "contexts: %s", err.msg);
        if (ca && cb) {
            const int32_t toks[] = {5, 77, 140, 3, 251, 9, 42};
            int32_t nv = a->hp.n_vocab;
            float *la = malloc(sizeof toks / sizeof toks[0] * (size_t)nv * sizeof *la);
            float *lb = malloc(sizeof toks / sizeof toks[0] * (size_t)nv * sizeof *lb);
            for (size_t i = 0; la && lb && i < sizeof toks / sizeof toks[0] * (size_t)nv; i++) la[i] = NAN, lb[i] = -1.0f;
            CHECK(la && lb && nib_ctx_decode(ca, toks, 7, la, &err) == NIB_OK && nib_ctx_decode(cb, toks, 7, lb, &err) == NIB_OK,
                  "decode: %s", err.msg);
            size_t diff = 0, finite = 0;
            for (size_t i = 0; la && lb && i < 7 * (size_t)nv; i++) {
                diff += memcmp(&la[i], &lb[i], sizeof *la) != 0;
                finite += isfinite(la[i]);
            }
            CHECK(diff == 0 && finite == 7 * (size_t)nv, "%s: %zu of %zu logits differ, %zu finite",
                  spm ? "spm" : "bpe", diff, 7 * (size_t)nv, finite);
            free(la);
            free(lb);
        }
        nib_ctx_free(ca);
        nib_ctx_free(cb);
        nib_model_free(a);
        nib_model_free(b);
    }
}

/* One file that carries split keys saying it is the only split is one file. */
static void test_split_count_one(void) {
    char path[600];
    snprintf(path, sizeof path, "%s/single.gguf", tmpdir);
    nib_gguf_writer *w = nib_gguf_writer_new();
    nib_error err = {0};
    float x[4] = {1, 2, 3, 4};
    int64_t ne[1] = {4};
    CHECK(w && nib_gguf_writer_add_u32(w, "split.count", 1, &err) == NIB_OK &&
              nib_gguf_writer_add_u32(w, "split.no", 0, &err) == NIB_OK &&
              nib_gguf_writer_add_tensor(w, "x", NIB_TYPE_F32, 1, ne, x, &err) == NIB_OK &&
              nib_gguf_writer_write(w, path, &err) == NIB_OK,
          "write: %s", err.msg);
    nib_gguf_writer_free(w);
    nib_gguf *g = nib_gguf_open_split(path, &err);
    CHECK(g && nib_gguf_n_splits(g) == 1 && nib_gguf_n_tensors(g) == 1 && nib_gguf_tensor_split(g, 0) == 0,
          "split.count 1: %s", g ? "wrong table" : err.msg);
    nib_gguf_close(g);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "%s/nib-test-split-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_split_tensor_table);
    RUN(test_split_model_logits);
    RUN(test_split_count_one);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return test_summary();
}
