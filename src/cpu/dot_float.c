/* Scalar dots of float weight rows with float activations.
 *
 * The format table pairs F16 and BF16 weights with activations of their own
 * type, which would round X to 11 or 8 significant bits before the product.
 * The CPU backend dots them with X as given instead (so does ggml's CPU
 * backend for F16 on most paths); these are the scalar twins of the SIMD
 * versions in dot_float_avx2.c, with one fp32 sum in element order like the
 * format table's nib_vec_dot_f32_f32.
 */
#include "core/fp16.h"
#include "cpu/cpu_internal.h"

float cpu_dot_f16_f32(int64_t n, const void *w, const void *x) {
    const nib_fp16 *h = (const nib_fp16 *)w;
    const float *a = (const float *)x;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += nib_fp16_to_f32(h[i]) * a[i];
    return sum;
}

float cpu_dot_bf16_f32(int64_t n, const void *w, const void *x) {
    const nib_bf16 *h = (const nib_bf16 *)w;
    const float *a = (const float *)x;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += nib_bf16_to_f32(h[i]) * a[i];
    return sum;
}
