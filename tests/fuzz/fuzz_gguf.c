/* Fuzz harness: the GGUF reader (nib_gguf_open_memory) and every accessor.
 *
 * A file either opens or fails with a message naming a byte offset. One that
 * opens is walked completely: every key through every typed getter, every
 * array element, every string, every tensor found by name and its first and
 * last data byte touched (ASan sees a view that leaves the buffer), the first
 * row of each small tensor dequantized. */
#include "fuzz.h"

static void touch_str(nib_str s) {
    volatile uint8_t sink = 0;
    if (s.len) sink ^= (uint8_t)(s.ptr[0] ^ s.ptr[s.len - 1]);
    (void)sink;
}

static void walk_kv(const nib_gguf *g, const nib_gguf_kv *kv) {
    touch_str(kv->key);
    FUZZ_CHECK((unsigned)kv->type < NIB_GGUF_VTYPE_COUNT, "value type %d", (int)kv->type);
    /* the getters by the key's own name (keys with a NUL byte cannot be asked for) */
    char key[256];
    if (kv->key.len < sizeof key && !memchr(kv->key.ptr, 0, kv->key.len)) {
        memcpy(key, kv->key.ptr, kv->key.len);
        key[kv->key.len] = 0;
        int64_t i = nib_gguf_find_key(g, key);
        FUZZ_CHECK(i >= 0 && nib_gguf_kv_at(g, i) == kv, "key '%s' not found by name (keys are unique)", key);
        nib_error err;
        uint32_t u32;
        int32_t i32;
        uint64_t u64, n;
        int64_t i64;
        float f32;
        bool b;
        nib_str s;
        const void *data;
        const nib_str *strs;
        nib_gguf_get_u32(g, key, &u32, &err);
        nib_gguf_get_i32(g, key, &i32, &err);
        nib_gguf_get_u64(g, key, &u64, &err);
        nib_gguf_get_f32(g, key, &f32, &err);
        nib_gguf_get_bool(g, key, &b, &err);
        nib_gguf_get_int(g, key, &i64, &err);
        if (nib_gguf_get_str(g, key, &s, &err) == NIB_OK) touch_str(s);
        for (int t = 0; t < NIB_GGUF_VTYPE_COUNT; t++)
            if (nib_gguf_get_array(g, key, (nib_gguf_vtype)t, &n, &data, &err) == NIB_OK) FUZZ_CHECK(n == kv->n, "count");
        if (nib_gguf_get_str_array(g, key, &n, &strs, &err) == NIB_OK)
            for (uint64_t k = 0; k < n; k++) touch_str(strs[k]);
    }
    if (kv->type == NIB_GGUF_ARRAY && kv->elem_type == NIB_GGUF_STRING) {
        for (uint64_t k = 0; k < kv->n; k++) touch_str(kv->strs[k]);
    } else if (kv->type == NIB_GGUF_ARRAY && kv->n) {
        static const size_t size[NIB_GGUF_VTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
        volatile uint8_t sink = ((const uint8_t *)kv->data)[kv->n * size[kv->elem_type] - 1];
        (void)sink;
    }
}

static void walk_tensor(const nib_gguf *g, int64_t i) {
    const nib_gguf_tensor *t = nib_gguf_tensor_at(g, i);
    touch_str(t->name);
    FUZZ_CHECK(t->n_dims >= 1 && t->n_dims <= NIB_GGUF_MAX_DIMS, "dims %u", t->n_dims);
    FUZZ_CHECK(nib_type_is_known((int)t->type), "type %d", (int)t->type);
    char name[256];
    if (t->name.len < sizeof name && !memchr(t->name.ptr, 0, t->name.len)) {
        memcpy(name, t->name.ptr, t->name.len);
        name[t->name.len] = 0;
        FUZZ_CHECK(nib_gguf_find_tensor(g, name) == i, "tensor '%s' not found by name (names are unique)", name);
    }
    uint64_t end = nib_gguf_data_offset(g) + t->offset + t->n_bytes;
    FUZZ_CHECK(end <= nib_gguf_file_size(g), "tensor data ends at %llu, past the file", (unsigned long long)end);
    if (t->n_bytes) {
        volatile uint8_t sink = ((const uint8_t *)t->data)[0] ^ ((const uint8_t *)t->data)[t->n_bytes - 1];
        (void)sink;
    }
    /* one row through the format table, when the type computes and the row is small */
    size_t row_bytes;
    if (nib_type_is_supported((int)t->type) && t->ne[0] > 0 && t->ne[0] <= 4096 && t->n_bytes &&
        nib_row_bytes(t->type, t->ne[0], &row_bytes) && row_bytes <= t->n_bytes) {
        float row[4096];
        FUZZ_CHECK(nib_dequantize_row(t->type, t->data, row, t->ne[0]) == NIB_OK, "dequantize %s", nib_type_name(t->type));
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nib_error err = {0};
    nib_gguf *g = nib_gguf_open_memory(data, size, &err);
    if (!g) {
        fuzz_check_error(&err, "nib_gguf_open_memory");
        FUZZ_CHECK(strstr(err.msg, "at byte") != NULL, "a format error without its offset: %s", err.msg);
        return 0;
    }
    FUZZ_CHECK(nib_gguf_version(g) == 2 || nib_gguf_version(g) == 3, "version");
    FUZZ_CHECK(nib_gguf_data_offset(g) <= size, "data offset past the file");
    for (int64_t i = 0; i < nib_gguf_n_kv(g); i++) walk_kv(g, nib_gguf_kv_at(g, i));
    for (int64_t i = 0; i < nib_gguf_n_tensors(g); i++) walk_tensor(g, i);
    nib_gguf_close(g);
    return 0;
}
