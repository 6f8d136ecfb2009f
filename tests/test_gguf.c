/* GGUF reader and writer: a written file reads back exactly; broken files
 * get an error naming the problem and the byte offset, never a crash.
 * (Issue-level fuzzing and the full malformed-file corpus come separately;
 * these are the cases every reader must get right.) */
#include <stdlib.h>
#include <unistd.h>

#include "nib.h"
#include "test.h"

static char tmpdir[256];

static void path_in_tmp(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", tmpdir, name); }

static uint8_t *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)sz + 1);
    if (p && fread(p, 1, (size_t)sz, f) != (size_t)sz) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *size = (size_t)sz;
    return p;
}

/* A file with every value type, an array of each, a string array, and tensors
 * of several formats and ranks. */
static float t_f32[3 * 5];
static uint8_t t_q4_0[2 * 4 * 18];
static uint16_t t_f16[7];

static int write_sample(const char *path, uint32_t alignment) {
    nib_error err;
    nib_gguf_writer *w = nib_gguf_writer_new();
    int ok = w != NULL;
    ok = ok && nib_gguf_writer_add_str(w, "general.architecture", "llama", &err) == NIB_OK;
    if (alignment) ok = ok && nib_gguf_writer_set_alignment(w, alignment, &err) == NIB_OK;
    ok = ok && nib_gguf_writer_add_u32(w, "llama.block_count", 30, &err) == NIB_OK;
    ok = ok && nib_gguf_writer_add_i32(w, "test.i32", -123456, &err) == NIB_OK;
    ok = ok && nib_gguf_writer_add_u64(w, "test.u64", 1ull << 40, &err) == NIB_OK;
    ok = ok && nib_gguf_writer_add_f32(w, "test.f32", 1e-5f, &err) == NIB_OK;
    ok = ok && nib_gguf_writer_add_bool(w, "test.bool", true, &err) == NIB_OK;
    ok = ok && nib_gguf_writer_add_str(w, "test.empty", "", &err) == NIB_OK;
    int32_t ints[5] = {1, -2, 3, -4, 5};
    ok = ok && nib_gguf_writer_add_array(w, "test.arr_i32", NIB_GGUF_INT32, ints, 5, &err) == NIB_OK;
    double f64[2] = {3.5, -0.25};
    ok = ok && nib_gguf_writer_add_array(w, "test.arr_f64", NIB_GGUF_FLOAT64, f64, 2, &err) == NIB_OK;
    uint8_t u8[3] = {0, 7, 255};
    ok = ok && nib_gguf_writer_add_array(w, "test.arr_u8", NIB_GGUF_UINT8, u8, 3, &err) == NIB_OK;
    ok = ok && nib_gguf_writer_add_array(w, "test.arr_empty", NIB_GGUF_FLOAT32, NULL, 0, &err) == NIB_OK;
    const char *toks[4] = {"<s>", "hello", "", "w\xc3\xb6rld"};
    ok = ok && nib_gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", toks, 4, &err) == NIB_OK;
    int64_t ne_a[2] = {5, 3}, ne_b[3] = {32, 2, 4}, ne_c[1] = {7};
    ok = ok && nib_gguf_writer_add_tensor(w, "a.weight", NIB_TYPE_F32, 2, ne_a, t_f32, &err) == NIB_OK;
    ok = ok && nib_gguf_writer_add_tensor(w, "b.weight", NIB_TYPE_Q4_0, 3, ne_b, t_q4_0, &err) == NIB_OK;
    ok = ok && nib_gguf_writer_add_tensor(w, "c", NIB_TYPE_F16, 1, ne_c, t_f16, &err) == NIB_OK;
    ok = ok && nib_gguf_writer_write(w, path, &err) == NIB_OK;
    if (!ok) fprintf(stderr, "    writer: %s\n", err.msg);
    nib_gguf_writer_free(w);
    return ok;
}

static void check_sample(nib_gguf *g, uint32_t alignment) {
    nib_error err;
    CHECK(nib_gguf_version(g) == 3, "version");
    CHECK(nib_gguf_alignment(g) == alignment, "alignment %u", nib_gguf_alignment(g));
    nib_str s;
    CHECK(nib_gguf_get_str(g, "general.architecture", &s, &err) == NIB_OK && s.len == 5 && !memcmp(s.ptr, "llama", 5),
          "architecture string");
    uint32_t u32 = 0;
    CHECK(nib_gguf_get_u32(g, "llama.block_count", &u32, &err) == NIB_OK && u32 == 30, "u32");
    int32_t i32 = 0;
    CHECK(nib_gguf_get_i32(g, "test.i32", &i32, &err) == NIB_OK && i32 == -123456, "i32");
    uint64_t u64 = 0;
    CHECK(nib_gguf_get_u64(g, "test.u64", &u64, &err) == NIB_OK && u64 == 1ull << 40, "u64");
    float f = 0;
    CHECK(nib_gguf_get_f32(g, "test.f32", &f, &err) == NIB_OK && f == 1e-5f, "f32");
    bool b = false;
    CHECK(nib_gguf_get_bool(g, "test.bool", &b, &err) == NIB_OK && b, "bool");
    CHECK(nib_gguf_get_str(g, "test.empty", &s, &err) == NIB_OK && s.len == 0, "empty string");
    int64_t i64 = 0;
    CHECK(nib_gguf_get_int(g, "llama.block_count", &i64, &err) == NIB_OK && i64 == 30, "get_int widens u32");
    CHECK(nib_gguf_get_int(g, "test.i32", &i64, &err) == NIB_OK && i64 == -123456, "get_int widens i32");
    /* wrong type: an error that names key and both types */
    CHECK(nib_gguf_get_u32(g, "test.i32", &u32, &err) == NIB_ERR_TYPE && strstr(err.msg, "test.i32") &&
              strstr(err.msg, "int32") && strstr(err.msg, "uint32"),
          "type mismatch message: %s", err.msg);
    CHECK(nib_gguf_get_int(g, "general.architecture", &i64, &err) == NIB_ERR_TYPE, "string is not an integer");
    CHECK(nib_gguf_get_u32(g, "no.such.key", &u32, &err) == NIB_ERR_NOT_FOUND && strstr(err.msg, "no.such.key"),
          "missing key message");
    uint64_t n = 0;
    const void *data = NULL;
    CHECK(nib_gguf_get_array(g, "test.arr_i32", NIB_GGUF_INT32, &n, &data, &err) == NIB_OK && n == 5, "i32 array");
    if (data) {
        int32_t v[5];
        memcpy(v, data, sizeof v);
        CHECK(v[0] == 1 && v[1] == -2 && v[4] == 5, "i32 array values");
    }
    CHECK(nib_gguf_get_array(g, "test.arr_i32", NIB_GGUF_FLOAT32, &n, &data, &err) == NIB_ERR_TYPE,
          "array element type checked");
    CHECK(nib_gguf_get_array(g, "test.arr_f64", NIB_GGUF_FLOAT64, &n, &data, &err) == NIB_OK && n == 2, "f64 array");
    if (data) {
        double v[2];
        memcpy(v, data, sizeof v);
        CHECK(v[0] == 3.5 && v[1] == -0.25, "f64 array values");
    }
    CHECK(nib_gguf_get_array(g, "test.arr_empty", NIB_GGUF_FLOAT32, &n, &data, &err) == NIB_OK && n == 0,
          "empty array");
    const nib_str *strs = NULL;
    CHECK(nib_gguf_get_str_array(g, "tokenizer.ggml.tokens", &n, &strs, &err) == NIB_OK && n == 4, "string array");
    if (strs && n == 4) {
        CHECK(strs[1].len == 5 && !memcmp(strs[1].ptr, "hello", 5), "string array element");
        CHECK(strs[2].len == 0, "empty string element");
        CHECK(strs[3].len == 6 && !memcmp(strs[3].ptr, "w\xc3\xb6rld", 6), "utf-8 element");
    }
    CHECK(nib_gguf_n_tensors(g) == 3, "tensor count");
    int64_t ib = nib_gguf_find_tensor(g, "b.weight");
    const nib_gguf_tensor *t = nib_gguf_tensor_at(g, ib);
    CHECK(t && t->type == NIB_TYPE_Q4_0 && t->n_dims == 3 && t->ne[0] == 32 && t->ne[1] == 2 && t->ne[2] == 4 &&
              t->ne[3] == 1 && t->n_bytes == sizeof t_q4_0,
          "Q4_0 tensor info");
    if (t) CHECK(!memcmp(t->data, t_q4_0, sizeof t_q4_0), "Q4_0 tensor data");
    for (int64_t i = 0; i < nib_gguf_n_tensors(g); i++) {
        const nib_gguf_tensor *ti = nib_gguf_tensor_at(g, i);
        CHECK(ti->offset % alignment == 0, "tensor %lld offset aligned", (long long)i);
        CHECK((nib_gguf_data_offset(g) + ti->offset) % alignment == 0, "tensor %lld file offset aligned", (long long)i);
    }
    t = nib_gguf_tensor_at(g, nib_gguf_find_tensor(g, "a.weight"));
    CHECK(t && !memcmp(t->data, t_f32, sizeof t_f32), "f32 tensor data");
    t = nib_gguf_tensor_at(g, nib_gguf_find_tensor(g, "c"));
    CHECK(t && t->n_bytes == 14 && !memcmp(t->data, t_f16, 14), "f16 tensor data");
    CHECK(nib_gguf_find_tensor(g, "missing") == -1, "missing tensor");
}

static void test_write_read_round_trip(void) {
    rng_bytes(t_q4_0, sizeof t_q4_0);
    for (int i = 0; i < 15; i++) t_f32[i] = (float)rng_normal();
    rng_bytes(t_f16, sizeof t_f16);
    static const uint32_t aligns[] = {0, 64, 8};
    for (int k = 0; k < 3; k++) {
        char path[300];
        path_in_tmp(path, sizeof path, "sample.gguf");
        CHECK(write_sample(path, aligns[k]), "write");
        nib_error err;
        nib_gguf *g = nib_gguf_open(path, &err);
        CHECK(g != NULL, "open: %s", g ? "" : err.msg);
        if (g) {
            check_sample(g, aligns[k] ? aligns[k] : NIB_GGUF_DEFAULT_ALIGNMENT);
            nib_gguf_close(g);
        }
    }
}

/* Every truncation of a valid file is an error with a message, never a crash
 * (and never a success: the last tensor's data is needed). */
static void test_every_truncation_fails(void) {
    char path[300];
    path_in_tmp(path, sizeof path, "trunc.gguf");
    CHECK(write_sample(path, 0), "write");
    size_t size;
    uint8_t *buf = read_file(path, &size);
    CHECK(buf != NULL, "read back");
    if (!buf) return;
    /* the writer pads after the last tensor too; cutting that padding is legal */
    nib_gguf *full = nib_gguf_open_memory(buf, size, NULL);
    CHECK(full != NULL, "the full file opens");
    if (!full) return;
    size_t end = 0;
    for (int64_t i = 0; i < nib_gguf_n_tensors(full); i++) {
        const nib_gguf_tensor *t = nib_gguf_tensor_at(full, i);
        size_t e = (size_t)(nib_gguf_data_offset(full) + t->offset + t->n_bytes);
        if (e > end) end = e;
    }
    nib_gguf_close(full);
    int opened = 0, no_msg = 0;
    for (size_t n = 0; n < end; n++) {
        /* a fresh copy of exactly n bytes, so reading past it is caught by ASan */
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, buf, n);
        nib_error err = {0};
        err.msg[0] = 0;
        nib_gguf *g = nib_gguf_open_memory(cut, n, &err);
        if (g) {
            opened++;
            nib_gguf_close(g);
        } else if (!err.msg[0] || !strstr(err.msg, "at byte")) {
            no_msg++;
        }
        free(cut);
    }
    CHECK(opened == 0, "%d truncated files opened", opened);
    CHECK(no_msg == 0, "%d errors without a byte offset", no_msg);
    nib_gguf *g = nib_gguf_open_memory(buf, end, NULL);
    CHECK(g != NULL, "the file without its trailing padding opens");
    nib_gguf_close(g);
    free(buf);
}

/* ---- hand-made broken files ------------------------------------------------------ */

typedef struct { uint8_t b[4096]; size_t n; } fbuf;
static void put(fbuf *f, const void *p, size_t n) { memcpy(f->b + f->n, p, n), f->n += n; }
static void put_u32(fbuf *f, uint32_t v) { put(f, &v, 4); }
static void put_u64(fbuf *f, uint64_t v) { put(f, &v, 8); }
static void put_str(fbuf *f, const char *s) { put_u64(f, strlen(s)), put(f, s, strlen(s)); }
static void header(fbuf *f, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    f->n = 0;
    put(f, "GGUF", 4), put_u32(f, version), put_u64(f, n_tensors), put_u64(f, n_kv);
}
static void tensor_info(fbuf *f, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t off) {
    put_str(f, name), put_u32(f, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) put_u64(f, ne[d]);
    put_u32(f, type), put_u64(f, off);
}
static void pad_data(fbuf *f, size_t data_bytes) {
    while (f->n % 32) f->b[f->n++] = 0;
    memset(f->b + f->n, 0x3c, data_bytes);
    f->n += data_bytes;
}

/* Expect failure with all the words in want (separated by '|') in the message. */
static void expect_error(const fbuf *f, const char *want, const char *what) {
    uint8_t *copy = malloc(f->n ? f->n : 1);
    memcpy(copy, f->b, f->n);
    nib_error err = {0};
    nib_gguf *g = nib_gguf_open_memory(copy, f->n, &err);
    CHECK(g == NULL, "%s: opened a broken file", what);
    if (g) nib_gguf_close(g);
    char words[256];
    snprintf(words, sizeof words, "%s", want);
    for (char *w = strtok(words, "|"); w; w = strtok(NULL, "|"))
        CHECK(strstr(err.msg, w) != NULL, "%s: message lacks '%s': %s", what, w, err.msg);
    free(copy);
}

static void test_broken_files(void) {
    fbuf f;
    header(&f, 3, 0, 0);
    memcpy(f.b, "GGML", 4);
    expect_error(&f, "magic|at byte 0", "bad magic");
    header(&f, 1, 0, 0);
    expect_error(&f, "version 1", "v1");
    header(&f, 7, 0, 0);
    expect_error(&f, "version 7", "v7");
    header(&f, 0x03000000u, 0, 0);
    expect_error(&f, "big-endian", "big-endian");
    header(&f, 0x02000000u, 0, 0);
    expect_error(&f, "big-endian", "big-endian v2");
    /* 0 once read as a byte-swapped version: it is no version at all */
    header(&f, 0, 0, 0);
    expect_error(&f, "unsupported GGUF version 0", "v0");
    header(&f, 3, 0, 1ull << 60);
    expect_error(&f, "metadata count|at byte 16", "huge kv count");
    header(&f, 3, UINT64_MAX, 0);
    expect_error(&f, "tensor count|at byte 8", "huge tensor count");
    /* a string length that overflows and one past the end */
    header(&f, 3, 0, 1);
    put_u64(&f, UINT64_MAX), put(&f, "abcdefghijklmnopqrstuvwxyz", 26);
    expect_error(&f, "length|exceeds|at byte 24", "overflowing key length");
    header(&f, 3, 0, 1);
    put_str(&f, "k"), put_u32(&f, NIB_GGUF_STRING), put_u64(&f, 1000), put(&f, "xy", 2);
    expect_error(&f, "length 1000", "string past the end");
    header(&f, 3, 0, 1);
    put_str(&f, "k"), put_u32(&f, 13), put_u32(&f, 0);
    expect_error(&f, "unknown value type 13|'k'", "unknown value type");
    header(&f, 3, 0, 1);
    put_str(&f, "k"), put_u32(&f, NIB_GGUF_ARRAY), put_u32(&f, NIB_GGUF_ARRAY), put_u64(&f, 1);
    expect_error(&f, "nested", "nested array");
    header(&f, 3, 0, 1);
    put_str(&f, "k"), put_u32(&f, NIB_GGUF_ARRAY), put_u32(&f, NIB_GGUF_UINT32), put_u64(&f, 1ull << 62);
    expect_error(&f, "claims|elements", "array count past the end");
    header(&f, 3, 0, 1);
    put_str(&f, "k"), put_u32(&f, NIB_GGUF_ARRAY), put_u32(&f, NIB_GGUF_STRING), put_u64(&f, 3);
    put_str(&f, "a"), put_u64(&f, 1ull << 63), put(&f, "abcdefghijklmnop", 16);
    expect_error(&f, "array string|exceeds", "string in array past the end");
    header(&f, 3, 0, 1);
    put_str(&f, "b"), put_u32(&f, NIB_GGUF_BOOL), f.b[f.n++] = 2;
    expect_error(&f, "bool", "bool value 2");
    header(&f, 3, 0, 2);
    put_str(&f, "k"), put_u32(&f, NIB_GGUF_UINT32), put_u32(&f, 1);
    put_str(&f, "k"), put_u32(&f, NIB_GGUF_UINT32), put_u32(&f, 2);
    expect_error(&f, "duplicate metadata key 'k'", "duplicate key");
    header(&f, 3, 0, 1);
    put_str(&f, "general.alignment"), put_u32(&f, NIB_GGUF_UINT32), put_u32(&f, 24);
    expect_error(&f, "power of two", "alignment 24");
    /* a power of two below 8 would place blocks and floats at addresses their types cannot have */
    header(&f, 3, 0, 1);
    put_str(&f, "general.alignment"), put_u32(&f, NIB_GGUF_UINT32), put_u32(&f, 2);
    expect_error(&f, "general.alignment 2 is not a multiple of 8", "alignment 2");
    nib_gguf_writer *w = nib_gguf_writer_new();
    nib_error err;
    CHECK(nib_gguf_writer_set_alignment(w, 4, &err) == NIB_ERR_ARG && strstr(err.msg, "multiple of 8"),
          "the writer refuses alignment 4: %s", err.msg);
    nib_gguf_writer_free(w);
    header(&f, 3, 0, 1);
    put_str(&f, "general.alignment"), put_u32(&f, NIB_GGUF_STRING), put_str(&f, "32");
    expect_error(&f, "general.alignment is not a uint32", "alignment as a string");

    /* tensors */
    uint64_t ne1[1] = {32}, ne2[2] = {32, 2};
    header(&f, 3, 1, 0);
    tensor_info(&f, "t", 0, ne1, NIB_TYPE_F32, 0);
    pad_data(&f, 128);
    expect_error(&f, "'t' has 0 dimensions", "zero dims");
    header(&f, 3, 1, 0);
    uint64_t ne5[5] = {1, 1, 1, 1, 1};
    tensor_info(&f, "t", 5, ne5, NIB_TYPE_F32, 0);
    pad_data(&f, 128);
    expect_error(&f, "5 dimensions", "five dims");
    header(&f, 3, 1, 0);
    tensor_info(&f, "t", 1, ne1, 4, 0);
    pad_data(&f, 128);
    expect_error(&f, "unknown type 4", "removed type 4");
    header(&f, 3, 1, 0);
    tensor_info(&f, "t", 1, ne1, 99, 0);
    pad_data(&f, 128);
    expect_error(&f, "unknown type 99", "type 99");
    header(&f, 3, 1, 0);
    uint64_t ne_odd[1] = {33};
    tensor_info(&f, "t", 1, ne_odd, NIB_TYPE_Q4_0, 0);
    pad_data(&f, 128);
    expect_error(&f, "not a multiple|block of 32", "partial block");
    header(&f, 3, 1, 0);
    uint64_t ne_big[4] = {1ull << 32, 1ull << 32, 1ull << 32, 2};
    tensor_info(&f, "t", 4, ne_big, NIB_TYPE_F32, 0);
    pad_data(&f, 128);
    expect_error(&f, "overflow", "product overflow");
    header(&f, 3, 1, 0);
    uint64_t ne_neg[1] = {UINT64_MAX};
    tensor_info(&f, "t", 1, ne_neg, NIB_TYPE_F32, 0);
    pad_data(&f, 128);
    expect_error(&f, "negative", "negative dim");
    header(&f, 3, 1, 0);
    tensor_info(&f, "t", 2, ne2, NIB_TYPE_F32, 0);
    pad_data(&f, 100);
    expect_error(&f, "runs past the end", "data past the end");
    header(&f, 3, 1, 0);
    tensor_info(&f, "t", 1, ne1, NIB_TYPE_F32, 8);
    pad_data(&f, 256);
    expect_error(&f, "not a multiple of the alignment", "misaligned offset");
    header(&f, 3, 1, 0);
    tensor_info(&f, "t", 1, ne1, NIB_TYPE_F32, UINT64_MAX - 31);
    pad_data(&f, 256);
    expect_error(&f, "runs past the end", "offset near UINT64_MAX");
    header(&f, 3, 2, 0);
    tensor_info(&f, "t", 1, ne1, NIB_TYPE_F32, 0);
    tensor_info(&f, "t", 1, ne1, NIB_TYPE_F32, 128);
    pad_data(&f, 256);
    expect_error(&f, "duplicate tensor name 't'", "duplicate tensor");
    header(&f, 3, 2, 0);
    tensor_info(&f, "a", 1, ne1, NIB_TYPE_F32, 0);
    tensor_info(&f, "b", 1, ne1, NIB_TYPE_F32, 64);
    pad_data(&f, 256);
    expect_error(&f, "overlaps", "overlapping tensors");
}

static void test_open_errors(void) {
    nib_error err;
    CHECK(nib_gguf_open("/nonexistent/x.gguf", &err) == NULL && err.status == NIB_ERR_IO &&
              strstr(err.msg, "/nonexistent/x.gguf"),
          "missing file: %s", err.msg);
    CHECK(nib_gguf_open(tmpdir, &err) == NULL && strstr(err.msg, "not a regular file"), "directory: %s", err.msg);
    char path[300];
    path_in_tmp(path, sizeof path, "empty.gguf");
    FILE *f = fopen(path, "wb");
    if (f) fclose(f);
    CHECK(nib_gguf_open(path, &err) == NULL && strstr(err.msg, "truncated"), "empty file: %s", err.msg);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "%s/nib-test-gguf-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_write_read_round_trip);
    RUN(test_every_truncation_fails);
    RUN(test_broken_files);
    RUN(test_open_errors);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return test_summary();
}
