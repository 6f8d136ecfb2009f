/* expf for 8 floats at a time with AVX2/FMA, as Cephes' expf computes it: 2^n
 * times a degree-6 polynomial of the remainder, n the rounded x log2(e), the
 * remainder in two steps of ln 2; within a few ulp of exp. x is clamped at
 * 88 above; the caller keeps it at -87 or more (n in [-127, 127]), where
 * the result stays a normal float. For the files compiled with -mavx2
 * -mfma only (ops/act_avx2.c, ops/attention_avx2.c). */
#ifndef NIB_OPS_EXP_AVX2_H
#define NIB_OPS_EXP_AVX2_H

#include <immintrin.h>

static inline __m256 exp_avx2(__m256 x) {
    x = _mm256_min_ps(x, _mm256_set1_ps(88.0f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    /* times 2^n: n is in [-127, 127] here (x >= 0 in the caller's use, <= 88) */
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

#endif
