/* The format table: one row per ggml type nib computes with.
 *
 * This is the single place that says what a type is. Backends keep their own
 * tables of fast kernels keyed by the same nib_type (see cpu/, later cuda/);
 * they never switch on the type elsewhere.
 */
#ifndef NIB_QUANT_TYPES_H
#define NIB_QUANT_TYPES_H

#include "nib.h"

typedef void (*nib_dequantize_fn)(const void *src, float *dst, int64_t n);
typedef void (*nib_quantize_fn)(const float *src, void *dst, int64_t n);
typedef float (*nib_vec_dot_fn)(int64_t n, const void *w, const void *a);

typedef struct nib_type_traits {
    const char *name;
    int64_t block_elems;            /* elements per block */
    size_t block_bytes;             /* bytes per block */
    nib_dequantize_fn dequantize;   /* required in every row */
    nib_quantize_fn quantize;       /* NULL only where quantize_note says why */
    const char *quantize_note;      /* why there is no reference quantizer */
    nib_vec_dot_fn vec_dot;         /* required in every row */
    nib_type vec_dot_type;          /* the activation format vec_dot reads */
} nib_type_traits;

/* The row for t, or NULL when t has none (unknown or integer-only types). */
const nib_type_traits *nib_type_traits_get(int t);

#endif
