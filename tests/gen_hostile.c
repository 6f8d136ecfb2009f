/* The hostile-input generator: writes, at test time, the files the hostile
 * tests and the fuzzers feed nib (nothing binary is committed).
 *
 *   gen_hostile corpus DIR   the malformed-file corpus: a valid tiny model
 *                            (tests/tiny_model.h), then one file per way of
 *                            breaking it, and DIR/manifest.tsv saying what
 *                            `nib inspect` and `nib run` must answer for each
 *   gen_hostile seeds DIR [CHAT_DIR]
 *                            seed corpora for the fuzz harnesses: DIR/gguf,
 *                            DIR/model, DIR/tokenizer, DIR/chat (templates
 *                            read from CHAT_DIR/ *.jinja)
 *
 * The corpus has two halves. Reader cases take the valid file's bytes and
 * break one field in place (a walker below finds every field's offset):
 * truncation at each section boundary, magic, version, counts far beyond the
 * file, string and array lengths that overflow or run past the end, unknown
 * value and tensor types, nested arrays, dimension counts and products,
 * offsets misaligned, past the end or overlapping, duplicate names. Model
 * cases write the model again with one thing changed through tiny_model's
 * fields: keys missing or of the wrong type, hyperparameters that contradict
 * each other or the tensors, bad vocabularies, special ids outside the
 * vocabulary, NaN and infinite weights (legal: nib must run them, and warns).
 *
 * Manifest lines: NAME <tab> INSPECT <tab> RUN, each "ok", "ok:REGEX" (exit 0
 * with REGEX in stderr: a warning) or "fail:REGEX" (non-zero exit with REGEX,
 * an extended regular expression, in stderr). */
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include "tiny_model.h"

static char out_dir[512];
static FILE *manifest;
static int n_written, n_failed;

static void path_of(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", out_dir, name); }

static bool write_bytes(const char *name, const void *p, size_t n) {
    char path[1024];
    path_of(path, sizeof path, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n)) {
        fprintf(stderr, "gen_hostile: cannot write %s: %s\n", path, strerror(errno));
        if (f) fclose(f);
        n_failed++;
        return false;
    }
    fclose(f);
    n_written++;
    return true;
}

static uint8_t *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = sz >= 0 ? malloc((size_t)sz + 1) : NULL;
    if (p && fread(p, 1, (size_t)sz, f) != (size_t)sz) free(p), p = NULL;
    fclose(f);
    *n = p ? (size_t)sz : 0;
    return p;
}

/* ---- where every field of a GGUF file is --------------------------------------------- */

#define MAX_FIELDS 64

typedef struct kv_loc {
    size_t at, type_at, value_at, end;  /* the key's length field, its type, its value, one past it */
    uint32_t type, elem_type;
    char key[96];
} kv_loc;

typedef struct ti_loc {
    size_t at, ndims_at, dims_at, type_at, offset_at, end;
    uint32_t n_dims;
    char name[96];
} ti_loc;

typedef struct layout {
    size_t n_kv, n_ti;
    kv_loc kv[MAX_FIELDS];
    ti_loc ti[MAX_FIELDS];
    size_t info_end, data_start;
} layout;

static uint64_t rd64(const uint8_t *b, size_t at) {
    uint64_t v;
    memcpy(&v, b + at, 8);
    return v;
}
static uint32_t rd32(const uint8_t *b, size_t at) {
    uint32_t v;
    memcpy(&v, b + at, 4);
    return v;
}
static void wr64(uint8_t *b, size_t at, uint64_t v) { memcpy(b + at, &v, 8); }
static void wr32(uint8_t *b, size_t at, uint32_t v) { memcpy(b + at, &v, 4); }

/* Walks a file nib itself wrote (so trusted: no checks beyond the basics). */
static bool walk(const uint8_t *b, size_t n, layout *L) {
    static const size_t scalar[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    memset(L, 0, sizeof *L);
    L->n_ti = rd64(b, 8);
    L->n_kv = rd64(b, 16);
    if (L->n_kv > MAX_FIELDS || L->n_ti > MAX_FIELDS) return false;
    size_t p = 24;
    for (size_t i = 0; i < L->n_kv; i++) {
        kv_loc *k = &L->kv[i];
        k->at = p;
        uint64_t len = rd64(b, p);
        snprintf(k->key, sizeof k->key, "%.*s", (int)len, (const char *)b + p + 8);
        p += 8 + len;
        k->type_at = p;
        k->type = rd32(b, p);
        p += 4;
        k->value_at = p;
        if (k->type == NIB_GGUF_STRING) {
            p += 8 + rd64(b, p);
        } else if (k->type == NIB_GGUF_ARRAY) {
            k->elem_type = rd32(b, p);
            uint64_t cnt = rd64(b, p + 4);
            p += 12;
            for (uint64_t e = 0; e < cnt; e++) p += k->elem_type == NIB_GGUF_STRING ? 8 + rd64(b, p) : scalar[k->elem_type];
        } else {
            p += scalar[k->type];
        }
        k->end = p;
    }
    for (size_t i = 0; i < L->n_ti; i++) {
        ti_loc *t = &L->ti[i];
        t->at = p;
        uint64_t len = rd64(b, p);
        snprintf(t->name, sizeof t->name, "%.*s", (int)len, (const char *)b + p + 8);
        p += 8 + len;
        t->ndims_at = p;
        t->n_dims = rd32(b, p);
        t->dims_at = p + 4;
        p += 4 + 8 * (size_t)t->n_dims;
        t->type_at = p;
        t->offset_at = p + 4;
        p += 12;
        t->end = p;
    }
    L->info_end = p;
    L->data_start = (p + 31) / 32 * 32;
    return p <= n;
}

static const kv_loc *find_kv(const layout *L, const char *key) {
    for (size_t i = 0; i < L->n_kv; i++)
        if (!strcmp(L->kv[i].key, key)) return &L->kv[i];
    return NULL;
}
static const ti_loc *find_ti(const layout *L, const char *name) {
    for (size_t i = 0; i < L->n_ti; i++)
        if (!strcmp(L->ti[i].name, name)) return &L->ti[i];
    return NULL;
}

/* ---- reader cases: the valid file with one field broken ------------------------------ */

static const uint8_t *base;
static size_t base_n;
static layout base_L;

static void expect(const char *name, const char *inspect, const char *run) {
    fprintf(manifest, "%s\t%s\t%s\n", name, inspect, run);
}

typedef void (*edit_fn)(uint8_t *b, const layout *L, uintptr_t arg);

/* Writes base with `edit` applied, cut to n bytes, and what the commands must say. */
static void edited_file(const char *name, size_t n, edit_fn edit, uintptr_t arg, const char *inspect, const char *run) {
    uint8_t *b = malloc(base_n + 1);
    if (!b) return;
    memcpy(b, base, base_n);
    if (edit) edit(b, &base_L, arg);
    if (write_bytes(name, b, n)) expect(name, inspect, run);
    free(b);
}

/* The same where both commands must fail with `why` (the reader's message). */
static void reader_case(const char *name, size_t n, edit_fn edit, uintptr_t arg, const char *why) {
    char fail[256];
    snprintf(fail, sizeof fail, "fail:%s", why);
    edited_file(name, n, edit, arg, fail, fail);
}

static void e_u32(uint8_t *b, const layout *L, uintptr_t at_val) {
    (void)L;
    wr32(b, (size_t)(at_val >> 32), (uint32_t)at_val);
}
typedef struct patch64 {
    size_t at;
    uint64_t v;
} patch64;
static void e_u64(uint8_t *b, const layout *L, uintptr_t p) {
    (void)L;
    const patch64 *q = (const patch64 *)p;
    wr64(b, q->at, q->v);
}
static void e_bytes4(uint8_t *b, const layout *L, uintptr_t p) {
    (void)L;
    memcpy(b, (const char *)p, 4);
}
/* two dimensions of 2^40: the element count overflows 64 bits */
static void e_dims_2e40(uint8_t *b, const layout *L, uintptr_t at) {
    (void)L;
    wr64(b, (size_t)at, 1ull << 40), wr64(b, (size_t)at + 8, 1ull << 40);
}

static void put64(const char *name, size_t at, uint64_t v, const char *why) {
    patch64 p = {at, v};
    reader_case(name, base_n, e_u64, (uintptr_t)&p, why);
}
static void put32(const char *name, size_t at, uint32_t v, const char *why) {
    reader_case(name, base_n, e_u32, (uintptr_t)at << 32 | v, why);
}

/* Copies the name of a tensor (or key) over another of the same length. */
typedef struct rename_arg {
    size_t to, from, len;
} rename_arg;
static void e_rename(uint8_t *b, const layout *L, uintptr_t p) {
    (void)L;
    const rename_arg *r = (const rename_arg *)p;
    memcpy(b + r->to + 8, b + r->from + 8, r->len);
}

static void reader_cases(void) {
    const layout *L = &base_L;
    char name[160];
    /* cut inside the metadata, the first count checked (tensors) no longer fits what remains */
    const char *trunc = "truncated|exceeds|runs past the end|ends before|claims|remaining bytes can hold";

    /* truncated at every boundary: inside the header, after each key-value
     * pair and each tensor's info, in the padding and the data; and inside a
     * key, a string value, an array and a tensor's dimensions (test_gguf.c
     * cuts a file at every byte, in-process) */
    reader_case("r-trunc-empty", 0, NULL, 0, "truncated reading magic");
    static const size_t header_cuts[] = {2, 4, 6, 8, 12, 16, 20};
    for (size_t i = 0; i < sizeof header_cuts / sizeof header_cuts[0]; i++) {
        snprintf(name, sizeof name, "r-trunc-header-%zu", header_cuts[i]);
        reader_case(name, header_cuts[i], NULL, 0, "truncated");
    }
    for (size_t i = 0; i < L->n_kv; i++) {
        snprintf(name, sizeof name, "r-trunc-after-kv%zu", i);
        reader_case(name, L->kv[i].end, NULL, 0, trunc);
    }
    for (size_t i = 0; i < L->n_ti; i++) {
        snprintf(name, sizeof name, "r-trunc-after-tensor-info%zu", i);
        reader_case(name, L->ti[i].end, NULL, 0, trunc);
    }
    const kv_loc *kfirst = &L->kv[0], *karch = find_kv(L, "general.architecture"), *ktok = find_kv(L, "tokenizer.ggml.tokens");
    reader_case("r-trunc-in-key", kfirst->at + 8 + 3, NULL, 0, trunc);
    reader_case("r-trunc-in-string-value", karch->value_at + 10, NULL, 0, trunc);
    reader_case("r-trunc-in-string-array", ktok->value_at + (ktok->end - ktok->value_at) / 2, NULL, 0, trunc);
    reader_case("r-trunc-in-tensor-dims", L->ti[0].dims_at + 5, NULL, 0, trunc);
    reader_case("r-trunc-in-padding", L->info_end + (L->data_start - L->info_end) / 2, NULL, 0, trunc);
    reader_case("r-trunc-data-start", L->data_start, NULL, 0, trunc);
    reader_case("r-trunc-data-middle", L->data_start + (base_n - L->data_start) / 2, NULL, 0, trunc);
    reader_case("r-trunc-last-byte", base_n - 1, NULL, 0, "runs past the end");

    /* magic and version */
    reader_case("r-magic-ggml", base_n, e_bytes4, (uintptr_t)"GGML", "not a GGUF file");
    reader_case("r-magic-zero", base_n, e_bytes4, (uintptr_t)"\0\0\0\0", "not a GGUF file");
    put32("r-version-0", 4, 0, "unsupported GGUF version 0");
    put32("r-version-1", 4, 1, "version 1 is not supported");
    put32("r-version-4", 4, 4, "unsupported GGUF version 4");
    put32("r-version-big-endian", 4, 0x03000000u, "big-endian");
    put32("r-version-max", 4, UINT32_MAX, "unsupported GGUF version");

    /* counts far larger than the file */
    put64("r-tensor-count-max", 8, UINT64_MAX, "tensor count 18446744073709551615");
    put64("r-tensor-count-2e32", 8, 1ull << 32, "tensor count");
    put64("r-tensor-count-plus-3", 8, L->n_ti + 3, "at byte");
    put64("r-kv-count-max", 16, UINT64_MAX, "metadata count");
    put64("r-kv-count-2e40", 16, 1ull << 40, "metadata count");
    put64("r-kv-count-plus-1", 16, L->n_kv + 1, "at byte");

    /* string lengths: overflow, past the end, zero */
    put64("r-key-len-max", L->kv[0].at, UINT64_MAX, "metadata key length 18446744073709551615 exceeds");
    put64("r-key-len-file-size", L->kv[0].at, base_n, "metadata key length .* exceeds");
    put64("r-key-len-zero", L->kv[0].at, 0, "empty metadata key|unknown value type");
    const kv_loc *arch = find_kv(L, "general.architecture");
    put64("r-string-len-max", arch->value_at, UINT64_MAX - 2, "metadata value length .* exceeds");
    put64("r-string-len-2e63", arch->value_at, 1ull << 63, "metadata value length .* exceeds");
    const kv_loc *toks = find_kv(L, "tokenizer.ggml.tokens");
    const kv_loc *types = find_kv(L, "tokenizer.ggml.token_type");
    put64("r-array-len-max", toks->value_at + 4, UINT64_MAX, "claims 18446744073709551615 elements");
    put64("r-array-len-2e61", types->value_at + 4, 1ull << 61, "claims .* elements of int32");
    put64("r-array-len-past-end", types->value_at + 4, (base_n - types->value_at) / 4 + 1, "claims .* elements");
    put64("r-array-string-len-max", toks->value_at + 12, UINT64_MAX, "array string length .* exceeds");
    put64("r-array-string-len-past-end", toks->value_at + 12, base_n, "array string length .* exceeds");

    /* value types */
    put32("r-value-type-13", arch->type_at, 13, "unknown value type 13");
    put32("r-value-type-max", arch->type_at, UINT32_MAX, "unknown value type 4294967295");
    put32("r-array-elem-type-13", types->value_at, 13, "unknown element type");
    put32("r-array-nested", types->value_at, NIB_GGUF_ARRAY, "nested arrays");
    /* the array of int32 read as int64: the same bytes, half the elements fit */
    put32("r-array-elem-wider", types->value_at, NIB_GGUF_INT64, "claims|truncated|exceeds|unknown|at byte");
    const kv_loc *abos = find_kv(L, "tokenizer.ggml.add_bos_token");
    put32("r-bool-2", abos->value_at, 0x02020202u, "bool value is neither 0 nor 1");
    const kv_loc *align = find_kv(L, "general.alignment");
    put32("r-alignment-0", align->value_at, 0, "not a power of two");
    put32("r-alignment-24", align->value_at, 24, "not a power of two");
    put32("r-alignment-1", align->value_at, 1, "general.alignment 1 is not a multiple of 8");
    put32("r-alignment-as-int32", align->type_at, NIB_GGUF_INT32, "general.alignment is not a uint32");
    /* a larger alignment: the offsets written for 32 stop being aligned */
    put32("r-alignment-4096", align->value_at, 4096, "data offset [0-9]+ is not a multiple of the alignment 4096");
    const kv_loc *bos = find_kv(L, "tokenizer.ggml.bos_token_id"), *eos = find_kv(L, "tokenizer.ggml.eos_token_id");
    /* a NUL inside a key is legal GGUF (keys are bytes): general.name becomes "general\0name" */
    const kv_loc *gname = find_kv(L, "general.name");
    edited_file("r-key-with-nul", base_n, e_u32, (uintptr_t)(gname->at + 8 + 4) << 32 | 0x006c6172u, "ok", "ok");
    rename_arg dk = {eos->at, bos->at, strlen(bos->key)};
    reader_case("r-duplicate-key", base_n, e_rename, (uintptr_t)&dk, "duplicate metadata key 'tokenizer.ggml.bos_token_id'");

    /* tensors */
    const ti_loc *embd = find_ti(L, "token_embd.weight"), *q0 = find_ti(L, "blk.0.attn_q.weight"),
                 *k0 = find_ti(L, "blk.0.attn_k.weight"), *norm = find_ti(L, "output_norm.weight");
    put64("r-tensor-name-len-max", embd->at, UINT64_MAX, "tensor name length .* exceeds");
    put64("r-tensor-name-len-zero", embd->at, 0, "empty tensor name|at byte");
    put32("r-tensor-type-40", embd->type_at, 40, "unknown type 40");
    put32("r-tensor-type-removed-4", embd->type_at, 4, "unknown type 4");
    put32("r-tensor-type-max", embd->type_at, UINT32_MAX, "unknown type 4294967295");
    put32("r-tensor-dims-0", embd->ndims_at, 0, "has 0 dimensions");
    put32("r-tensor-dims-5", embd->ndims_at, 5, "has 5 dimensions");
    put32("r-tensor-dims-max", embd->ndims_at, UINT32_MAX, "has 4294967295 dimensions");
    put64("r-tensor-dim-negative", embd->dims_at + 8, UINT64_MAX, "negative or too large");
    put64("r-tensor-dim-2e62", embd->dims_at + 8, 1ull << 62, "overflow|runs past the end");
    reader_case("r-tensor-dims-product-overflow", base_n, e_dims_2e40, embd->dims_at, "dimensions overflow");
    put64("r-tensor-partial-block", embd->dims_at, 63, "row length 63 is not a multiple of Q8_0's block of 32");
    /* a tensor of no elements is legal GGUF; the model cannot use it */
    patch64 zero = {norm->dims_at, 0};
    edited_file("r-tensor-zero-elements", base_n, e_u64, (uintptr_t)&zero, "ok",
                "fail:output_norm.weight' has shape 0 x 1 x 1 x 1, expected 64");
    uint64_t q0_off = rd64(base, q0->offset_at), k0_off = rd64(base, k0->offset_at);
    put64("r-offset-misaligned", q0->offset_at, q0_off + 1, "not a multiple of the alignment");
    put64("r-offset-past-end", q0->offset_at, 1ull << 40, "runs past the end");
    put64("r-offset-wraps", q0->offset_at, UINT64_MAX - 31, "runs past the end");
    put64("r-offset-at-end", q0->offset_at, (base_n - L->data_start + 31) / 32 * 32, "runs past the end");
    put64("r-offset-overlap", k0->offset_at, q0_off, "overlaps");
    put64("r-offset-overlap-partial", k0->offset_at, k0_off - 32, "overlaps");
    rename_arg dt = {k0->at, q0->at, strlen(q0->name)};
    reader_case("r-duplicate-tensor", base_n, e_rename, (uintptr_t)&dt, "duplicate tensor name 'blk.0.attn_q.weight'");
}

/* ---- model cases: the model written again with one thing changed ----------------------- */

static void model_case(const char *name, const tiny_model *t, const char *inspect, const char *run) {
    char path[1024], file[160];
    snprintf(file, sizeof file, "%s.gguf", name);
    path_of(path, sizeof path, file);
    nib_error err = {0};
    if (tiny_write(t, path, &err) != NIB_OK) {
        fprintf(stderr, "gen_hostile: %s: %s\n", name, err.msg);
        n_failed++;
        return;
    }
    n_written++;
    expect(file, inspect, run);
}

/* Key replacements (after the key itself is left out). */
static void x_arch_u32(nib_gguf_writer *w) { nib_gguf_writer_add_u32(w, "general.architecture", 1, NULL); }
static void x_blocks_str(nib_gguf_writer *w) { nib_gguf_writer_add_str(w, "llama.block_count", "2", NULL); }
static void x_blocks_f32(nib_gguf_writer *w) { nib_gguf_writer_add_f32(w, "llama.block_count", 2.0f, NULL); }
static void x_blocks_i32_neg(nib_gguf_writer *w) { nib_gguf_writer_add_i32(w, "llama.block_count", -2, NULL); }
static void x_blocks_u64_huge(nib_gguf_writer *w) { nib_gguf_writer_add_u64(w, "llama.block_count", 1ull << 40, NULL); }
static void x_blocks_array(nib_gguf_writer *w) {
    uint32_t v[2] = {2, 2};
    nib_gguf_writer_add_array(w, "llama.block_count", NIB_GGUF_UINT32, v, 2, NULL);
}
static void x_ctx_f32(nib_gguf_writer *w) { nib_gguf_writer_add_f32(w, "llama.context_length", 64.0f, NULL); }
static void x_eps_u32(nib_gguf_writer *w) { nib_gguf_writer_add_u32(w, "llama.attention.layer_norm_rms_epsilon", 0, NULL); }
static void x_key_length_32(nib_gguf_writer *w) { nib_gguf_writer_add_u32(w, "llama.attention.key_length", 32, NULL); }
static void x_value_length_0(nib_gguf_writer *w) { nib_gguf_writer_add_u32(w, "llama.attention.value_length", 0, NULL); }
static void x_bos_str(nib_gguf_writer *w) { nib_gguf_writer_add_str(w, "tokenizer.ggml.bos_token_id", "1", NULL); }
static void x_bos_neg(nib_gguf_writer *w) { nib_gguf_writer_add_i32(w, "tokenizer.ggml.bos_token_id", -1, NULL); }
static void x_eot_huge(nib_gguf_writer *w) { nib_gguf_writer_add_u64(w, "tokenizer.ggml.eot_token_id", 1ull << 40, NULL); }
static void x_pad_300(nib_gguf_writer *w) { nib_gguf_writer_add_u32(w, "tokenizer.ggml.padding_token_id", 300, NULL); }
static void x_model_bert(nib_gguf_writer *w) { nib_gguf_writer_add_str(w, "tokenizer.ggml.model", "bert", NULL); }
static void x_model_u32(nib_gguf_writer *w) { nib_gguf_writer_add_u32(w, "tokenizer.ggml.model", 2, NULL); }
static void x_pre_unknown(nib_gguf_writer *w) { nib_gguf_writer_add_str(w, "tokenizer.ggml.pre", "no-such-pre", NULL); }
static void x_tokens_i32(nib_gguf_writer *w) {
    static int32_t v[TINY_N_VOCAB];
    nib_gguf_writer_add_array(w, "tokenizer.ggml.tokens", NIB_GGUF_INT32, v, TINY_N_VOCAB, NULL);
}
static void x_types_bad(nib_gguf_writer *w) {
    int32_t v[TINY_N_VOCAB];
    for (int i = 0; i < TINY_N_VOCAB; i++) v[i] = 1;
    v[7] = 9;
    nib_gguf_writer_add_array(w, "tokenizer.ggml.token_type", NIB_GGUF_INT32, v, TINY_N_VOCAB, NULL);
}
static void x_types_f32(nib_gguf_writer *w) {
    static float v[TINY_N_VOCAB];
    nib_gguf_writer_add_array(w, "tokenizer.ggml.token_type", NIB_GGUF_FLOAT32, v, TINY_N_VOCAB, NULL);
}
static void x_types_byte_misnamed(nib_gguf_writer *w) {
    int32_t v[TINY_N_VOCAB];
    for (int i = 0; i < TINY_N_VOCAB; i++) v[i] = 1;
    v[65] = 6;  /* "A" (BPE) marked as a byte token */
    nib_gguf_writer_add_array(w, "tokenizer.ggml.token_type", NIB_GGUF_INT32, v, TINY_N_VOCAB, NULL);
}
static void x_scores_str(nib_gguf_writer *w) { nib_gguf_writer_add_str(w, "tokenizer.ggml.scores", "0", NULL); }
static void x_merges_bad(nib_gguf_writer *w) {
    const char *m[3] = {"h e", "zz top", "l l"};
    nib_gguf_writer_add_str_array(w, "tokenizer.ggml.merges", m, 3, NULL);
}
static void x_merges_nospace(nib_gguf_writer *w) {
    const char *m[2] = {"h e", "ll"};
    nib_gguf_writer_add_str_array(w, "tokenizer.ggml.merges", m, 2, NULL);
}
static void x_tokens_dup(nib_gguf_writer *w) {
    tiny_vocab *v = calloc(1, sizeof *v);
    if (!v) return;
    tiny_vocab_build(v, false, 0);
    v->tokens[200] = v->tokens[100];
    nib_gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", v->tokens, TINY_N_VOCAB, NULL);
    free(v);
}
static void x_tokens_empty(nib_gguf_writer *w) { nib_gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", NULL, 0, NULL); }
static void x_chat_template_bad(nib_gguf_writer *w) {
    nib_gguf_writer_add_str(w, "tokenizer.chat_template", "{% for m in messages %}{{ m.content ", NULL);
}
/* keys a terminal or a fixed buffer would choke on: escape sequences, 300 bytes */
static void x_odd_keys(nib_gguf_writer *w) {
    nib_gguf_writer_add_str(w, "odd.\x1b[2J\x1b[31mred", "\x1b]0;title\x07 value", NULL);
    char key[301];
    memset(key, 'k', 300);
    key[300] = 0;
    memcpy(key, "odd.long.", 9);
    nib_gguf_writer_add_str(w, key, "the value of a 300-byte key", NULL);
    const char *strs[2] = {"\x1b[1m", "\x01\x02"};
    nib_gguf_writer_add_str_array(w, "odd.escapes", strs, 2, NULL);
}
static void x_rope_yarn(nib_gguf_writer *w) {
    nib_gguf_writer_add_str(w, "llama.rope.scaling.type", "yarn", NULL);
    nib_gguf_writer_add_f32(w, "llama.rope.scaling.factor", 4.0f, NULL);
    nib_gguf_writer_add_u32(w, "llama.rope.scaling.original_context_length", 16, NULL);
}
static void x_rope_yarn_log_mul(nib_gguf_writer *w) {
    x_rope_yarn(w);
    nib_gguf_writer_add_f32(w, "llama.rope.scaling.yarn_log_multiplier", 0.1f, NULL);
}
static void x_rope_yarn_beta_nan(nib_gguf_writer *w) {
    x_rope_yarn(w);
    nib_gguf_writer_add_f32(w, "llama.rope.scaling.yarn_beta_fast", NAN, NULL);
}
static void x_experts(nib_gguf_writer *w) {
    nib_gguf_writer_add_u32(w, "llama.expert_count", 8, NULL);
    nib_gguf_writer_add_u32(w, "llama.expert_used_count", 2, NULL);
}
static void x_experts_qwen2(nib_gguf_writer *w) {
    nib_gguf_writer_add_u32(w, "qwen2.expert_count", 8, NULL);
    nib_gguf_writer_add_u32(w, "qwen2.expert_used_count", 2, NULL);
}
static void x_experts_used_9(nib_gguf_writer *w) {
    nib_gguf_writer_add_u32(w, "llama.expert_count", 8, NULL);
    nib_gguf_writer_add_u32(w, "llama.expert_used_count", 9, NULL);
}
static void x_experts_no_used(nib_gguf_writer *w) { nib_gguf_writer_add_u32(w, "llama.expert_count", 8, NULL); }
static void x_rope_attn_factor(nib_gguf_writer *w) { nib_gguf_writer_add_f32(w, "llama.rope.scaling.attn_factor", 1.2f, NULL); }
static void x_rope_attn_factor_0(nib_gguf_writer *w) { nib_gguf_writer_add_f32(w, "llama.rope.scaling.attn_factor", 0.0f, NULL); }
static void x_rope_longrope(nib_gguf_writer *w) { nib_gguf_writer_add_str(w, "llama.rope.scaling.type", "longrope", NULL); }
static void x_rope_type_u32(nib_gguf_writer *w) { nib_gguf_writer_add_u32(w, "llama.rope.scaling.type", 2, NULL); }
static void x_rope_scaling_linear_neg(nib_gguf_writer *w) {
    nib_gguf_writer_add_str(w, "llama.rope.scaling.type", "linear", NULL);
    nib_gguf_writer_add_f32(w, "llama.rope.scaling.factor", -4.0f, NULL);
}

#define CASE(name, inspect, run, ...)       \
    do {                                    \
        tiny_model t_;                      \
        tiny_defaults(&t_, false);          \
        tiny_model *t = &t_;                \
        __VA_ARGS__;                        \
        model_case(name, t, inspect, run);  \
    } while (0)

#define NAN_WARNING "ok:logits are NaN or infinite"

static void model_cases(void) {
    /* valid files: they must run */
    CASE("m-valid-bpe", "ok", "ok", (void)t);
    CASE("m-valid-spm", "ok", "ok", t->spm = true, t->bos = 1, t->eos = 2);
    CASE("m-valid-untied-align64", "ok", "ok", t->untied = true, t->alignment = 64);
    /* legal but odd: run, and say so where nib can tell */
    CASE("m-odd-unused-tensor", "ok", "ok:ffn_surprise.weight' is not used", t->extra_tensor = true);
    CASE("m-odd-fewer-layers-than-tensors", "ok", "ok:blk.1.attn_q.weight' is not used", t->n_layer = 1);
    /* NaN and inf weights (in float formats: quantizing them is meaningless). Where
     * they reach the float output head, the logits are NaN and nib warns; inside
     * a quantized matmul the activation quantizer turns them into zeros. */
    CASE("m-odd-nan-embedding", "ok", NAN_WARNING, t->odd_tensor = "token_embd.weight", t->odd_type = NIB_TYPE_F16,
         t->poison = NAN);
    CASE("m-odd-inf-ffn-down", "ok", "ok", t->odd_tensor = "blk.0.ffn_down.weight", t->odd_type = NIB_TYPE_F32,
         t->poison = INFINITY);
    CASE("m-odd-nan-norm", "ok", "ok", t->odd_tensor = "output_norm.weight", t->poison = NAN);
    CASE("m-odd-inf-attn-v", "ok", "ok", t->odd_tensor = "blk.1.attn_v.weight", t->poison = -INFINITY);
    /* denormal activations: 1/d of their Q8 block overflows to inf */
    CASE("m-odd-denormal-norm", "ok", "ok", t->odd_tensor = "output_norm.weight", t->poison = 1e-40f);
    CASE("m-odd-nan-output", "ok", NAN_WARNING, t->untied = true, t->odd_tensor = "output.weight", t->poison = NAN);
    CASE("m-odd-bad-chat-template", "ok", "ok", t->skip_key = "tokenizer.chat_template", t->extra = x_chat_template_bad);
    CASE("m-odd-no-tokenizer-pre", "ok", "ok", t->skip_key = "tokenizer.ggml.pre");
    /* pieces longer than any fixed buffer (the CLI once printed from a 256-byte one) */
    CASE("m-odd-long-tokens", "ok", "ok", t->spm = true, t->bos = 1, t->eos = 2, t->long_tokens = 700);
    CASE("m-odd-keys", "ok", "ok", t->extra = x_odd_keys);
    CASE("m-odd-q8-1-matrix", "ok", "ok", t->odd_tensor = "blk.0.ffn_up.weight", t->odd_type = NIB_TYPE_Q8_1);
    /* runs when given a context size (test_hostile.sh checks the message without one) */
    CASE("m-context-length-0", "ok", "ok", t->n_ctx = 0);
    /* longer than the default's cap of 4096: -c 0 takes all of it (test_hostile.sh) */
    CASE("m-context-length-8192", "ok", "ok", t->n_ctx = 8192);

    /* the architecture */
    CASE("m-arch-missing", "ok", "fail:general.architecture", t->skip_key = "general.architecture");
    CASE("m-arch-unknown", "ok", "fail:architecture 'gptj' is not supported", t->arch = "gptj");
    CASE("m-arch-empty", "ok", "fail:architecture '' is not supported", t->arch = "");
    CASE("m-arch-as-u32", "ok", "fail:general.architecture", t->skip_key = "general.architecture", t->extra = x_arch_u32);
    CASE("m-arch-gemma3-without-its-tensors", "ok", "fail:attn_q_norm.weight' is missing", t->arch = "gemma3");
    CASE("m-arch-qwen2-without-biases", "ok", "fail:attn_q.bias' is missing", t->arch = "qwen2");

    /* required keys missing or of the wrong type */
    CASE("m-block-count-missing", "ok", "fail:llama.block_count", t->skip_key = "llama.block_count");
    CASE("m-block-count-as-string", "ok", "fail:llama.block_count.*string", t->skip_key = "llama.block_count",
         t->extra = x_blocks_str);
    CASE("m-block-count-as-f32", "ok", "fail:llama.block_count.*float32", t->skip_key = "llama.block_count",
         t->extra = x_blocks_f32);
    CASE("m-block-count-as-array", "ok", "fail:llama.block_count.*array", t->skip_key = "llama.block_count",
         t->extra = x_blocks_array);
    CASE("m-block-count-negative", "ok", "fail:llama.block_count' = -2 is out of range",
         t->skip_key = "llama.block_count", t->extra = x_blocks_i32_neg);
    CASE("m-block-count-2e40", "ok", "fail:llama.block_count' = 1099511627776 is out of range",
         t->skip_key = "llama.block_count", t->extra = x_blocks_u64_huge);
    CASE("m-block-count-0", "ok", "fail:block_count = 0 is out of range", t->n_layer = 0);
    CASE("m-block-count-max", "ok", "fail:block_count.* is out of range", t->n_layer = UINT32_MAX);
    CASE("m-block-count-more-than-tensors", "ok", "fail:blk.2.attn_norm.weight' is missing", t->n_layer = 3);
    CASE("m-block-count-1000", "ok", "fail:blk.2.attn_norm.weight' is missing", t->n_layer = 1000);
    CASE("m-embedding-length-missing", "ok", "fail:llama.embedding_length", t->skip_key = "llama.embedding_length");
    CASE("m-feed-forward-length-missing", "ok", "fail:llama.feed_forward_length",
         t->skip_key = "llama.feed_forward_length");
    CASE("m-head-count-missing", "ok", "fail:llama.attention.head_count", t->skip_key = "llama.attention.head_count");
    CASE("m-epsilon-missing", "ok", "fail:layer_norm_rms_epsilon", t->skip_key = "llama.attention.layer_norm_rms_epsilon");
    CASE("m-epsilon-as-u32", "ok", "fail:layer_norm_rms_epsilon.*uint32",
         t->skip_key = "llama.attention.layer_norm_rms_epsilon", t->extra = x_eps_u32);
    CASE("m-context-length-as-f32", "ok", "fail:llama.context_length.*float32", t->skip_key = "llama.context_length",
         t->extra = x_ctx_f32);

    /* hyperparameters contradicting each other or the tensors */
    CASE("m-embedding-length-0", "ok", "fail:must be positive", t->n_embd = 0);
    CASE("m-embedding-length-65", "ok", "fail:head size 0/0 is invalid \\(embedding 65 does not divide by 4 heads",
         t->n_embd = 65);
    CASE("m-embedding-length-128", "ok", "fail:token_embd.weight' has shape 64 x 300 x 1 x 1, expected 128 x 300",
         t->n_embd = 128);
    CASE("m-embedding-length-huge", "ok", "fail:has shape|head size|out of range", t->n_embd = 0x7fffffff);
    CASE("m-feed-forward-length-255", "ok", "fail:ffn_gate.weight' has shape", t->n_ff = 255);
    CASE("m-feed-forward-length-0", "ok", "fail:must be positive", t->n_ff = 0);
    CASE("m-head-count-0", "ok", "fail:must be positive", t->n_head = 0);
    CASE("m-head-count-kv-0", "ok", "fail:must be positive", t->n_head_kv = 0);
    CASE("m-head-count-kv-3", "ok", "fail:head_count \\(4\\) is not a multiple of head_count_kv \\(3\\)", t->n_head_kv = 3);
    CASE("m-head-count-kv-above-heads", "ok", "fail:is not a multiple of head_count_kv", t->n_head_kv = 8);
    CASE("m-head-count-not-dividing-embedding", "ok", "fail:embedding 64 does not divide by 6 heads",
         t->n_head = 6, t->n_head_kv = 2);
    CASE("m-head-count-8-shapes-disagree", "ok", "fail:attn_k.weight' has shape", t->n_head = 8, t->n_rot = 8);
    CASE("m-key-length-disagrees", "ok", "fail:attn_q.weight' has shape", t->extra = x_key_length_32, t->n_rot = 32);
    CASE("m-value-length-0", "ok", "fail:head size", t->extra = x_value_length_0);
    CASE("m-rope-dims-odd", "ok", "fail:rope.dimension_count = 17", t->n_rot = 17);
    CASE("m-rope-dims-too-many", "ok", "fail:rope.dimension_count = 64 does not fit head size 16", t->n_rot = 64);
    CASE("m-epsilon-nan", "ok", "fail:layer_norm_rms_epsilon' is not a finite number", t->eps = NAN);
    CASE("m-epsilon-negative", "ok", "fail:layer_norm_rms_epsilon = -1 is out of range", t->eps = -1.0f);
    CASE("m-epsilon-inf", "ok", "fail:layer_norm_rms_epsilon' is not a finite number", t->eps = INFINITY);
    CASE("m-rope-base-negative", "ok", "fail:rope.freq_base must be positive", t->rope_base = -1.0f);
    CASE("m-rope-base-nan", "ok", "fail:rope.freq_base' is not a finite number", t->rope_base = NAN);
    CASE("m-rope-scale-negative", "ok", "fail:rope.scaling.factor = -4 must not be negative",
         t->extra = x_rope_scaling_linear_neg);
    /* YaRN runs; what nib does not compute is refused by name, never run as plain RoPE */
    CASE("m-rope-yarn", "ok", "ok", t->extra = x_rope_yarn);
    CASE("m-rope-yarn-partial", "ok", "ok", t->n_rot = 8, t->extra = x_rope_yarn);
    CASE("m-rope-yarn-log-multiplier", "ok", "fail:yarn_log_multiplier = 0.1: that YaRN variant", t->extra = x_rope_yarn_log_mul);
    CASE("m-rope-yarn-beta-nan", "ok", "fail:yarn_beta_fast' is not a finite number", t->extra = x_rope_yarn_beta_nan);
    CASE("m-rope-longrope", "ok", "fail:rope.scaling.type = 'longrope' is not supported \\(nib reads none, linear and yarn\\)",
         t->extra = x_rope_longrope);
    CASE("m-rope-type-u32", "ok", "fail:rope.scaling.type", t->extra = x_rope_type_u32);
    CASE("m-rope-attn-factor", "ok", "ok", t->extra = x_rope_attn_factor);
    CASE("m-rope-attn-factor-partial", "ok", "ok", t->n_rot = 8, t->extra = x_rope_attn_factor);
    CASE("m-rope-attn-factor-0", "ok", "fail:rope.scaling.attn_factor = 0 is out of range", t->extra = x_rope_attn_factor_0);
    /* experts said but not there; experts where nib runs none; counts that contradict */
    CASE("m-experts-missing", "ok", "fail:tensor 'blk.0.ffn_gate_inp.weight' is missing", t->extra = x_experts);
    CASE("m-experts-qwen2", "ok", "fail:qwen2.expert_count = 8: nib runs experts in llama \\(Mixtral\\), qwen3moe, olmoe, granitemoe and gpt-oss",
         t->arch = "qwen2", t->extra = x_experts_qwen2);
    CASE("m-experts-used-9", "ok", "fail:8 experts \\(at most 512\\), 9 used a token", t->extra = x_experts_used_9);
    CASE("m-experts-no-used", "ok", "fail:llama.expert_used_count", t->extra = x_experts_no_used);

    /* tensors missing, misshapen, of the wrong type */
    CASE("m-tensor-embedding-missing", "ok", "fail:token_embd.weight' is missing", t->skip_tensor = "token_embd.weight");
    CASE("m-tensor-output-norm-missing", "ok", "fail:output_norm.weight' is missing", t->skip_tensor = "output_norm.weight");
    CASE("m-tensor-ffn-down-missing", "ok", "fail:blk.1.ffn_down.weight' is missing", t->skip_tensor = "blk.1.ffn_down.weight");
    CASE("m-tensor-ffn-up-transposed", "ok", "fail:ffn_up.weight' has shape 256 x 64", t->odd_tensor = "blk.0.ffn_up.weight",
         t->odd_ne0 = 256, t->odd_ne1 = 64, t->odd_type = NIB_TYPE_F16);
    CASE("m-tensor-output-wrong-shape", "ok", "fail:output.weight' has shape 64 x 299", t->untied = true,
         t->odd_tensor = "output.weight", t->odd_ne0 = 64, t->odd_ne1 = 299);
    CASE("m-tensor-embedding-1d", "ok", "fail:token_embd.weight", t->odd_tensor = "token_embd.weight", t->odd_ne0 = 64,
         t->odd_ne1 = -1, t->odd_type = NIB_TYPE_F32);
    CASE("m-tensor-norm-f16", "ok", "fail:attn_norm.weight' is F16; vectors must be F32",
         t->odd_tensor = "blk.0.attn_norm.weight", t->odd_type = NIB_TYPE_F16);
    CASE("m-tensor-norm-2d", "ok", "fail:ffn_norm.weight' has shape 64 x 2", t->odd_tensor = "blk.1.ffn_norm.weight",
         t->odd_ne0 = 64, t->odd_ne1 = 2);
    CASE("m-tensor-matrix-i32", "ok", "fail:attn_q.weight' has type I32, which nib cannot compute with",
         t->odd_tensor = "blk.0.attn_q.weight", t->odd_type = NIB_TYPE_I32);
    CASE("m-tensor-matrix-f64", "ok", "fail:attn_k.weight' has type F64", t->odd_tensor = "blk.1.attn_k.weight",
         t->odd_type = NIB_TYPE_F64);

    /* the vocabulary */
    CASE("m-vocab-smaller-than-embedding", "ok", "fail:the vocabulary has 299 tokens but token_embd.weight has 300 rows",
         t->n_tokens = 299);
    CASE("m-vocab-larger-than-embedding", "ok", "fail:the vocabulary has 300 tokens but token_embd.weight has 299 rows",
         t->t_vocab = 299);
    CASE("m-vocab-tokens-missing", "ok", "fail:tokenizer.ggml.tokens", t->skip_key = "tokenizer.ggml.tokens");
    CASE("m-vocab-tokens-empty", "ok", "fail:the vocabulary has 0 tokens but token_embd.weight has 300 rows",
         t->skip_key = "tokenizer.ggml.tokens", t->extra = x_tokens_empty);
    CASE("m-vocab-tokens-int32", "ok", "fail:tokenizer.ggml.tokens", t->skip_key = "tokenizer.ggml.tokens",
         t->extra = x_tokens_i32);
    CASE("m-vocab-tokens-duplicate", "ok", "fail:tokenizer.ggml.tokens\\[200\\] repeats the text of token 100",
         t->skip_key = "tokenizer.ggml.tokens", t->extra = x_tokens_dup);
    CASE("m-vocab-model-missing", "ok", "fail:tokenizer.ggml.model", t->skip_key = "tokenizer.ggml.model");
    CASE("m-vocab-model-bert", "ok", "fail:tokenizer.ggml.model 'bert' is not supported",
         t->skip_key = "tokenizer.ggml.model", t->extra = x_model_bert);
    CASE("m-vocab-model-u32", "ok", "fail:tokenizer.ggml.model", t->skip_key = "tokenizer.ggml.model", t->extra = x_model_u32);
    CASE("m-vocab-pre-unknown", "ok", "fail:tokenizer.ggml.pre 'no-such-pre'", t->skip_key = "tokenizer.ggml.pre",
         t->extra = x_pre_unknown);
    CASE("m-vocab-scores-short", "ok", "fail:tokenizer.ggml.scores has 299 entries for 300 tokens", t->spm = true,
         t->bos = 1, t->eos = 2, t->n_scores = 299);
    CASE("m-vocab-scores-string", "ok", "fail:tokenizer.ggml.scores must be an array", t->spm = true, t->bos = 1, t->eos = 2,
         t->skip_key = "tokenizer.ggml.scores", t->extra = x_scores_str);
    CASE("m-vocab-types-short", "ok", "fail:tokenizer.ggml.token_type has 12 entries for 300 tokens", t->n_types = 12);
    CASE("m-vocab-types-empty", "ok", "fail:tokenizer.ggml.token_type has 0 entries", t->n_types = 0);
    CASE("m-vocab-types-out-of-range", "ok", "fail:tokenizer.ggml.token_type\\[7\\] = 9 is not a token type",
         t->skip_key = "tokenizer.ggml.token_type", t->extra = x_types_bad);
    CASE("m-vocab-types-float", "ok", "fail:tokenizer.ggml.token_type", t->skip_key = "tokenizer.ggml.token_type",
         t->extra = x_types_f32);
    CASE("m-vocab-byte-token-misnamed", "ok", "fail:tokenizer.ggml.tokens\\[65\\] is a byte token",
         t->skip_key = "tokenizer.ggml.token_type", t->extra = x_types_byte_misnamed);
    CASE("m-vocab-merges-missing", "ok", "fail:needs tokenizer.ggml.merges", t->skip_key = "tokenizer.ggml.merges");
    CASE("m-vocab-merge-unknown-text", "ok", "fail:tokenizer.ggml.merges\\[1\\] 'zz top' names a text that is not a token",
         t->skip_key = "tokenizer.ggml.merges", t->extra = x_merges_bad);
    CASE("m-vocab-merge-no-space", "ok", "fail:tokenizer.ggml.merges\\[1\\] 'll' is not two texts",
         t->skip_key = "tokenizer.ggml.merges", t->extra = x_merges_nospace);

    /* special-token ids */
    CASE("m-special-bos-300", "ok", "fail:bos_token_id = 300 is outside the vocabulary \\(300 tokens\\)", t->bos = 300);
    CASE("m-special-eos-max", "ok", "fail:eos_token_id = 4294967295 is outside the vocabulary", t->eos = UINT32_MAX);
    CASE("m-special-bos-negative", "ok", "fail:bos_token_id = -1 is outside the vocabulary", t->bos = -1,
         t->extra = x_bos_neg);
    CASE("m-special-bos-string", "ok", "fail:tokenizer.ggml.bos_token_id", t->bos = -1, t->extra = x_bos_str);
    CASE("m-special-eot-2e40", "ok", "fail:eot_token_id = 1099511627776 is outside", t->extra = x_eot_huge);
    CASE("m-special-pad-300", "ok", "fail:padding_token_id = 300 is outside", t->extra = x_pad_300);
}

/* ---- split models: NAME-0000k-of-0000n.gguf, opened from the first ---------------------- */

static void x_split_count_str(nib_gguf_writer *w) { nib_gguf_writer_add_str(w, "split.count", "3", NULL); }

/* Writes t as 3 splits under NAME, then lets `after` break the set (delete,
 * truncate or rename a file); the manifest lists split `listed`'s file (or
 * `listed_as` when after renamed it). */
static void split_case(const char *name, tiny_model *t, int listed, const char *listed_as,
                       void (*after)(const char *prefix), const char *inspect, const char *run) {
    char prefix[1024], file[200];
    path_of(prefix, sizeof prefix, name);
    t->n_split = 3;
    nib_error err = {0};
    if (tiny_write(t, prefix, &err) != NIB_OK) {
        fprintf(stderr, "gen_hostile: %s: %s\n", name, err.msg);
        n_failed++;
        return;
    }
    if (after) after(prefix);
    n_written++;
    if (listed_as) snprintf(file, sizeof file, "%s", listed_as);
    else snprintf(file, sizeof file, "%s-%05d-of-00003.gguf", name, listed);
    expect(file, inspect, run);
}

static void split_path(char *buf, size_t n, const char *prefix, int k) { snprintf(buf, n, "%s-%05d-of-00003.gguf", prefix, k); }
static void a_drop_third(const char *prefix) {
    char p[1100];
    split_path(p, sizeof p, prefix, 3);
    remove(p);
}
static void a_truncate_second(const char *prefix) {
    char p[1100];
    split_path(p, sizeof p, prefix, 2);
    size_t n;
    uint8_t *b = read_all(p, &n);
    FILE *f = b ? fopen(p, "wb") : NULL;
    if (f) fwrite(b, 1, n / 2, f), fclose(f);
    free(b);
}
static void a_rename_first(const char *prefix) {
    char p[1100], q[1100];
    split_path(p, sizeof p, prefix, 1);
    snprintf(q, sizeof q, "%s.gguf", prefix);
    rename(p, q);
}

#define SPLIT(name, listed, listed_as, after, inspect_run, ...) \
    do {                                                        \
        tiny_model t_;                                          \
        tiny_defaults(&t_, false);                              \
        tiny_model *t = &t_;                                    \
        __VA_ARGS__;                                            \
        split_case(name, t, listed, listed_as, after, inspect_run, inspect_run); \
    } while (0)

static void split_cases(void) {
    SPLIT("s-valid", 1, NULL, NULL, "ok", (void)t);
    SPLIT("s-second", 2, NULL, NULL,
          "fail:s-second-00002-of-00003.gguf is split 2 of 3 of a model; open the first: .*s-second-00001-of-00003.gguf",
          (void)t);
    SPLIT("s-missing-third", 1, NULL, a_drop_third, "fail:split 3 of 3: .*s-missing-third-00003-of-00003.gguf: cannot open",
          (void)t);
    SPLIT("s-truncated-second", 1, NULL, a_truncate_second, "fail:split 2 of 3: .*s-truncated-second-00002-of-00003.gguf: ",
          (void)t);
    SPLIT("s-renamed", 0, "s-renamed.gguf", a_rename_first,
          "fail:is split 1 of 3 of a model, but its name does not end in -00001-of-00003.gguf", (void)t);
    SPLIT("s-no-wrong", 1, NULL, NULL, "fail:the file says it is split 3, but its name makes it split 2 of 3",
          t->split_odd = 1, t->split_odd_no = 2);
    SPLIT("s-no-missing", 1, NULL, NULL, "fail:split 2 of 3 has no split.no key", t->split_odd = 1, t->split_odd_no = -1);
    SPLIT("s-count-differs", 1, NULL, NULL, "fail:s-count-differs-00003-of-00003.gguf: split.count is 4, the first file.s is 3",
          t->split_odd = 2, t->split_odd_count = 4);
    SPLIT("s-count-huge", 1, NULL, NULL, "fail:split.count = 70000 is out of range \\[1, 65535\\]", t->split_odd_count = 70000);
    SPLIT("s-count-string", 1, NULL, NULL, "fail:split.count", t->split_odd_count = -1, t->extra = x_split_count_str);
    SPLIT("s-tensors-count", 1, NULL, NULL, "fail:split.tensors.count says 5 tensors, the 3 splits hold [0-9]+",
          t->split_odd_tensors = 5);
    SPLIT("s-duplicate", 1, NULL, NULL,
          "fail:tensor 'blk.0.attn_q.weight' is in both .*s-duplicate-0000[12]-of-00003.gguf and .*s-duplicate-00003-of",
          t->split_dup = "blk.0.attn_q.weight");
}

/* ---- seeds for the fuzz harnesses ---------------------------------------------------- */

static bool mkdir_p(const char *path) { return mkdir(path, 0755) == 0 || errno == EEXIST; }

static void seed_model(const char *sub, const char *name, const tiny_model *t) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", out_dir, sub, name);
    nib_error err = {0};
    if (tiny_write(t, path, &err) != NIB_OK) {
        fprintf(stderr, "gen_hostile: seed %s: %s\n", path, err.msg);
        n_failed++;
    } else {
        n_written++;
    }
}

/* Every value type, arrays of each, a string array, tensors of several types and ranks. */
static void seed_kitchen_sink(const char *path) {
    nib_error err;
    nib_gguf_writer *w = nib_gguf_writer_new();
    if (!w) return;
    nib_gguf_writer_add_str(w, "general.architecture", "llama", &err);
    nib_gguf_writer_set_alignment(w, 64, &err);
    nib_gguf_writer_add_u32(w, "llama.block_count", 1, &err);
    nib_gguf_writer_add_i32(w, "k.i32", -5, &err);
    nib_gguf_writer_add_u64(w, "k.u64", 1ull << 40, &err);
    nib_gguf_writer_add_f32(w, "k.f32", 0.5f, &err);
    nib_gguf_writer_add_bool(w, "k.bool", true, &err);
    nib_gguf_writer_add_str(w, "k.str", "", &err);
    static const uint8_t u8[3] = {1, 2, 3};
    static const int16_t i16[2] = {-1, 1};
    static const double f64[2] = {1.5, -2.5};
    static const int64_t i64[1] = {-7};
    static const uint8_t bools[2] = {0, 1};
    nib_gguf_writer_add_array(w, "a.u8", NIB_GGUF_UINT8, u8, 3, &err);
    nib_gguf_writer_add_array(w, "a.i16", NIB_GGUF_INT16, i16, 2, &err);
    nib_gguf_writer_add_array(w, "a.f64", NIB_GGUF_FLOAT64, f64, 2, &err);
    nib_gguf_writer_add_array(w, "a.i64", NIB_GGUF_INT64, i64, 1, &err);
    nib_gguf_writer_add_array(w, "a.bool", NIB_GGUF_BOOL, bools, 2, &err);
    nib_gguf_writer_add_array(w, "a.empty", NIB_GGUF_FLOAT32, NULL, 0, &err);
    const char *strs[3] = {"a", "", "\xc3\xa9t\xc3\xa9"};
    nib_gguf_writer_add_str_array(w, "a.str", strs, 3, &err);
    static float f32[2 * 3 * 4];
    static uint8_t q4[2 * 18];
    static uint16_t f16[5];
    static int32_t i32[3];
    static uint8_t q4k[144];
    int64_t ne3[3] = {2, 3, 4}, neq[2] = {32, 2}, ne1[1] = {5}, nei[1] = {3}, nek[1] = {256};
    nib_gguf_writer_add_tensor(w, "t.f32", NIB_TYPE_F32, 3, ne3, f32, &err);
    nib_gguf_writer_add_tensor(w, "t.q4_0", NIB_TYPE_Q4_0, 2, neq, q4, &err);
    nib_gguf_writer_add_tensor(w, "t.f16", NIB_TYPE_F16, 1, ne1, f16, &err);
    nib_gguf_writer_add_tensor(w, "t.i32", NIB_TYPE_I32, 1, nei, i32, &err);
    nib_gguf_writer_add_tensor(w, "t.q4_k", NIB_TYPE_Q4_K, 1, nek, q4k, &err);
    if (nib_gguf_writer_write(w, path, &err) != NIB_OK) fprintf(stderr, "gen_hostile: %s: %s\n", path, err.msg), n_failed++;
    else n_written++;
    nib_gguf_writer_free(w);
}

/* Tokenizer seeds: a selector byte (the harness's vocabulary and flags), then the text. */
static const char *const tok_texts[] = {
    "Hello world", " hello  the world", "the\n\nworld\t\tand", "<|im_start|>user\nhi<|im_end|>",
    "<s>a</s><unk>", "caf\xc3\xa9 \xe2\x82\xac 1234567 3.14", "\xf0\x9f\xa6\x9c\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9",
    "\xff\xfe invalid \xc3 utf8 \xe2\x82", "\xed\xa0\x80 surrogate \xc0\xaf overlong", "'s 're 've 'll 'd I'M",
    "    leading spaces", "trailing\n\n\n", "\xe4\xb8\x96\xe7\x95\x8c\xe4\xbd\xa0\xe5\xa5\xbd", "a\0b", "",
    "<|endoftext|><|endoftext|>", "\xe2\x96\x81the \xe2\x96\x81", "<0x41><0xFF>",
};

static void seed_tokenizer(void) {
    size_t n_texts = sizeof tok_texts / sizeof tok_texts[0];
    for (size_t i = 0; i < n_texts; i++) {
        size_t len = strlen(tok_texts[i]);
        if (i == 13) len = 3;  /* "a\0b": an embedded NUL */
        for (int sel = 0; sel < 8; sel++) {
            uint8_t buf[256];
            buf[0] = (uint8_t)(sel * 9 + (int)i * 32);  /* spread over vocabularies and flag bits */
            memcpy(buf + 1, tok_texts[i], len);
            char name[64];
            snprintf(name, sizeof name, "tokenizer/t%02zu-%d", i, sel);
            write_bytes(name, buf, len + 1);
        }
    }
}

/* Chat seeds: flags byte, template, NUL, then messages separated by \x01, each
 * a role byte and its content. */
static void seed_chat_one(const char *name, const char *tmpl, size_t tlen) {
    static const char msgs[] = "\x01" "\x00You are terse.\x01\x01Hello!\x01\x02Hi there.\x01\x01What is 2+2?";
    size_t n = 1 + tlen + 1 + sizeof msgs - 1;
    uint8_t *b = malloc(n);
    if (!b) return;
    b[0] = 0x0c;  /* 4 messages, add_generation_prompt */
    memcpy(b + 1, tmpl, tlen);
    b[1 + tlen] = 0;
    memcpy(b + 2 + tlen, msgs, sizeof msgs - 1);
    write_bytes(name, b, n);
    free(b);
}

static void seed_chat(const char *chat_dir) {
    seed_chat_one("chat/tiny-chatml", tiny_chat_template, strlen(tiny_chat_template));
    static const char *const small[] = {
        "{{ bos_token }}{% for m in messages %}{{ m.role | upper }}: {{ m.content | trim }}\n{% endfor %}",
        "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}",
        "{% if messages[0]['role'] == 'system' %}{{ raise_exception('no system') }}{% endif %}{{ messages | length }}",
        "{{ strftime_now('%Y-%m-%d') }}{% for i in range(3) %}{{ loop.index }}{{ ',' if not loop.last }}{% endfor %}",
        "{%- macro f(x) -%}[{{ x }}]{%- endmacro -%}{% for m in messages %}{{ f(m.content[1:4]) }}{% endfor %}",
        "{{ messages | tojson }}{{ {'a': [1, 2.5, none, true]} | tojson(indent=2) }}",
        "{% for m in messages if m.role != 'system' %}{{ m.content.split(' ') | join('|') }}{% else %}none{% endfor %}",
    };
    char name[64];
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
        snprintf(name, sizeof name, "chat/small-%zu", i);
        seed_chat_one(name, small[i], strlen(small[i]));
    }
    DIR *d = chat_dir ? opendir(chat_dir) : NULL;
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 7 || strcmp(e->d_name + len - 6, ".jinja")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", chat_dir, e->d_name);
        size_t n;
        uint8_t *t = read_all(path, &n);
        if (!t) continue;
        snprintf(name, sizeof name, "chat/%.50s", e->d_name);
        seed_chat_one(name, (const char *)t, n);
        free(t);
    }
    closedir(d);
}

static int gen_seeds(const char *chat_dir) {
    static const char *const subs[] = {"gguf", "model", "tokenizer", "chat"};
    for (size_t i = 0; i < 4; i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", out_dir, subs[i]);
        if (!mkdir_p(p)) return fprintf(stderr, "gen_hostile: cannot make %s\n", p), 1;
    }
    tiny_model t;
    /* small models for the model harness: one layer, a narrow embedding, few tensors */
    tiny_defaults(&t, false);
    t.n_layer = t.t_layers = 1, t.n_embd = t.t_embd = 32, t.n_head = t.t_head = 2, t.n_head_kv = t.t_head_kv = 1;
    seed_model("model", "micro-bpe.gguf", &t);
    seed_model("gguf", "micro-bpe.gguf", &t);
    tiny_defaults(&t, true);
    t.n_layer = t.t_layers = 1, t.n_embd = t.t_embd = 32, t.n_head = t.t_head = 2, t.n_head_kv = t.t_head_kv = 1;
    seed_model("model", "micro-spm.gguf", &t);
    tiny_defaults(&t, false);
    seed_model("model", "tiny-bpe.gguf", &t);
    char path[1024];
    snprintf(path, sizeof path, "%s/gguf/kitchen-sink.gguf", out_dir);
    seed_kitchen_sink(path);
    seed_tokenizer();
    seed_chat(chat_dir);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3 || (strcmp(argv[1], "corpus") && strcmp(argv[1], "seeds"))) {
        fprintf(stderr, "usage: gen_hostile corpus DIR | gen_hostile seeds DIR [CHAT_TEMPLATE_DIR]\n");
        return 2;
    }
    snprintf(out_dir, sizeof out_dir, "%s", argv[2]);
    if (!mkdir_p(out_dir)) return fprintf(stderr, "gen_hostile: cannot make %s: %s\n", out_dir, strerror(errno)), 1;
    if (!strcmp(argv[1], "seeds")) {
        int rc = gen_seeds(argc > 3 ? argv[3] : NULL);
        printf("gen_hostile: %d seed files in %s\n", n_written, out_dir);
        return rc || n_failed;
    }

    char path[1024];
    path_of(path, sizeof path, "manifest.tsv");
    manifest = fopen(path, "w");
    if (!manifest) return fprintf(stderr, "gen_hostile: cannot write %s\n", path), 1;

    /* the base of the reader cases: valid, with an alignment key and a bool to break */
    tiny_model t;
    tiny_defaults(&t, false);
    t.alignment = 32;
    t.add_bos_key = true;
    model_case("r-base-valid", &t, "ok", "ok");
    path_of(path, sizeof path, "r-base-valid.gguf");
    uint8_t *b = read_all(path, &base_n);
    base = b;
    if (!b || !walk(b, base_n, &base_L)) return fprintf(stderr, "gen_hostile: cannot walk %s\n", path), 1;
    reader_cases();
    model_cases();
    split_cases();
    free(b);
    fclose(manifest);
    printf("gen_hostile: %d files in %s\n", n_written, out_dir);
    return n_failed ? 1 : 0;
}
