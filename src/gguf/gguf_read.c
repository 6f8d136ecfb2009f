/* GGUF reader: validates a whole file before anyone uses a byte of it.
 *
 * Layout (little-endian, v2 and v3 are the same; v1 had 32-bit counts):
 *
 *   "GGUF" u32 version  u64 n_tensors  u64 n_kv
 *   n_kv   x { string key, u32 type, value }
 *   n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset }
 *   padding to general.alignment (default 32)
 *   data section: each tensor at data_start + offset (offset aligned)
 *
 * where a string is { u64 len, len bytes } and an array is { u32 elem_type,
 * u64 n, n elements }.
 *
 * The file is untrusted. Every count and length is checked against the bytes
 * that remain before it is used, every size product against overflow, and the
 * only allocations are proportional to what the checked counts can occupy in
 * the file (so a 100-byte file cannot make us allocate gigabytes). Errors name
 * the problem and its byte offset.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "gguf/gguf_internal.h"

/* Smallest encodings, used to bound counts by the bytes remaining. */
#define MIN_KV_BYTES 13      /* u64 key len + u32 type + 1-byte value */
#define MIN_TENSOR_BYTES 24  /* u64 name len + u32 n_dims + u32 type + u64 offset (n_dims 0 rejected later) */

static const char *const vtype_names[NIB_GGUF_VTYPE_COUNT] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
    "bool", "string", "array", "uint64", "int64", "float64",
};
/* Bytes of one scalar value; 0 for string and array (variable length). */
static const uint8_t vtype_size[NIB_GGUF_VTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

size_t nib_gguf_vtype_size(nib_gguf_vtype t) {
    return (unsigned)t < NIB_GGUF_VTYPE_COUNT ? vtype_size[t] : 0;
}

const char *nib_gguf_vtype_name(nib_gguf_vtype t) {
    if ((unsigned)t >= NIB_GGUF_VTYPE_COUNT) return "unknown";
    return vtype_names[t];
}

/* ---- a bounds-checked cursor ------------------------------------------------ */

typedef struct reader {
    const uint8_t *base;
    uint64_t size;
    uint64_t pos;
    const char *src;  /* file name for messages */
    nib_error *err;
} reader;

static nib_status fail(reader *r, uint64_t at, const char *what) {
    return nib_error_set(r->err, NIB_ERR_FORMAT, "%s: at byte %llu: %s", r->src,
                         (unsigned long long)at, what);
}

static uint64_t remaining(const reader *r) { return r->size - r->pos; }

static nib_status need(reader *r, uint64_t n, const char *what) {
    if (n > remaining(r)) {
        return nib_error_set(r->err, NIB_ERR_FORMAT,
                             "%s: at byte %llu: file truncated reading %s (needs %llu bytes, %llu remain)",
                             r->src, (unsigned long long)r->pos, what, (unsigned long long)n,
                             (unsigned long long)remaining(r));
    }
    return NIB_OK;
}

static nib_status read_bytes(reader *r, void *out, uint64_t n, const char *what) {
    nib_status s = need(r, n, what);
    if (s != NIB_OK) return s;
    memcpy(out, r->base + r->pos, n);
    r->pos += n;
    return NIB_OK;
}

static nib_status read_u32(reader *r, uint32_t *v, const char *what) { return read_bytes(r, v, 4, what); }
static nib_status read_u64(reader *r, uint64_t *v, const char *what) { return read_bytes(r, v, 8, what); }

static nib_status read_str(reader *r, nib_str *out, const char *what) {
    uint64_t at = r->pos, len;
    nib_status s = read_u64(r, &len, what);
    if (s != NIB_OK) return s;
    if (len > remaining(r)) {
        return nib_error_set(r->err, NIB_ERR_FORMAT,
                             "%s: at byte %llu: %s length %llu exceeds the %llu bytes remaining",
                             r->src, (unsigned long long)at, what, (unsigned long long)len,
                             (unsigned long long)remaining(r));
    }
    out->ptr = (const char *)r->base + r->pos;
    out->len = len;
    r->pos += len;
    return NIB_OK;
}

/* ---- metadata --------------------------------------------------------------- */

/* Read one value of type t (not an array) and advance; *data points at it. */
static nib_status read_scalar(reader *r, nib_gguf_vtype t, const void **data, const char *what) {
    if (t == NIB_GGUF_STRING) {
        nib_str str;
        nib_status s = read_str(r, &str, what);
        *data = str.ptr;
        return s;
    }
    *data = r->base + r->pos;
    nib_status s = need(r, vtype_size[t], what);
    if (s != NIB_OK) return s;
    if (t == NIB_GGUF_BOOL && r->base[r->pos] > 1) return fail(r, r->pos, "bool value is neither 0 nor 1");
    r->pos += vtype_size[t];
    return NIB_OK;
}

static nib_status read_kv(nib_gguf *g, reader *r, nib_gguf_kv *kv) {
    nib_status s;
    kv->offset = r->pos;
    if ((s = read_str(r, &kv->key, "metadata key")) != NIB_OK) return s;
    if (kv->key.len == 0) return fail(r, kv->offset, "empty metadata key");
    uint64_t at = r->pos;
    uint32_t t;
    if ((s = read_u32(r, &t, "metadata value type")) != NIB_OK) return s;
    if (t >= NIB_GGUF_VTYPE_COUNT) {
        char msg[200];
        snprintf(msg, sizeof msg, "key '%.*s' has unknown value type %u", (int)(kv->key.len > 64 ? 64 : kv->key.len),
                 kv->key.ptr, t);
        return fail(r, at, msg);
    }
    kv->type = (nib_gguf_vtype)t;
    kv->n = 1;
    kv->strs = NULL;
    if (kv->type != NIB_GGUF_ARRAY) {
        kv->elem_type = kv->type;
        return read_scalar(r, kv->type, &kv->data, "metadata value");
    }
    uint32_t et;
    at = r->pos;
    if ((s = read_u32(r, &et, "array element type")) != NIB_OK) return s;
    if (et >= NIB_GGUF_VTYPE_COUNT) return fail(r, at, "array has an unknown element type");
    if (et == NIB_GGUF_ARRAY) return fail(r, at, "nested arrays are not supported");
    kv->elem_type = (nib_gguf_vtype)et;
    at = r->pos;
    if ((s = read_u64(r, &kv->n, "array length")) != NIB_OK) return s;
    /* Each element takes at least its fixed size, strings at least their 8-byte length. */
    uint64_t min_elem = et == NIB_GGUF_STRING ? 8 : vtype_size[et];
    if (kv->n > remaining(r) / min_elem) {
        char msg[200];
        snprintf(msg, sizeof msg, "array '%.*s' claims %llu elements of %s but only %llu bytes remain",
                 (int)(kv->key.len > 64 ? 64 : kv->key.len), kv->key.ptr, (unsigned long long)kv->n,
                 vtype_names[et], (unsigned long long)remaining(r));
        return fail(r, at, msg);
    }
    kv->data = r->base + r->pos;
    if (et != NIB_GGUF_STRING) {
        r->pos += kv->n * min_elem;  /* cannot overflow: bounded by remaining() above */
        if (et == NIB_GGUF_BOOL) {
            const uint8_t *b = kv->data;
            for (uint64_t i = 0; i < kv->n; i++)
                if (b[i] > 1) return fail(r, at + 8 + i, "bool array element is neither 0 nor 1");
        }
        return NIB_OK;
    }
    /* Strings: one view each; the count is bounded by the file size / 8. */
    nib_str *strs = calloc(kv->n ? kv->n : 1, sizeof *strs);
    if (!strs) {
        return nib_error_set(r->err, NIB_ERR_NOMEM, "%s: out of memory for %llu strings of array '%.*s'",
                             r->src, (unsigned long long)kv->n, (int)(kv->key.len > 64 ? 64 : kv->key.len), kv->key.ptr);
    }
    kv->strs = strs;
    g->owned_strs[g->n_owned_strs++] = strs;
    for (uint64_t i = 0; i < kv->n; i++)
        if ((s = read_str(r, &strs[i], "array string")) != NIB_OK) return s;
    return NIB_OK;
}

/* ---- tensors ---------------------------------------------------------------- */

static nib_status read_tensor_info(reader *r, nib_gguf_tensor *t) {
    nib_status s;
    uint64_t at = r->pos;
    if ((s = read_str(r, &t->name, "tensor name")) != NIB_OK) return s;
    if (t->name.len == 0) return fail(r, at, "empty tensor name");
    uint64_t at_dims = r->pos;
    if ((s = read_u32(r, &t->n_dims, "tensor dimension count")) != NIB_OK) return s;
    if (t->n_dims == 0 || t->n_dims > NIB_GGUF_MAX_DIMS) {
        char msg[160];
        snprintf(msg, sizeof msg, "tensor '%.*s' has %u dimensions (1..%d allowed)",
                 (int)(t->name.len > 64 ? 64 : t->name.len), t->name.ptr, t->n_dims, NIB_GGUF_MAX_DIMS);
        return fail(r, at_dims, msg);
    }
    for (int d = 0; d < NIB_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        uint64_t v;
        uint64_t at_d = r->pos;
        if ((s = read_u64(r, &v, "tensor dimension")) != NIB_OK) return s;
        if (v > (uint64_t)INT64_MAX) return fail(r, at_d, "tensor dimension is negative or too large");
        t->ne[d] = (int64_t)v;
    }
    uint32_t type;
    uint64_t at_type = r->pos;
    if ((s = read_u32(r, &type, "tensor type")) != NIB_OK) return s;
    if (!nib_type_is_known((int)type)) {
        char msg[160];
        snprintf(msg, sizeof msg, "tensor '%.*s' has unknown type %u", (int)(t->name.len > 64 ? 64 : t->name.len),
                 t->name.ptr, type);
        return fail(r, at_type, msg);
    }
    t->type = (nib_type)type;
    if ((s = read_u64(r, &t->offset, "tensor data offset")) != NIB_OK) return s;

    /* Size: row bytes times the other dimensions, each product checked. */
    int64_t be = nib_type_block_elems(t->type);
    if (t->ne[0] % be != 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "tensor '%.*s' row length %lld is not a multiple of %s's block of %lld",
                 (int)(t->name.len > 64 ? 64 : t->name.len), t->name.ptr, (long long)t->ne[0],
                 nib_type_name(t->type), (long long)be);
        return fail(r, at_dims, msg);
    }
    uint64_t bytes = 0;
    int ok = nib_mul_u64((uint64_t)(t->ne[0] / be), nib_type_block_bytes(t->type), &bytes);
    for (int d = 1; ok && d < NIB_GGUF_MAX_DIMS; d++) ok = nib_mul_u64(bytes, (uint64_t)t->ne[d], &bytes);
    uint64_t elems = 1;
    for (int d = 0; ok && d < NIB_GGUF_MAX_DIMS; d++) ok = nib_mul_u64(elems, (uint64_t)t->ne[d], &elems);
    if (!ok || elems > (uint64_t)INT64_MAX) {
        char msg[160];
        snprintf(msg, sizeof msg, "tensor '%.*s' dimensions overflow when multiplied",
                 (int)(t->name.len > 64 ? 64 : t->name.len), t->name.ptr);
        return fail(r, at_dims, msg);
    }
    t->n_bytes = bytes;
    return NIB_OK;
}

int nib_gguf_str_cmp(nib_str a, nib_str b) {
    uint64_t n = a.len < b.len ? a.len : b.len;
    int c = memcmp(a.ptr, b.ptr, n);
    if (c) return c;
    return a.len < b.len ? -1 : a.len > b.len;
}

int nib_gguf_sort_item_by_name(const void *a, const void *b) {
    return nib_gguf_str_cmp(((const sort_item *)a)->name, ((const sort_item *)b)->name);
}
static int cmp_item_offset(const void *a, const void *b) {
    uint64_t x = ((const sort_item *)a)->offset, y = ((const sort_item *)b)->offset;
    return x < y ? -1 : x > y;
}

/* Names unique, offsets aligned, data inside the file, no two tensors overlapping. */
static nib_status check_tensor_layout(nib_gguf *g, reader *r) {
    int64_t n = g->n_tensors;
    if (n == 0) return NIB_OK;
    sort_item *idx = malloc((size_t)n * sizeof *idx);
    if (!idx) return nib_error_set(r->err, NIB_ERR_NOMEM, "%s: out of memory checking %lld tensors", r->src, (long long)n);
    uint64_t data_size = g->size - g->data_offset;
    nib_status s = NIB_OK;
    char msg[256];
    for (int64_t i = 0; i < n && s == NIB_OK; i++) {
        const nib_gguf_tensor *t = &g->tensors[i];
        idx[i] = (sort_item){t->name, t->offset, i};
        if (t->offset % g->alignment != 0) {
            snprintf(msg, sizeof msg, "tensor '%.*s' data offset %llu is not a multiple of the alignment %u",
                     (int)(t->name.len > 64 ? 64 : t->name.len), t->name.ptr, (unsigned long long)t->offset,
                     g->alignment);
            s = fail(r, g->tensor_info_offset[i], msg);
        } else if (t->offset > data_size || t->n_bytes > data_size - t->offset) {
            snprintf(msg, sizeof msg,
                     "tensor '%.*s' data (%llu bytes at offset %llu) runs past the end of the file's %llu-byte data section",
                     (int)(t->name.len > 64 ? 64 : t->name.len), t->name.ptr, (unsigned long long)t->n_bytes,
                     (unsigned long long)t->offset, (unsigned long long)data_size);
            s = fail(r, g->tensor_info_offset[i], msg);
        }
    }
    if (s == NIB_OK) {
        qsort(idx, (size_t)n, sizeof *idx, nib_gguf_sort_item_by_name);
        for (int64_t i = 1; i < n && s == NIB_OK; i++) {
            const nib_gguf_tensor *t = &g->tensors[idx[i].i];
            if (nib_gguf_str_cmp(idx[i - 1].name, t->name) == 0) {
                snprintf(msg, sizeof msg, "duplicate tensor name '%.*s'", (int)(t->name.len > 64 ? 64 : t->name.len),
                         t->name.ptr);
                s = fail(r, g->tensor_info_offset[idx[i].i], msg);
            }
        }
    }
    if (s == NIB_OK) {
        qsort(idx, (size_t)n, sizeof *idx, cmp_item_offset);
        for (int64_t i = 1; i < n && s == NIB_OK; i++) {
            const nib_gguf_tensor *a = &g->tensors[idx[i - 1].i], *b = &g->tensors[idx[i].i];
            if (a->offset + a->n_bytes > b->offset) {
                snprintf(msg, sizeof msg, "tensor '%.*s' data overlaps tensor '%.*s'",
                         (int)(b->name.len > 64 ? 64 : b->name.len), b->name.ptr,
                         (int)(a->name.len > 64 ? 64 : a->name.len), a->name.ptr);
                s = fail(r, g->tensor_info_offset[idx[i].i], msg);
            }
        }
    }
    free(idx);
    return s;
}

static nib_status check_unique_keys(nib_gguf *g, reader *r) {
    int64_t n = g->n_kv;
    if (n < 2) return NIB_OK;
    sort_item *idx = malloc((size_t)n * sizeof *idx);
    if (!idx) return nib_error_set(r->err, NIB_ERR_NOMEM, "%s: out of memory checking %lld keys", r->src, (long long)n);
    for (int64_t i = 0; i < n; i++) idx[i] = (sort_item){g->kvs[i].key, 0, i};
    qsort(idx, (size_t)n, sizeof *idx, nib_gguf_sort_item_by_name);
    nib_status s = NIB_OK;
    for (int64_t i = 1; i < n && s == NIB_OK; i++) {
        const nib_gguf_kv *kv = &g->kvs[idx[i].i];
        if (nib_gguf_str_cmp(idx[i - 1].name, kv->key) == 0) {
            char msg[160];
            snprintf(msg, sizeof msg, "duplicate metadata key '%.*s'", (int)(kv->key.len > 64 ? 64 : kv->key.len),
                     kv->key.ptr);
            s = fail(r, kv->offset, msg);
        }
    }
    free(idx);
    return s;
}

/* ---- the whole file ----------------------------------------------------------- */

static nib_status parse(nib_gguf *g, reader *r) {
    nib_status s;
    char magic[4];
    if ((s = read_bytes(r, magic, 4, "magic")) != NIB_OK) return s;
    if (memcmp(magic, "GGUF", 4) != 0) return fail(r, 0, "not a GGUF file (magic is not 'GGUF')");
    if ((s = read_u32(r, &g->version, "version")) != NIB_OK) return s;
    if (g->version == 1) return fail(r, 4, "GGUF version 1 is not supported (convert it to v3)");
    if (g->version != 2 && g->version != 3) {
        /* A big-endian file shows its small version number byte-swapped
         * (version 0 is no version at all, not a swapped one). */
        if ((g->version & 0xffffff) == 0 && (g->version >> 24) >= 1 && (g->version >> 24) <= 3)
            return fail(r, 4, "big-endian GGUF files are not supported");
        char msg[80];
        snprintf(msg, sizeof msg, "unsupported GGUF version %u (2 and 3 are supported)", g->version);
        return fail(r, 4, msg);
    }
    uint64_t n_tensors, n_kv;
    if ((s = read_u64(r, &n_tensors, "tensor count")) != NIB_OK) return s;
    if ((s = read_u64(r, &n_kv, "metadata count")) != NIB_OK) return s;
    /* Bound both counts by the bytes that could hold them before allocating. */
    if (n_kv > remaining(r) / MIN_KV_BYTES) {
        char msg[160];
        snprintf(msg, sizeof msg, "metadata count %llu is more than the %llu remaining bytes can hold",
                 (unsigned long long)n_kv, (unsigned long long)remaining(r));
        return fail(r, 16, msg);
    }
    if (n_tensors > remaining(r) / MIN_TENSOR_BYTES) {
        char msg[160];
        snprintf(msg, sizeof msg, "tensor count %llu is more than the %llu remaining bytes can hold",
                 (unsigned long long)n_tensors, (unsigned long long)remaining(r));
        return fail(r, 8, msg);
    }
    g->kvs = calloc(n_kv ? n_kv : 1, sizeof *g->kvs);
    g->owned_strs = calloc(n_kv ? n_kv : 1, sizeof *g->owned_strs);
    g->tensors = calloc(n_tensors ? n_tensors : 1, sizeof *g->tensors);
    g->tensor_info_offset = calloc(n_tensors ? n_tensors : 1, sizeof *g->tensor_info_offset);
    if (!g->kvs || !g->owned_strs || !g->tensors || !g->tensor_info_offset)
        return nib_error_set(r->err, NIB_ERR_NOMEM, "%s: out of memory for %llu keys and %llu tensors", r->src,
                             (unsigned long long)n_kv, (unsigned long long)n_tensors);

    for (uint64_t i = 0; i < n_kv; i++) {
        if ((s = read_kv(g, r, &g->kvs[i])) != NIB_OK) return s;
        g->n_kv = (int64_t)i + 1;
    }
    if ((s = check_unique_keys(g, r)) != NIB_OK) return s;

    g->alignment = NIB_GGUF_DEFAULT_ALIGNMENT;
    int64_t ai = nib_gguf_find_key(g, "general.alignment");
    if (ai >= 0) {
        const nib_gguf_kv *kv = &g->kvs[ai];
        if (kv->type != NIB_GGUF_UINT32) return fail(r, kv->offset, "general.alignment is not a uint32");
        uint32_t a;
        memcpy(&a, kv->data, 4);
        if (a == 0 || (a & (a - 1)) != 0) return fail(r, kv->offset, "general.alignment is not a power of two");
        /* The GGUF specification asks for a multiple of 8, and nib reads blocks
         * and floats in place: an alignment of 1, 2 or 4 would put them at
         * addresses their types cannot have (undefined behaviour; found by
         * fuzzing under UBSan). */
        if (a < 8) {
            char msg[96];
            snprintf(msg, sizeof msg, "general.alignment %u is not a multiple of 8", a);
            return fail(r, kv->offset, msg);
        }
        g->alignment = a;
    }

    for (uint64_t i = 0; i < n_tensors; i++) {
        g->tensor_info_offset[i] = r->pos;
        if ((s = read_tensor_info(r, &g->tensors[i])) != NIB_OK) return s;
        g->n_tensors = (int64_t)i + 1;
    }

    /* The data section starts at the next multiple of the alignment. */
    uint64_t pad = (g->alignment - r->pos % g->alignment) % g->alignment;
    if (n_tensors > 0 && pad > remaining(r))
        return fail(r, r->pos, "file ends before the data section");
    g->data_offset = r->pos + (pad <= remaining(r) ? pad : remaining(r));
    if ((s = check_tensor_layout(g, r)) != NIB_OK) return s;
    for (int64_t i = 0; i < g->n_tensors; i++) g->tensors[i].data = r->base + g->data_offset + g->tensors[i].offset;
    return NIB_OK;
}

static nib_gguf *open_buffer(const void *data, size_t size, const char *src, nib_error *err) {
    nib_gguf *g = calloc(1, sizeof *g);
    if (!g) {
        nib_error_set(err, NIB_ERR_NOMEM, "%s: out of memory", src);
        return NULL;
    }
    g->base = data;
    g->size = size;
    reader r = {data, size, 0, src, err};
    if (parse(g, &r) != NIB_OK) {
        nib_gguf_close(g);
        return NULL;
    }
    return g;
}

nib_gguf *nib_gguf_open_memory(const void *data, size_t size, nib_error *err) {
    if (!data && size) {
        nib_error_set(err, NIB_ERR_ARG, "nib_gguf_open_memory: NULL buffer");
        return NULL;
    }
    if ((uintptr_t)data % 8) {
        nib_error_set(err, NIB_ERR_ARG, "nib_gguf_open_memory: the buffer is not 8-byte aligned");
        return NULL;
    }
    return open_buffer(data, size, "<memory>", err);
}

nib_gguf *nib_gguf_open(const char *path, nib_error *err) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        nib_error_set(err, NIB_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        nib_error_set(err, NIB_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        nib_error_set(err, NIB_ERR_IO, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    void *map = NULL;
    if (size > 0) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            nib_error_set(err, NIB_ERR_IO, "%s: cannot map %zu bytes: %s", path, size, strerror(errno));
            close(fd);
            return NULL;
        }
    }
    close(fd);
    nib_gguf *g = open_buffer(map ? map : "", size, path, err);
    if (!g) {
        if (map) munmap(map, size);
        return NULL;
    }
    g->mapped = map;
    g->mapped_size = size;
    return g;
}

void nib_gguf_close(nib_gguf *g) {
    if (!g) return;
    for (int64_t i = 0; i < g->n_owned_strs; i++) free(g->owned_strs[i]);
    free(g->owned_strs);
    free(g->kvs);
    free(g->tensors);
    free(g->tensor_info_offset);
    for (int i = 1; i < g->n_splits; i++) nib_gguf_close(g->splits[i]);
    free(g->splits);
    free(g->tensor_split);
    if (g->mapped) munmap(g->mapped, g->mapped_size);
    free(g);
}
