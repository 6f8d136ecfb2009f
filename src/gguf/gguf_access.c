/* Lookups and typed getters over an opened (already validated) GGUF file. */
#include <string.h>

#include "core/error.h"
#include "gguf/gguf_internal.h"

uint32_t nib_gguf_version(const nib_gguf *g) { return g->version; }
uint32_t nib_gguf_alignment(const nib_gguf *g) { return g->alignment; }
uint64_t nib_gguf_data_offset(const nib_gguf *g) { return g->data_offset; }
uint64_t nib_gguf_file_size(const nib_gguf *g) { return g->size; }
int64_t nib_gguf_n_kv(const nib_gguf *g) { return g->n_kv; }
int64_t nib_gguf_n_tensors(const nib_gguf *g) { return g->n_tensors; }

const nib_gguf_kv *nib_gguf_kv_at(const nib_gguf *g, int64_t i) {
    return (i >= 0 && i < g->n_kv) ? &g->kvs[i] : NULL;
}

const nib_gguf_tensor *nib_gguf_tensor_at(const nib_gguf *g, int64_t i) {
    return (i >= 0 && i < g->n_tensors) ? &g->tensors[i] : NULL;
}

static int str_eq(nib_str s, const char *c) {
    size_t n = strlen(c);
    return s.len == n && memcmp(s.ptr, c, n) == 0;
}

/* Linear scans: metadata and tensor counts are in the hundreds, and lookups
 * happen at load time only. */
int64_t nib_gguf_find_key(const nib_gguf *g, const char *key) {
    for (int64_t i = 0; i < g->n_kv; i++)
        if (str_eq(g->kvs[i].key, key)) return i;
    return -1;
}

int64_t nib_gguf_find_tensor(const nib_gguf *g, const char *name) {
    for (int64_t i = 0; i < g->n_tensors; i++)
        if (str_eq(g->tensors[i].name, name)) return i;
    return -1;
}

/* The kv for key if it has type t, else an error naming both types. */
static const nib_gguf_kv *get_typed(const nib_gguf *g, const char *key, nib_gguf_vtype t, nib_status *s,
                                    nib_error *err) {
    int64_t i = nib_gguf_find_key(g, key);
    if (i < 0) {
        *s = nib_error_set(err, NIB_ERR_NOT_FOUND, "metadata key '%s' is missing", key);
        return NULL;
    }
    const nib_gguf_kv *kv = &g->kvs[i];
    if (kv->type != t) {
        *s = nib_error_set(err, NIB_ERR_TYPE, "metadata key '%s' (at byte %llu) is %s, expected %s", key,
                           (unsigned long long)kv->offset, nib_gguf_vtype_name(kv->type), nib_gguf_vtype_name(t));
        return NULL;
    }
    *s = NIB_OK;
    return kv;
}

#define SCALAR_GETTER(fn, ctype, vt)                                                       \
    nib_status fn(const nib_gguf *g, const char *key, ctype *out, nib_error *err) {        \
        nib_status s;                                                                      \
        const nib_gguf_kv *kv = get_typed(g, key, vt, &s, err);                            \
        if (kv) memcpy(out, kv->data, sizeof *out);                                        \
        return s;                                                                          \
    }

SCALAR_GETTER(nib_gguf_get_u32, uint32_t, NIB_GGUF_UINT32)
SCALAR_GETTER(nib_gguf_get_i32, int32_t, NIB_GGUF_INT32)
SCALAR_GETTER(nib_gguf_get_u64, uint64_t, NIB_GGUF_UINT64)
SCALAR_GETTER(nib_gguf_get_f32, float, NIB_GGUF_FLOAT32)

nib_status nib_gguf_get_bool(const nib_gguf *g, const char *key, bool *out, nib_error *err) {
    nib_status s;
    const nib_gguf_kv *kv = get_typed(g, key, NIB_GGUF_BOOL, &s, err);
    if (kv) *out = *(const uint8_t *)kv->data != 0;
    return s;
}

nib_str nib_gguf_kv_str(const nib_gguf_kv *kv) {
    nib_str out = {NULL, 0};
    if (!kv || kv->type != NIB_GGUF_STRING) return out;
    /* the value bytes follow their u64 length (checked by the reader) */
    memcpy(&out.len, (const uint8_t *)kv->data - 8, 8);
    out.ptr = kv->data;
    return out;
}

nib_status nib_gguf_get_str(const nib_gguf *g, const char *key, nib_str *out, nib_error *err) {
    nib_status s;
    const nib_gguf_kv *kv = get_typed(g, key, NIB_GGUF_STRING, &s, err);
    if (kv) *out = nib_gguf_kv_str(kv);
    return s;
}

nib_status nib_gguf_get_int(const nib_gguf *g, const char *key, int64_t *out, nib_error *err) {
    int64_t i = nib_gguf_find_key(g, key);
    if (i < 0) return nib_error_set(err, NIB_ERR_NOT_FOUND, "metadata key '%s' is missing", key);
    const nib_gguf_kv *kv = &g->kvs[i];
    const void *p = kv->data;
    switch (kv->type) {  /* the one place a value type becomes an integer */
    case NIB_GGUF_UINT8: { uint8_t v; memcpy(&v, p, 1); *out = v; return NIB_OK; }
    case NIB_GGUF_INT8: { int8_t v; memcpy(&v, p, 1); *out = v; return NIB_OK; }
    case NIB_GGUF_UINT16: { uint16_t v; memcpy(&v, p, 2); *out = v; return NIB_OK; }
    case NIB_GGUF_INT16: { int16_t v; memcpy(&v, p, 2); *out = v; return NIB_OK; }
    case NIB_GGUF_UINT32: { uint32_t v; memcpy(&v, p, 4); *out = v; return NIB_OK; }
    case NIB_GGUF_INT32: { int32_t v; memcpy(&v, p, 4); *out = v; return NIB_OK; }
    case NIB_GGUF_INT64: { int64_t v; memcpy(&v, p, 8); *out = v; return NIB_OK; }
    case NIB_GGUF_UINT64: {
        uint64_t v;
        memcpy(&v, p, 8);
        if (v > (uint64_t)INT64_MAX)
            return nib_error_set(err, NIB_ERR_FORMAT, "metadata key '%s' value %llu is too large", key,
                                 (unsigned long long)v);
        *out = (int64_t)v;
        return NIB_OK;
    }
    default:
        return nib_error_set(err, NIB_ERR_TYPE, "metadata key '%s' (at byte %llu) is %s, expected an integer", key,
                             (unsigned long long)kv->offset, nib_gguf_vtype_name(kv->type));
    }
}

nib_status nib_gguf_get_array(const nib_gguf *g, const char *key, nib_gguf_vtype elem_type, uint64_t *n,
                              const void **data, nib_error *err) {
    nib_status s;
    const nib_gguf_kv *kv = get_typed(g, key, NIB_GGUF_ARRAY, &s, err);
    if (!kv) return s;
    if (kv->elem_type != elem_type)
        return nib_error_set(err, NIB_ERR_TYPE, "metadata key '%s' is an array of %s, expected an array of %s", key,
                             nib_gguf_vtype_name(kv->elem_type), nib_gguf_vtype_name(elem_type));
    *n = kv->n;
    *data = kv->data;
    return NIB_OK;
}

nib_status nib_gguf_get_str_array(const nib_gguf *g, const char *key, uint64_t *n, const nib_str **strs,
                                  nib_error *err) {
    const void *unused;
    nib_status s = nib_gguf_get_array(g, key, NIB_GGUF_STRING, n, &unused, err);
    if (s == NIB_OK) *strs = g->kvs[nib_gguf_find_key(g, key)].strs;
    return s;
}
