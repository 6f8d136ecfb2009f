/* AVX2 dots of float weight rows (F32, F16, BF16) with float activations.
 *
 * Four independent 8-lane FMA accumulators: one FMA has a latency of 4-5
 * cycles and two issue per cycle, so a single accumulator would run at a
 * tenth of the possible rate. The tail (n % 32) is summed scalar. F16 is
 * widened with F16C (vcvtph2ps), BF16 by shifting its 16 bits to the top of
 * a 32-bit lane (BF16 is the upper half of an fp32): both exact.
 */
#include "core/fp16.h"
#include "cpu/cpu_internal.h"
#include "cpu/simd_avx2.h"

static inline __m256 load_f16x8(const nib_fp16 *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

static inline __m256 load_bf16x8(const nib_bf16 *p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

static inline float sum4(__m256 a, __m256 b, __m256 c, __m256 d) {
    return simd_hsum_f32x8(_mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d)));
}

float cpu_dot_f32_f32_avx2(int64_t n, const void *w, const void *x) {
    const float *p = (const float *)w, *a = (const float *)x;
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(p + i), _mm256_loadu_ps(a + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(p + i + 8), _mm256_loadu_ps(a + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(p + i + 16), _mm256_loadu_ps(a + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(p + i + 24), _mm256_loadu_ps(a + i + 24), s3);
    }
    float sum = sum4(s0, s1, s2, s3);
    for (; i < n; i++) sum += p[i] * a[i];
    return sum;
}

float cpu_dot_f16_f32_avx2(int64_t n, const void *w, const void *x) {
    const nib_fp16 *p = (const nib_fp16 *)w;
    const float *a = (const float *)x;
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(load_f16x8(p + i), _mm256_loadu_ps(a + i), s0);
        s1 = _mm256_fmadd_ps(load_f16x8(p + i + 8), _mm256_loadu_ps(a + i + 8), s1);
        s2 = _mm256_fmadd_ps(load_f16x8(p + i + 16), _mm256_loadu_ps(a + i + 16), s2);
        s3 = _mm256_fmadd_ps(load_f16x8(p + i + 24), _mm256_loadu_ps(a + i + 24), s3);
    }
    float sum = sum4(s0, s1, s2, s3);
    for (; i < n; i++) sum += nib_fp16_to_f32(p[i]) * a[i];
    return sum;
}

float cpu_dot_bf16_f32_avx2(int64_t n, const void *w, const void *x) {
    const nib_bf16 *p = (const nib_bf16 *)w;
    const float *a = (const float *)x;
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(load_bf16x8(p + i), _mm256_loadu_ps(a + i), s0);
        s1 = _mm256_fmadd_ps(load_bf16x8(p + i + 8), _mm256_loadu_ps(a + i + 8), s1);
        s2 = _mm256_fmadd_ps(load_bf16x8(p + i + 16), _mm256_loadu_ps(a + i + 16), s2);
        s3 = _mm256_fmadd_ps(load_bf16x8(p + i + 24), _mm256_loadu_ps(a + i + 24), s3);
    }
    float sum = sum4(s0, s1, s2, s3);
    for (; i < n; i++) sum += nib_bf16_to_f32(p[i]) * a[i];
    return sum;
}
