/* nib: an inference engine for quantized LLMs (GGUF).
 *
 * This is the whole public API. A short tour:
 *
 *     #include <nib.h>
 *
 *     nib_error err;
 *     nib_gguf *g = nib_gguf_open("model.gguf", &err);
 *     if (!g) { fprintf(stderr, "%s\n", err.msg); return 1; }
 *
 *     // metadata, by key, with the type checked for you
 *     uint32_t n_layer;
 *     if (nib_gguf_get_u32(g, "llama.block_count", &n_layer, &err) != NIB_OK) ...
 *
 *     // tensors: name, type, shape, and a pointer into the mapped file
 *     int64_t i = nib_gguf_find_tensor(g, "output_norm.weight");
 *     const nib_gguf_tensor *t = nib_gguf_tensor_at(g, i);
 *
 *     // any format row to floats, or a dot product with a float vector
 *     float row[4096];
 *     nib_dequantize_row(t->type, t->data, row, t->ne[0]);
 *
 *     nib_gguf_close(g);
 *
 * Errors: functions that read untrusted input return NIB_OK or an error code
 * and fill a nib_error whose message names the problem (and, for files, the
 * byte offset). The library never exits the process.
 */
#ifndef NIB_H
#define NIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors --------------------------------------------------------------- */

typedef enum nib_status {
    NIB_OK = 0,
    NIB_ERR_IO,           /* open/read/mmap failed */
    NIB_ERR_FORMAT,       /* malformed input */
    NIB_ERR_UNSUPPORTED,  /* well-formed but not something nib can do */
    NIB_ERR_NOT_FOUND,    /* key or tensor absent */
    NIB_ERR_TYPE,         /* key present with another value type */
    NIB_ERR_NOMEM,        /* allocation failed */
    NIB_ERR_ARG,          /* bad argument from the caller */
} nib_status;

typedef struct nib_error {
    nib_status status;
    char msg[512];
} nib_error;

/* ---- formats -------------------------------------------------------------- */

/* The ggml type numbers. These are file format: pinned forever; a removed type
 * keeps its number as a comment. */
typedef enum nib_type {
    NIB_TYPE_F32 = 0,
    NIB_TYPE_F16 = 1,
    NIB_TYPE_Q4_0 = 2,
    NIB_TYPE_Q4_1 = 3,
    /* 4: Q4_2, removed from ggml */
    /* 5: Q4_3, removed from ggml */
    NIB_TYPE_Q5_0 = 6,
    NIB_TYPE_Q5_1 = 7,
    NIB_TYPE_Q8_0 = 8,
    NIB_TYPE_Q8_1 = 9,
    NIB_TYPE_Q2_K = 10,
    NIB_TYPE_Q3_K = 11,
    NIB_TYPE_Q4_K = 12,
    NIB_TYPE_Q5_K = 13,
    NIB_TYPE_Q6_K = 14,
    NIB_TYPE_Q8_K = 15,
    NIB_TYPE_IQ2_XXS = 16,
    NIB_TYPE_IQ2_XS = 17,
    NIB_TYPE_IQ3_XXS = 18,
    NIB_TYPE_IQ1_S = 19,
    NIB_TYPE_IQ4_NL = 20,
    NIB_TYPE_IQ3_S = 21,
    NIB_TYPE_IQ2_S = 22,
    NIB_TYPE_IQ4_XS = 23,
    NIB_TYPE_I8 = 24,      /* integer tensors: known to the reader, not computed with */
    NIB_TYPE_I16 = 25,
    NIB_TYPE_I32 = 26,
    NIB_TYPE_I64 = 27,
    NIB_TYPE_F64 = 28,
    NIB_TYPE_IQ1_M = 29,
    NIB_TYPE_BF16 = 30,
    /* 31: Q4_0_4_4, 32: Q4_0_4_8, 33: Q4_0_8_8, removed (repacking is a backend matter) */
    NIB_TYPE_TQ1_0 = 34,
    NIB_TYPE_TQ2_0 = 35,
    /* 36: IQ4_NL_4_4, 37: IQ4_NL_4_8, 38: IQ4_NL_8_8, removed */
    NIB_TYPE_MXFP4 = 39,
    NIB_TYPE_COUNT = 40,   /* one past the largest number nib knows */
} nib_type;

/* Facts about a type; NULL/0 for a number nib does not know. */
const char *nib_type_name(nib_type t);
bool nib_type_is_known(int t);               /* any number in the enum above */
bool nib_type_is_supported(int t);           /* has a row in the format table */
int64_t nib_type_block_elems(nib_type t);
size_t nib_type_block_bytes(nib_type t);
bool nib_type_parse(const char *name, nib_type *out);  /* "q4_k" or "Q4_K" */

/* Bytes of a row of n elements; false if n is not a multiple of the block size
 * or the size overflows. */
bool nib_row_bytes(nib_type t, int64_t n, size_t *bytes);

/* Row operations through the format table. n must be a multiple of the type's
 * block size. Each returns NIB_ERR_ARG/NIB_ERR_UNSUPPORTED instead of acting
 * when the type or n does not allow it. */
nib_status nib_dequantize_row(nib_type t, const void *src, float *dst, int64_t n);
nib_status nib_quantize_row(nib_type t, const float *src, void *dst, int64_t n);
/* The type an activation row must be quantized to for nib_vec_dot(t, ...). */
nib_type nib_vec_dot_type(nib_type t);
/* dot(weight row in t, activation row in nib_vec_dot_type(t)) into *out. */
nib_status nib_vec_dot(nib_type t, int64_t n, const void *w, const void *a, float *out);
/* dot(weight row in t, float row x), accumulated in fp32 block by block. */
nib_status nib_dot_f32(nib_type t, int64_t n, const void *w, const float *x, float *out);

/* fp16 / bf16 scalar conversions (round to nearest even). */
float nib_half_to_float(uint16_t h);
uint16_t nib_float_to_half(float f);
float nib_bf16_to_float(uint16_t h);
uint16_t nib_float_to_bf16(float f);

/* ---- GGUF files ----------------------------------------------------------- */

/* Metadata value types, as numbered in the GGUF specification (file format). */
typedef enum nib_gguf_vtype {
    NIB_GGUF_UINT8 = 0,
    NIB_GGUF_INT8 = 1,
    NIB_GGUF_UINT16 = 2,
    NIB_GGUF_INT16 = 3,
    NIB_GGUF_UINT32 = 4,
    NIB_GGUF_INT32 = 5,
    NIB_GGUF_FLOAT32 = 6,
    NIB_GGUF_BOOL = 7,
    NIB_GGUF_STRING = 8,
    NIB_GGUF_ARRAY = 9,
    NIB_GGUF_UINT64 = 10,
    NIB_GGUF_INT64 = 11,
    NIB_GGUF_FLOAT64 = 12,
    NIB_GGUF_VTYPE_COUNT
} nib_gguf_vtype;

const char *nib_gguf_vtype_name(nib_gguf_vtype t);
/* Bytes of one value of a fixed-size type; 0 for STRING, ARRAY and unknown types. */
size_t nib_gguf_vtype_size(nib_gguf_vtype t);

#define NIB_GGUF_DEFAULT_ALIGNMENT 32
#define NIB_GGUF_MAX_DIMS 4

/* A string inside the mapped file: not NUL-terminated. Print with "%.*s". */
typedef struct nib_str {
    const char *ptr;
    uint64_t len;
} nib_str;

typedef struct nib_gguf_kv {
    nib_str key;
    nib_gguf_vtype type;
    nib_gguf_vtype elem_type;  /* for NIB_GGUF_ARRAY: the element type */
    uint64_t n;                /* for NIB_GGUF_ARRAY: element count; else 1 */
    const void *data;          /* scalar value, string bytes, or first array element */
    const nib_str *strs;       /* for arrays of strings: n views; else NULL */
    uint64_t offset;           /* file offset of the key, for messages */
} nib_gguf_kv;

typedef struct nib_gguf_tensor {
    nib_str name;
    nib_type type;
    uint32_t n_dims;
    int64_t ne[NIB_GGUF_MAX_DIMS];  /* ne[0] is the row length (contiguous); unused dims are 1 */
    uint64_t offset;                /* from the start of the data section */
    uint64_t n_bytes;
    const void *data;               /* into the mapped file */
} nib_gguf_tensor;

typedef struct nib_gguf nib_gguf;

/* Open and validate a GGUF v2/v3 file (mmap'ed read-only). NULL on error. */
nib_gguf *nib_gguf_open(const char *path, nib_error *err);
/* The same from a buffer the caller keeps alive (for tests and fuzzing); it
 * must be 8-byte aligned (malloc's are), as tensors are read in place. */
nib_gguf *nib_gguf_open_memory(const void *data, size_t size, nib_error *err);
void nib_gguf_close(nib_gguf *g);
/* A model split across files (llama.cpp's gguf-split, gguf-py's writer:
 * NAME-00001-of-00003.gguf, ...) opened from its first file: the others are
 * opened from beside it, each checked as a file of its own and against its
 * place (split.no, split.count, split.tensors.count, no tensor in two files),
 * and their tensors join the first file's table; the metadata is the first
 * file's. A file without split keys opens as with nib_gguf_open; a later
 * split is an error naming the first. Closing closes them all. */
nib_gguf *nib_gguf_open_split(const char *path, nib_error *err);
int nib_gguf_n_splits(const nib_gguf *g);                /* 1 for one file */
int nib_gguf_tensor_split(const nib_gguf *g, int64_t i); /* 0-based file of tensor i */

uint32_t nib_gguf_version(const nib_gguf *g);
uint32_t nib_gguf_alignment(const nib_gguf *g);
uint64_t nib_gguf_data_offset(const nib_gguf *g);  /* file offset of the data section */
uint64_t nib_gguf_file_size(const nib_gguf *g);

int64_t nib_gguf_n_kv(const nib_gguf *g);
const nib_gguf_kv *nib_gguf_kv_at(const nib_gguf *g, int64_t i);
/* A STRING value's text, straight from the kv (keys may hold any bytes, a NUL
 * included, so looking a key up again by name is not always possible);
 * {NULL, 0} for a kv of another type. */
nib_str nib_gguf_kv_str(const nib_gguf_kv *kv);
int64_t nib_gguf_find_key(const nib_gguf *g, const char *key);  /* -1 if absent */

int64_t nib_gguf_n_tensors(const nib_gguf *g);
const nib_gguf_tensor *nib_gguf_tensor_at(const nib_gguf *g, int64_t i);
int64_t nib_gguf_find_tensor(const nib_gguf *g, const char *name);  /* -1 if absent */

/* Typed getters. NIB_ERR_NOT_FOUND if the key is absent, NIB_ERR_TYPE if it
 * holds another type (the message names key, expected and actual type). */
nib_status nib_gguf_get_u32(const nib_gguf *g, const char *key, uint32_t *out, nib_error *err);
nib_status nib_gguf_get_i32(const nib_gguf *g, const char *key, int32_t *out, nib_error *err);
nib_status nib_gguf_get_u64(const nib_gguf *g, const char *key, uint64_t *out, nib_error *err);
nib_status nib_gguf_get_f32(const nib_gguf *g, const char *key, float *out, nib_error *err);
nib_status nib_gguf_get_bool(const nib_gguf *g, const char *key, bool *out, nib_error *err);
nib_status nib_gguf_get_str(const nib_gguf *g, const char *key, nib_str *out, nib_error *err);
/* Any integer type whose value fits in int64 (counts are written as u32, i32 or u64 in the wild). */
nib_status nib_gguf_get_int(const nib_gguf *g, const char *key, int64_t *out, nib_error *err);
/* An array with elements of elem_type: its count and first element. */
nib_status nib_gguf_get_array(const nib_gguf *g, const char *key, nib_gguf_vtype elem_type,
                              uint64_t *n, const void **data, nib_error *err);
/* An array of strings: n views (valid while g is open). */
nib_status nib_gguf_get_str_array(const nib_gguf *g, const char *key, uint64_t *n,
                                  const nib_str **strs, nib_error *err);

/* Writer: collect metadata and tensors, then write an aligned GGUF v3 file.
 * Metadata is copied; tensor data is referenced and must stay alive until
 * nib_gguf_writer_write returns. */
typedef struct nib_gguf_writer nib_gguf_writer;

nib_gguf_writer *nib_gguf_writer_new(void);
void nib_gguf_writer_free(nib_gguf_writer *w);
nib_status nib_gguf_writer_set_alignment(nib_gguf_writer *w, uint32_t alignment, nib_error *err);
nib_status nib_gguf_writer_add_u32(nib_gguf_writer *w, const char *key, uint32_t v, nib_error *err);
nib_status nib_gguf_writer_add_i32(nib_gguf_writer *w, const char *key, int32_t v, nib_error *err);
nib_status nib_gguf_writer_add_u64(nib_gguf_writer *w, const char *key, uint64_t v, nib_error *err);
nib_status nib_gguf_writer_add_f32(nib_gguf_writer *w, const char *key, float v, nib_error *err);
nib_status nib_gguf_writer_add_bool(nib_gguf_writer *w, const char *key, bool v, nib_error *err);
nib_status nib_gguf_writer_add_str(nib_gguf_writer *w, const char *key, const char *v, nib_error *err);
/* Array of fixed-size elements (any scalar type but STRING): n elements at data. */
nib_status nib_gguf_writer_add_array(nib_gguf_writer *w, const char *key, nib_gguf_vtype elem_type,
                                     const void *data, uint64_t n, nib_error *err);
nib_status nib_gguf_writer_add_str_array(nib_gguf_writer *w, const char *key,
                                         const char *const *strs, uint64_t n, nib_error *err);
/* A tensor: ne[0] is the row length and must be a multiple of the type's block. */
nib_status nib_gguf_writer_add_tensor(nib_gguf_writer *w, const char *name, nib_type type,
                                      uint32_t n_dims, const int64_t *ne, const void *data,
                                      nib_error *err);
nib_status nib_gguf_writer_write(nib_gguf_writer *w, const char *path, nib_error *err);

#ifdef __cplusplus
}
#endif
#endif
