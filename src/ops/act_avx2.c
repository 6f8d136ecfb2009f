/* The GLUs with AVX2/FMA. GELU (tanh form): gate = 0.5 g (1 + tanh(k (g +
 * 0.044715 g^3))) up; SiLU: gate = g / (1 + exp(-g)) up.
 *
 * Every step but the tanh is the reference's (ops.c nib_geglu_tanh_ref) in
 * its order, one rounding per operation (separate multiplies and adds, no
 * FMA), so the only difference is tanh: libm's tanhf there, a vector form
 * here. The scalar reference called tanhf element by element, ~14% of Gemma
 * 3 270M's prompt time on this machine's CPU.
 *
 * tanh, as Cephes' tanhf computes it: |x| < 0.625, the odd polynomial
 * x + x^3 P(x^2); above, 1 - 2 / (exp(2|x|) + 1) with the sign of x, exp by
 * Cephes' expf (2^n times a degree-6 polynomial of the remainder, n from the
 * rounded x log2(e), the remainder in two steps of ln 2). Both are within a
 * few ulp of tanh; |2x| is clamped at 88 (tanh is 1 in float long before).
 * tests/test_ops.c holds both forms to the float64 GELU with one bound.
 * Elements past the last whole 8 take the reference. */
#include <immintrin.h>

#include "ops/exp_avx2.h"
#include "ops/ops.h"

static inline __m256 tanh_avx2(__m256 x) {
    const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
    const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    /* small: x + x^3 P(x^2) */
    const __m256 z = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
    const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
    /* large: 1 - 2 / (exp(2|x|) + 1), with x's sign */
    const __m256 e = exp_avx2(_mm256_add_ps(ax, ax));
    const __m256 t = _mm256_sub_ps(_mm256_set1_ps(1.0f),
                                   _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
    const __m256 large = _mm256_or_ps(t, sign);
    return _mm256_blendv_ps(small, large, _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_GE_OQ));
}

void nib_geglu_tanh_avx2(float *gate, const float *up, int64_t n) {
    const __m256 k = _mm256_set1_ps(0.7978845608028654f), c = _mm256_set1_ps(0.044715f);
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        /* k * (g + 0.044715 * g * g * g), left to right as the reference */
        const __m256 cube = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(c, g), g), g);
        const __m256 th = tanh_avx2(_mm256_mul_ps(k, _mm256_add_ps(g, cube)));
        /* 0.5 * g * (1 + th) * up */
        const __m256 r = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(half, g), _mm256_add_ps(one, th)),
                                       _mm256_loadu_ps(up + i));
        _mm256_storeu_ps(gate + i, r);
    }
    if (i < n) nib_geglu_tanh_ref(gate + i, up + i, n - i);
}

/* SiLU: the reference's operations in its order (ops.c nib_swiglu_ref), exp
 * by exp_avx2 for libm's expf: -g clamped to [-87, 88], where exp stays a
 * normal float (past it, g / (1 + exp(-g)) is g or 0 in float anyway). The
 * scalar expf had been ~3% of a Llama-3.2-1B-shape prompt. */
void nib_swiglu_avx2(float *gate, const float *up, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), lo = _mm256_set1_ps(-87.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 e = exp_avx2(_mm256_max_ps(_mm256_sub_ps(_mm256_setzero_ps(), g), lo));
        _mm256_storeu_ps(gate + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
    }
    if (i < n) nib_swiglu_ref(gate + i, up + i, n - i);
}
