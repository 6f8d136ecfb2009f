/* AVX-512 single-token dots of the lattice formats IQ2_XXS, IQ2_XS and
 * IQ3_XXS with Q8_K activations (their x4 forms and prompts stay on the AVX2
 * and decoded-ahead paths).
 *
 * The AVX2 dot (dot_iq_avx2.c) turns a sub-block's 32 sign bits into byte
 * masks (a broadcast, a shuffle, an or and a compare) and negates the
 * activation with them (an xor and a subtract). With AVX-512BW the sign bits
 * are a mask register as they are: one masked subtract from zero negates the
 * activation bytes of the negative weights. The rest is the AVX2 body:
 * maddubs of the magnitudes (at most 62) with the signed activation (never
 * -128, so the negation is exact; pairs at most 2 * 62 * 127), madd with the
 * group multipliers, int32 across the super-block, d * d_a per super-block,
 * the format's step at the end: the same integers and the same fp32
 * operations as the AVX2 single-token dot, so the x4 form still gives each
 * token these bits.
 *
 * Kernel lab (bench/cpu_matmul --kernels, AMD EPYC with AVX-512 VNNI, 1
 * thread, ns per weight element, AVX2 -> this): IQ2_XXS 0.072 -> 0.065,
 * IQ2_XS 0.093 -> 0.084, IQ3_XXS 0.080 -> 0.073. IQ2_S (0.062 -> 0.061) and
 * IQ3_S (0.091 -> 0.095), whose sign bytes are stored as they are, keep the
 * AVX2 dot. */
#include "cpu/cpu_internal.h"
#include "cpu/iq_lattice_avx2.h"

static ALWAYS_INLINE float lattice_dot_avx512(nib_type type, int64_t n, const void *w, const void *a) {
    const iq_grid_format *f = nib_iq_grid_format(type);
    const block_q8_K *y = (const block_q8_K *)a;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++, y++) {
        const uint8_t *blk = (const uint8_t *)w + (size_t)i * f->block_bytes;
        __m256i sumi = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / 32; ib++) {
            __m256i mag, ls;
            const __mmask32 neg = (__mmask32)lat_decode_bits(type, f->grid, blk, ib, &mag, &ls);
            const __m256i q8 = _mm256_loadu_si256((const __m256i *)(y->qs + 32 * ib));
            const __m256i sq = _mm256_mask_sub_epi8(q8, neg, _mm256_setzero_si256(), q8);
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(mag, sq), ls));
        }
        uint16_t dh;
        memcpy(&dh, blk, 2);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(simd_fp16_to_f32(dh) * y->d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return f->step * simd_hsum_f32x8(acc);
}

#define LATTICE_DOT_AVX512(name, TYPE)                                                   \
    float cpu_dot_##name##_q8_K_avx512(int64_t n, const void *w, const void *a) {     \
        return lattice_dot_avx512(TYPE, n, w, a);                                       \
    }
LATTICE_DOT_AVX512(iq2_xxs, NIB_TYPE_IQ2_XXS)
LATTICE_DOT_AVX512(iq2_xs, NIB_TYPE_IQ2_XS)
LATTICE_DOT_AVX512(iq3_xxs, NIB_TYPE_IQ3_XXS)
