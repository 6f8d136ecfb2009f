/* Half-precision (IEEE binary16) and bfloat16 conversions, in portable C.
 *
 * These are the scalar reference conversions every format is defined with.
 * fp32 -> fp16 rounds to nearest even, keeps infinities and NaN (quiet), and
 * produces subnormals; fp16 -> fp32 is exact. bf16 is the top half of an fp32;
 * fp32 -> bf16 rounds to nearest even and keeps NaN a NaN (as ggml does).
 */
#ifndef NIB_CORE_FP16_H
#define NIB_CORE_FP16_H

#include <stdint.h>
#include <string.h>

typedef uint16_t nib_fp16;  /* binary16 bits */
typedef uint16_t nib_bf16;  /* bfloat16 bits */

static inline uint32_t nib_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float nib_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline float nib_fp16_to_f32(nib_fp16 h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return nib_bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0) return nib_bits_f32(sign);
        /* subnormal: man * 2^-24, exact in fp32 */
        float f = (float)man * (1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    return nib_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline nib_fp16 nib_f32_to_fp16(float f) {
    uint32_t x = nib_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (nib_fp16)(sign | 0x7e00u);          /* NaN */
    if (ax >= 0x477ff000u) return (nib_fp16)(sign | 0x7c00u);         /* rounds to >= 65520: inf */
    if (ax < 0x38800000u) {                                            /* below 2^-14: subnormal */
        if (ax < 0x33000000u) return (nib_fp16)sign;                   /* below half the least subnormal */
        uint32_t e = ax >> 23;
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e;  /* 14..24 extra bits to drop (value = m * 2^(e-150), unit 2^-24) */
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (nib_fp16)(sign | q);
    }
    uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);                      /* round to nearest even */
    return (nib_fp16)(sign | ((r - 0x38000000u) >> 13));
}

static inline float nib_bf16_to_f32(nib_bf16 h) { return nib_bits_f32((uint32_t)h << 16); }

static inline nib_bf16 nib_f32_to_bf16(float f) {
    uint32_t x = nib_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (nib_bf16)((x >> 16) | 64u); /* quiet NaN */
    return (nib_bf16)((x + (0x7fffu + ((x >> 16) & 1u))) >> 16);
}

#endif
