/* GGUF writer: metadata and tensors into an aligned GGUF v3 file.
 *
 * Metadata is serialised into a growing byte buffer as it is added (so the
 * writer owns no per-key structures); tensors are kept as descriptors that
 * point at the caller's data. Writing lays tensors out in the order added,
 * each at a multiple of the alignment.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static int buf_put(buf *b, const void *data, size_t n) {
    if (n > SIZE_MAX - b->n) return 0;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) {
            if (cap > SIZE_MAX / 2) return 0;
            cap *= 2;
        }
        uint8_t *p = realloc(b->p, cap);
        if (!p) return 0;
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, data, n);
    b->n += n;
    return 1;
}

static int buf_u32(buf *b, uint32_t v) { return buf_put(b, &v, 4); }
static int buf_u64(buf *b, uint64_t v) { return buf_put(b, &v, 8); }
static int buf_str(buf *b, const char *s) {
    size_t n = strlen(s);
    return buf_u64(b, n) && buf_put(b, s, n);
}

typedef struct wtensor {
    char *name;
    nib_type type;
    uint32_t n_dims;
    int64_t ne[NIB_GGUF_MAX_DIMS];
    const void *data;
    uint64_t n_bytes;
} wtensor;

struct nib_gguf_writer {
    uint32_t alignment;
    buf kv;               /* serialised key-value pairs */
    uint64_t n_kv;
    wtensor *tensors;     /* (n_tensors) */
    uint64_t n_tensors, cap_tensors;
};

nib_gguf_writer *nib_gguf_writer_new(void) {
    nib_gguf_writer *w = calloc(1, sizeof *w);
    if (w) w->alignment = NIB_GGUF_DEFAULT_ALIGNMENT;
    return w;
}

void nib_gguf_writer_free(nib_gguf_writer *w) {
    if (!w) return;
    for (uint64_t i = 0; i < w->n_tensors; i++) free(w->tensors[i].name);
    free(w->tensors);
    free(w->kv.p);
    free(w);
}

static nib_status oom(nib_error *err, const char *what) {
    return nib_error_set(err, NIB_ERR_NOMEM, "gguf writer: out of memory adding %s", what);
}

/* Key and value type, the common prefix of every kv. */
static int put_key(nib_gguf_writer *w, const char *key, nib_gguf_vtype t) {
    return buf_str(&w->kv, key) && buf_u32(&w->kv, (uint32_t)t);
}

static nib_status add_scalar(nib_gguf_writer *w, const char *key, nib_gguf_vtype t, const void *v, size_t n,
                             nib_error *err) {
    if (!put_key(w, key, t) || !buf_put(&w->kv, v, n)) return oom(err, key);
    w->n_kv++;
    return NIB_OK;
}

nib_status nib_gguf_writer_set_alignment(nib_gguf_writer *w, uint32_t alignment, nib_error *err) {
    if (alignment == 0 || (alignment & (alignment - 1)))
        return nib_error_set(err, NIB_ERR_ARG, "gguf writer: alignment %u is not a power of two", alignment);
    if (alignment < 8)  /* what the reader accepts: the GGUF specification's multiple of 8 */
        return nib_error_set(err, NIB_ERR_ARG, "gguf writer: alignment %u is not a multiple of 8", alignment);
    w->alignment = alignment;
    return nib_gguf_writer_add_u32(w, "general.alignment", alignment, err);
}

nib_status nib_gguf_writer_add_u32(nib_gguf_writer *w, const char *key, uint32_t v, nib_error *err) {
    return add_scalar(w, key, NIB_GGUF_UINT32, &v, 4, err);
}
nib_status nib_gguf_writer_add_i32(nib_gguf_writer *w, const char *key, int32_t v, nib_error *err) {
    return add_scalar(w, key, NIB_GGUF_INT32, &v, 4, err);
}
nib_status nib_gguf_writer_add_u64(nib_gguf_writer *w, const char *key, uint64_t v, nib_error *err) {
    return add_scalar(w, key, NIB_GGUF_UINT64, &v, 8, err);
}
nib_status nib_gguf_writer_add_f32(nib_gguf_writer *w, const char *key, float v, nib_error *err) {
    return add_scalar(w, key, NIB_GGUF_FLOAT32, &v, 4, err);
}
nib_status nib_gguf_writer_add_bool(nib_gguf_writer *w, const char *key, bool v, nib_error *err) {
    uint8_t b = v ? 1 : 0;
    return add_scalar(w, key, NIB_GGUF_BOOL, &b, 1, err);
}
nib_status nib_gguf_writer_add_str(nib_gguf_writer *w, const char *key, const char *v, nib_error *err) {
    if (!put_key(w, key, NIB_GGUF_STRING) || !buf_str(&w->kv, v)) return oom(err, key);
    w->n_kv++;
    return NIB_OK;
}


nib_status nib_gguf_writer_add_array(nib_gguf_writer *w, const char *key, nib_gguf_vtype elem_type,
                                     const void *data, uint64_t n, nib_error *err) {
    if (nib_gguf_vtype_size(elem_type) == 0)  /* strings and arrays have no fixed size */
        return nib_error_set(err, NIB_ERR_ARG, "gguf writer: '%s': arrays of %s need their own call", key,
                             nib_gguf_vtype_name(elem_type));
    uint64_t bytes;
    if (!nib_mul_u64(n, nib_gguf_vtype_size(elem_type), &bytes) || bytes > SIZE_MAX)
        return nib_error_set(err, NIB_ERR_ARG, "gguf writer: '%s': array too large", key);
    if (!put_key(w, key, NIB_GGUF_ARRAY) || !buf_u32(&w->kv, (uint32_t)elem_type) || !buf_u64(&w->kv, n) ||
        !buf_put(&w->kv, data, (size_t)bytes))
        return oom(err, key);
    w->n_kv++;
    return NIB_OK;
}

nib_status nib_gguf_writer_add_str_array(nib_gguf_writer *w, const char *key, const char *const *strs, uint64_t n,
                                         nib_error *err) {
    if (!put_key(w, key, NIB_GGUF_ARRAY) || !buf_u32(&w->kv, NIB_GGUF_STRING) || !buf_u64(&w->kv, n))
        return oom(err, key);
    for (uint64_t i = 0; i < n; i++)
        if (!buf_str(&w->kv, strs[i])) return oom(err, key);
    w->n_kv++;
    return NIB_OK;
}

nib_status nib_gguf_writer_add_tensor(nib_gguf_writer *w, const char *name, nib_type type, uint32_t n_dims,
                                      const int64_t *ne, const void *data, nib_error *err) {
    if (!nib_type_is_known((int)type))
        return nib_error_set(err, NIB_ERR_ARG, "gguf writer: tensor '%s': unknown type %d", name, (int)type);
    if (n_dims == 0 || n_dims > NIB_GGUF_MAX_DIMS)
        return nib_error_set(err, NIB_ERR_ARG, "gguf writer: tensor '%s': %u dimensions", name, n_dims);
    wtensor t = {0};
    t.type = type;
    t.n_dims = n_dims;
    t.data = data;
    for (int d = 0; d < NIB_GGUF_MAX_DIMS; d++) t.ne[d] = d < (int)n_dims ? ne[d] : 1;
    size_t row;
    if (t.ne[0] < 0 || !nib_row_bytes(type, t.ne[0], &row))
        return nib_error_set(err, NIB_ERR_ARG, "gguf writer: tensor '%s': row of %lld is not whole %s blocks", name,
                             (long long)t.ne[0], nib_type_name(type));
    uint64_t bytes = row;
    for (int d = 1; d < NIB_GGUF_MAX_DIMS; d++)
        if (t.ne[d] < 0 || !nib_mul_u64(bytes, (uint64_t)t.ne[d], &bytes))
            return nib_error_set(err, NIB_ERR_ARG, "gguf writer: tensor '%s': size overflows", name);
    t.n_bytes = bytes;
    if (w->n_tensors == w->cap_tensors) {
        uint64_t cap = w->cap_tensors ? 2 * w->cap_tensors : 16;
        wtensor *p = realloc(w->tensors, cap * sizeof *p);
        if (!p) return oom(err, name);
        w->tensors = p;
        w->cap_tensors = cap;
    }
    t.name = malloc(strlen(name) + 1);
    if (!t.name) return oom(err, name);
    strcpy(t.name, name);
    w->tensors[w->n_tensors++] = t;
    return NIB_OK;
}

static uint64_t pad_to(uint64_t x, uint32_t a) { return (x + a - 1) / a * a; }

nib_status nib_gguf_writer_write(nib_gguf_writer *w, const char *path, nib_error *err) {
    buf head = {0};
    int ok = buf_put(&head, "GGUF", 4) && buf_u32(&head, 3) && buf_u64(&head, w->n_tensors) &&
             buf_u64(&head, w->n_kv) && buf_put(&head, w->kv.p, w->kv.n);
    uint64_t offset = 0;
    for (uint64_t i = 0; ok && i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        ok = buf_str(&head, t->name) && buf_u32(&head, t->n_dims);
        for (uint32_t d = 0; ok && d < t->n_dims; d++) ok = buf_u64(&head, (uint64_t)t->ne[d]);
        ok = ok && buf_u32(&head, (uint32_t)t->type) && buf_u64(&head, offset);
        offset = pad_to(offset + t->n_bytes, w->alignment);
    }
    static const uint8_t zeros[256];
    size_t pad = (size_t)(pad_to(head.n, w->alignment) - head.n);
    while (ok && pad > 0) {
        size_t k = pad < sizeof zeros ? pad : sizeof zeros;
        ok = buf_put(&head, zeros, k);
        pad -= k;
    }
    if (!ok) {
        free(head.p);
        return oom(err, "the header");
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(head.p);
        return nib_error_set(err, NIB_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    }
    ok = fwrite(head.p, 1, head.n, f) == head.n;
    free(head.p);
    for (uint64_t i = 0; ok && i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        ok = fwrite(t->data, 1, t->n_bytes, f) == t->n_bytes;
        uint64_t p = pad_to(t->n_bytes, w->alignment) - t->n_bytes;
        while (ok && p > 0) {
            size_t k = p < sizeof zeros ? (size_t)p : sizeof zeros;
            ok = fwrite(zeros, 1, k, f) == k;
            p -= k;
        }
    }
    if (fclose(f) != 0) ok = 0;
    if (!ok) return nib_error_set(err, NIB_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return NIB_OK;
}
