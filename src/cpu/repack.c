/* Packing weights into the CPU kernels' own layouts (cpu/repack.h), and the
 * table of which formats have one.
 *
 * To add a packed layout: define its block in repack.h, write its pack
 * function here and its kernel in the SIMD file of its family, and add a row
 * to pack_rows; tests/test_cpu.c walks the table. */
#include <string.h>

#include "cpu/cpu_internal.h"
#include "cpu/repack.h"

/* Q4_K/Q5_K's 6-bit scale and minimum of sub-block j from the 12 packed
 * bytes (layout in quant/q_k.c). */
static void unpack_scale_min(const uint8_t *s, int j, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = s[j] & 63, *m = s[j + 4] & 63;
    } else {
        *sc = (uint8_t)((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4));
        *m = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

/* One row r of a Q4_K/Q5_K group: d, dmin, scales and minimums, and the
 * low four bits of the quants (qs, the same layout in both formats). */
static void pack_k_row(nib_half d, nib_half dmin, const uint8_t *scales, const uint8_t *qsrc, int r, q4_Kx8_order order,
                       block_q4_Kx8 *hdr, uint8_t (*qs)[16 * Q4_KX8_ROWS]) {
    hdr->d[r] = d, hdr->dmin[r] = dmin;
    for (int j = 0; j < 8; j++) unpack_scale_min(scales, j, &hdr->sc[j][r], &hdr->m[j / 2][r][j % 2]);
    for (int j = 0; j < 8; j++) {
        /* sub-block j: the low (j even) or high (j odd) nibbles of
         * qs[32 (j/2) ..]; 8 output bytes (quads k = 2h, 2h + 1) at a time,
         * little-endian as every CPU with these kernels */
        const uint8_t *q = qsrc + 32 * (j / 2);
        const int sh = 4 * (j % 2);
        for (int h = 0; h < 2; h++) {
            uint64_t lo, hi;
            memcpy(&lo, q + 8 * h, 8), memcpy(&hi, q + 16 + 8 * h, 8);
            const uint64_t v = ((lo >> sh) & 0x0F0F0F0F0F0F0F0Full) | (((hi >> sh) & 0x0F0F0F0F0F0F0F0Full) << 4);
            if (order == Q4_KX8_PAIRS) {
                memcpy(&qs[j][q4_Kx8_qs_byte(order, 2 * h, r, 0)], &v, 8);
            } else {
                memcpy(&qs[j][q4_Kx8_qs_byte(order, 2 * h, r, 0)], &v, 4);
                memcpy(&qs[j][q4_Kx8_qs_byte(order, 2 * h + 1, r, 0)], (const uint8_t *)&v + 4, 4);
            }
        }
    }
}

/* Row r's super-block i is at w + r * w_stride + i * 144. */
void cpu_pack_q4_Kx8(const uint8_t *w, size_t w_stride, int64_t i, q4_Kx8_order order, block_q4_Kx8 *dst) {
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        const block_q4_K *x = (const block_q4_K *)(w + (size_t)r * w_stride) + i;
        pack_k_row(x->d, x->dmin, x->scales, x->qs, r, order, dst, dst->qs);
    }
}

/* Q5_K: as Q4_K (PAIRS), and the fifth bits (bit j of the file's qh[l] is
 * element l of sub-block j) regrouped into the masks of repack.h. */
void cpu_pack_q5_Kx8(const uint8_t *w, size_t w_stride, int64_t i, block_q5_Kx8 *dst) {
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        const block_q5_K *x = (const block_q5_K *)(w + (size_t)r * w_stride) + i;
        pack_k_row(x->d, x->dmin, x->scales, x->qs, r, Q4_KX8_PAIRS, (block_q4_Kx8 *)dst, dst->qs);
        for (int j = 0; j < 8; j++)
            for (int p = 0; p < 2; p++)
                for (int h = 0; h < 2; h++) {
                    uint8_t b = 0;
                    for (int e = 0; e < 8; e++) b |= (uint8_t)(((x->qh[16 * h + 8 * p + e] >> j) & 1) << e);
                    dst->qh[j][p][h][r] = b;
                }
    }
}

/* Q5_K for AVX2 (repack.h block_q5_Kx8q) */
void cpu_pack_q5_Kx8q(const uint8_t *w, size_t w_stride, int64_t i, block_q5_Kx8q *dst) {
    memset(dst->qh, 0, sizeof dst->qh);
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        const block_q5_K *x = (const block_q5_K *)(w + (size_t)r * w_stride) + i;
        pack_k_row(x->d, x->dmin, x->scales, x->qs, r, Q4_KX8_QUADS, (block_q4_Kx8 *)dst, dst->qs);
        for (int j = 0; j < 8; j++)
            for (int l = 0; l < 32; l++) {
                const uint32_t bit = (uint32_t)(x->qh[l] >> j) & 1u;
                dst->qh[j][(l % 16) / 4][l / 16] |= bit << (4 * r + l % 4);
            }
    }
}

/* Q6_K: each row's 256 codes (0..63) decoded as quant/q_k.c describes
 * them, then placed per repack.h. */
void cpu_pack_q6_Kx8(const uint8_t *w, size_t w_stride, int64_t i, block_q6_Kx8 *dst) {
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        const block_q6_K *x = (const block_q6_K *)(w + (size_t)r * w_stride) + i;
        uint8_t q[QK_K];
        for (int e = 0; e < QK_K; e++) {
            const int h = e / 128, k = (e % 128) / 32, l = e % 32;
            const int low = (x->ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0xF;
            q[e] = (uint8_t)(low | (((x->qh[32 * h + l] >> (2 * k)) & 3) << 4));
        }
        dst->d[r] = x->d;
        for (int j = 0; j < 16; j++) dst->sc[j / 2][r][j % 2] = x->scales[j];
        for (int j = 0; j < 16; j++)
            for (int e = 0; e < 8; e++) {
                const int pos = 8 * r + e; /* 8r + 4h + b with e = 4h + b */
                const uint8_t a = q[16 * j + e], b = q[16 * j + 8 + e];
                dst->ql[j][pos] = (uint8_t)((a & 0xF) | ((b & 0xF) << 4));
                const int sh = 4 * (j % 2);
                uint8_t *hb = &dst->qh[j / 2][pos];
                *hb = (uint8_t)((*hb & ~(0xF << sh)) | (((a >> 4) | ((b >> 4) << 2)) << sh));
            }
    }
}

/* Q6_K for AVX2 (repack.h block_q6_Kx8q): the same codes as cpu_pack_q6_Kx8
 * decodes them, placed 4 elements of 8 rows a register. */
void cpu_pack_q6_Kx8q(const uint8_t *w, size_t w_stride, int64_t i, block_q6_Kx8q *dst) {
    memset(dst->qh, 0, sizeof dst->qh);
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        const block_q6_K *x = (const block_q6_K *)(w + (size_t)r * w_stride) + i;
        dst->d[r] = x->d;
        for (int j = 0; j < 16; j++) dst->sc[j][r] = x->scales[j];
        for (int e = 0; e < QK_K; e++) {
            const int h = e / 128, k2 = (e % 128) / 32, l = e % 32;
            const int low = (x->ql[64 * h + 32 * (k2 % 2) + l] >> (4 * (k2 / 2))) & 0xF;
            const int q = low | (((x->qh[32 * h + l] >> (2 * k2)) & 3) << 4);
            const int j = e / 16, p = j / 2, s = j % 2, k = (e % 16) / 4, b = e % 4;
            uint8_t *lb = &dst->ql[p][k][4 * r + b];
            *lb = (uint8_t)(s ? (*lb & 0x0F) | (q & 0xF) << 4 : (*lb & 0xF0) | (q & 0xF));
            dst->qh[p][k / 2][4 * r + b] |= (uint8_t)((q >> 4) << (4 * (k % 2) + 2 * s));
        }
    }
}

/* The 32-element formats (repack.h): each row's scales, its 16 quant bytes
 * in two halves of 8 at 8r of qs[0] and qs[1], its qh bytes at [b][r]. */
void cpu_pack_legacy_x8(nib_type t, const uint8_t *w, size_t w_stride, int64_t i, q4_Kx8_order order, void *dst) {
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        const uint8_t *row = w + (size_t)r * w_stride;
        const nib_half *d = NULL, *m = NULL;
        const uint8_t *qh = NULL, *qs = NULL;
        nib_half *dd = NULL, *dm = NULL;
        uint8_t (*dqh)[Q4_KX8_ROWS] = NULL, (*dqs)[8 * Q4_KX8_ROWS] = NULL;
        switch (t) {
        case NIB_TYPE_IQ4_NL: /* Q4_0's bytes */
        case NIB_TYPE_Q4_0: {
            const block_q4_0 *b = (const block_q4_0 *)row + i;
            block_q4_0x8 *o = dst;
            d = &b->d, qs = b->qs, dd = o->d, dqs = o->qs;
            break;
        }
        case NIB_TYPE_Q5_0: {
            const block_q5_0 *b = (const block_q5_0 *)row + i;
            block_q5_0x8 *o = dst;
            d = &b->d, qh = b->qh, qs = b->qs, dd = o->d, dqh = o->qh, dqs = o->qs;
            break;
        }
        case NIB_TYPE_Q4_1: {
            const block_q4_1 *b = (const block_q4_1 *)row + i;
            block_q4_1x8 *o = dst;
            d = &b->d, m = &b->m, qs = b->qs, dd = o->d, dm = o->m, dqs = o->qs;
            break;
        }
        case NIB_TYPE_Q8_0: {
            const block_q8_0 *b = (const block_q8_0 *)row + i;
            block_q8_0x8 *o = dst;
            o->d[r] = b->d;
            if (order == Q4_KX8_PAIRS)
                for (int p = 0; p < 4; p++) memcpy(&o->qs[p][8 * r], b->qs + 8 * p, 8);
            else /* quads: register k holds codes 4k..4k+3 of every row */
                for (int k = 0; k < 8; k++) memcpy(&o->qs[0][0] + 32 * k + 4 * r, b->qs + 4 * k, 4);
            continue;
        }
        case NIB_TYPE_MXFP4: {
            const block_mxfp4 *b = (const block_mxfp4 *)row + i;
            block_mxfp4x8 *o = dst;
            o->e[r] = b->e;
            if (order == Q4_KX8_PAIRS)
                memcpy(&o->qs[0][8 * r], b->qs, 8), memcpy(&o->qs[1][8 * r], b->qs + 8, 8);
            else /* quads, as Q4_0's below */
                for (int k = 0; k < 4; k++) memcpy(&o->qs[0][0] + 32 * k + 4 * r, b->qs + 4 * k, 4);
            continue;
        }
        case NIB_TYPE_Q5_1: {
            const block_q5_1 *b = (const block_q5_1 *)row + i;
            block_q5_1x8 *o = dst;
            d = &b->d, m = &b->m, qh = b->qh, qs = b->qs, dd = o->d, dm = o->m, dqh = o->qh, dqs = o->qs;
            break;
        }
        default: return;
        }
        dd[r] = *d;
        if (m) dm[r] = *m;
        if (order == Q4_KX8_PAIRS) {
            if (qh)
                for (int b = 0; b < 4; b++) dqh[b][r] = qh[b];
            memcpy(&dqs[0][8 * r], qs, 8), memcpy(&dqs[1][8 * r], qs + 8, 8);
            continue;
        }
        uint8_t *flat = &dqs[0][0];
        for (int k = 0; k < 4; k++) memcpy(flat + 32 * k + 4 * r, qs + 4 * k, 4);
        if (qh) {
            uint32_t fq, words[8];
            memcpy(&fq, qh, 4);
            memcpy(words, dqh, sizeof words);
            for (int k = 0; k < 4; k++)
                for (int h = 0; h < 2; h++)
                    for (int b = 0; b < 4; b++) {
                        const uint32_t bit = 1u << (4 * r + b);
                        words[2 * k + h] = (words[2 * k + h] & ~bit) | (((fq >> (16 * h + 4 * k + b)) & 1u) ? bit : 0);
                    }
            memcpy(dqh, words, sizeof words);
        }
    }
}

/* IQ4_XS (repack.h): the scales unbiased to bytes, the nibbles as Q4_0x8's */
void cpu_pack_iq4_xsx8(const uint8_t *w, size_t w_stride, int64_t i, block_iq4_xsx8 *dst) {
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        const block_iq4_xs *b = (const block_iq4_xs *)(w + (size_t)r * w_stride) + i;
        dst->d[r] = b->d;
        for (int j = 0; j < 8; j++) {
            const int lo = (b->scales_l[j / 2] >> (4 * (j % 2))) & 15, hi = (b->scales_h >> (2 * j)) & 3;
            dst->sc[j][r] = (int8_t)((lo | hi << 4) - 32);
            memcpy(&dst->qs[j][8 * r], b->qs + 16 * j, 8), memcpy(&dst->qs[j][64 + 8 * r], b->qs + 16 * j + 8, 8);
        }
    }
}

void cpu_quantize_q8_0s(const float *x, void *dst, int64_t n) {
    /* the Q8_0 quantizer's blocks, then widened in place from the last one
     * down (block b moves from 34b to 36b: nothing unread is overwritten) */
    cpu_kernel k;
    cpu_kernel_get(NIB_TYPE_Q4_0, &k);
    k.quantize(x, dst, n);
    for (int64_t b = n / 32 - 1; b >= 0; b--) {
        block_q8_0 q;
        memcpy(&q, (const uint8_t *)dst + (size_t)b * sizeof(block_q8_0), sizeof q);
        block_q8_0s *o = (block_q8_0s *)dst + b;
        int sum = 0;
        for (int j = 0; j < 32; j++) sum += q.qs[j];
        o->d = q.d, o->sum = (int16_t)sum;
        memcpy(o->qs, q.qs, sizeof o->qs);
    }
}

void cpu_quantize_q8_0u(const float *x, void *dst, int64_t n) {
    cpu_kernel k;
    cpu_kernel_get(NIB_TYPE_Q8_0, &k);
    k.quantize(x, dst, n);
    for (int64_t b = 0; b < n / 32; b++) {
        block_q8_0u *o = (block_q8_0u *)dst + b; /* the same bytes as block_q8_0 */
        for (int j = 0; j < 32; j++) o->qs[j] ^= 0x80;
    }
}

#define PACKER(name, type, order)                                           \
    static void name(const uint8_t *w, size_t s, int64_t i, void *d) {      \
        cpu_pack_legacy_x8(type, w, s, i, order, d);                        \
    }
PACKER(pack_q8_0x8, NIB_TYPE_Q8_0, Q4_KX8_PAIRS)
PACKER(pack_q4_0x8, NIB_TYPE_Q4_0, Q4_KX8_PAIRS)
PACKER(pack_q5_0x8, NIB_TYPE_Q5_0, Q4_KX8_PAIRS)
PACKER(pack_q4_1x8, NIB_TYPE_Q4_1, Q4_KX8_PAIRS)
PACKER(pack_q5_1x8, NIB_TYPE_Q5_1, Q4_KX8_PAIRS)
PACKER(pack_iq4_nlx8, NIB_TYPE_IQ4_NL, Q4_KX8_PAIRS)
PACKER(pack_mxfp4x8, NIB_TYPE_MXFP4, Q4_KX8_PAIRS)
PACKER(pack_q4_0x8_quads, NIB_TYPE_Q4_0, Q4_KX8_QUADS)
PACKER(pack_iq4_nlx8_quads, NIB_TYPE_IQ4_NL, Q4_KX8_QUADS)
PACKER(pack_mxfp4x8_quads, NIB_TYPE_MXFP4, Q4_KX8_QUADS)
PACKER(pack_q8_0x8_quads, NIB_TYPE_Q8_0, Q4_KX8_QUADS)
PACKER(pack_q5_0x8_quads, NIB_TYPE_Q5_0, Q4_KX8_QUADS)
PACKER(pack_q4_1x8_quads, NIB_TYPE_Q4_1, Q4_KX8_QUADS)
PACKER(pack_q5_1x8_quads, NIB_TYPE_Q5_1, Q4_KX8_QUADS)

static void pack_q5_Kx8(const uint8_t *w, size_t w_stride, int64_t i, void *dst) {
    cpu_pack_q5_Kx8(w, w_stride, i, dst);
}
static void pack_q6_Kx8(const uint8_t *w, size_t w_stride, int64_t i, void *dst) {
    cpu_pack_q6_Kx8(w, w_stride, i, dst);
}
static void pack_q5_Kx8q(const uint8_t *w, size_t w_stride, int64_t i, void *dst) {
    cpu_pack_q5_Kx8q(w, w_stride, i, dst);
}
static void pack_q6_Kx8q(const uint8_t *w, size_t w_stride, int64_t i, void *dst) {
    cpu_pack_q6_Kx8q(w, w_stride, i, dst);
}
static void pack_iq4_xsx8(const uint8_t *w, size_t w_stride, int64_t i, void *dst) {
    cpu_pack_iq4_xsx8(w, w_stride, i, dst);
}
static void pack_q4_Kx8_quads(const uint8_t *w, size_t w_stride, int64_t i, void *dst) {
    cpu_pack_q4_Kx8(w, w_stride, i, Q4_KX8_QUADS, dst);
}
static void pack_q4_Kx8_pairs(const uint8_t *w, size_t w_stride, int64_t i, void *dst) {
    cpu_pack_q4_Kx8(w, w_stride, i, Q4_KX8_PAIRS, dst);
}

/* One row per packed layout: the weight format, the SIMD level whose
 * kernels it replaces (the layout is used only when that is the active
 * level), rows a group, bytes of a group's super-block, the packer and the
 * kernel, the activation it reads if not the format's own, and the fewest
 * tokens it is used for. Q6_K's packed kernel is the faster one only with
 * several tokens: for one (decode) its decoding of the 6-bit codes is not
 * shared and the file layout's kernel runs 2.4x faster (4096 x 4096, 1
 * thread: 354 against 847 us), so decode keeps reading the file's rows. */
static const cpu_packed pack_rows[] = {
    {NIB_TYPE_Q4_K, NIB_SIMD_AVX2, Q4_KX8_ROWS, QK_K, sizeof(block_q4_Kx8), pack_q4_Kx8_quads, cpu_dot_q4_Kx8_q8_K_avx2, NULL, 0, 0, 1},
    {NIB_TYPE_Q4_K, NIB_SIMD_AVX512_VNNI, Q4_KX8_ROWS, QK_K, sizeof(block_q4_Kx8), pack_q4_Kx8_pairs,
     cpu_dot_q4_Kx8_q8_K_avx512, NULL, 0, 0, 1},
    {NIB_TYPE_Q5_K, NIB_SIMD_AVX512_VNNI, Q4_KX8_ROWS, QK_K, sizeof(block_q5_Kx8), pack_q5_Kx8,
     cpu_dot_q5_Kx8_q8_K_avx512, NULL, 0, 0, 1},
    {NIB_TYPE_Q6_K, NIB_SIMD_AVX512_VNNI, Q4_KX8_ROWS, QK_K, sizeof(block_q6_Kx8), pack_q6_Kx8,
     cpu_dot_q6_Kx8_q8_K_avx512, NULL, 0, 0, 2},
    {NIB_TYPE_Q6_K, NIB_SIMD_AVX2, Q4_KX8_ROWS, QK_K, sizeof(block_q6_Kx8q), pack_q6_Kx8q, cpu_dot_q6_Kx8q_q8_K_avx2,
     NULL, 0, 0, 2},
    {NIB_TYPE_Q5_K, NIB_SIMD_AVX2, Q4_KX8_ROWS, QK_K, sizeof(block_q5_Kx8q), pack_q5_Kx8q, cpu_dot_q5_Kx8q_q8_K_avx2,
     NULL, 0, 0, 1},
    {NIB_TYPE_Q4_0, NIB_SIMD_AVX512_VNNI, Q4_KX8_ROWS, 32, sizeof(block_q4_0x8), pack_q4_0x8,
     cpu_dot_q4_0x8_q8_0s_avx512, cpu_quantize_q8_0s, sizeof(block_q8_0s), 32, 1},
    {NIB_TYPE_Q5_0, NIB_SIMD_AVX512_VNNI, Q4_KX8_ROWS, 32, sizeof(block_q5_0x8), pack_q5_0x8,
     cpu_dot_q5_0x8_q8_0s_avx512, cpu_quantize_q8_0s, sizeof(block_q8_0s), 32, 1},
    {NIB_TYPE_Q4_0, NIB_SIMD_AVX2, Q4_KX8_ROWS, 32, sizeof(block_q4_0x8), pack_q4_0x8_quads,
     cpu_dot_q4_0x8_q8_0s_avx2, cpu_quantize_q8_0s, sizeof(block_q8_0s), 32, 1},
    {NIB_TYPE_Q5_0, NIB_SIMD_AVX2, Q4_KX8_ROWS, 32, sizeof(block_q5_0x8), pack_q5_0x8_quads,
     cpu_dot_q5_0x8_q8_0s_avx2, cpu_quantize_q8_0s, sizeof(block_q8_0s), 32, 1},
    {NIB_TYPE_Q4_1, NIB_SIMD_AVX2, Q4_KX8_ROWS, 32, sizeof(block_q4_1x8), pack_q4_1x8_quads,
     cpu_dot_q4_1x8_q8_1_avx2, NULL, 0, 0, 1},
    {NIB_TYPE_Q5_1, NIB_SIMD_AVX2, Q4_KX8_ROWS, 32, sizeof(block_q5_1x8), pack_q5_1x8_quads,
     cpu_dot_q5_1x8_q8_1_avx2, NULL, 0, 0, 1},
    {NIB_TYPE_Q8_0, NIB_SIMD_AVX512_VNNI, Q4_KX8_ROWS, 32, sizeof(block_q8_0x8), pack_q8_0x8,
     cpu_dot_q8_0x8_q8_0u_avx512, cpu_quantize_q8_0u, sizeof(block_q8_0u), 32, 1},
    {NIB_TYPE_Q8_0, NIB_SIMD_AVX2, Q4_KX8_ROWS, 32, sizeof(block_q8_0x8), pack_q8_0x8_quads, cpu_dot_q8_0x8_q8_0_avx2,
     NULL, 0, 0, 1},
    {NIB_TYPE_Q4_1, NIB_SIMD_AVX512_VNNI, Q4_KX8_ROWS, 32, sizeof(block_q4_1x8), pack_q4_1x8,
     cpu_dot_q4_1x8_q8_1_avx512, NULL, 0, 0, 1},
    {NIB_TYPE_Q5_1, NIB_SIMD_AVX512_VNNI, Q4_KX8_ROWS, 32, sizeof(block_q5_1x8), pack_q5_1x8,
     cpu_dot_q5_1x8_q8_1_avx512, NULL, 0, 0, 1},
    {NIB_TYPE_IQ4_NL, NIB_SIMD_AVX512_VNNI, Q4_KX8_ROWS, 32, sizeof(block_q4_0x8), pack_iq4_nlx8,
     cpu_dot_iq4_nlx8_q8_0s_avx512, cpu_quantize_q8_0s, sizeof(block_q8_0s), 32, 1},
    {NIB_TYPE_MXFP4, NIB_SIMD_AVX512_VNNI, Q4_KX8_ROWS, 32, sizeof(block_mxfp4x8), pack_mxfp4x8,
     cpu_dot_mxfp4x8_q8_0s_avx512, cpu_quantize_q8_0s, sizeof(block_q8_0s), 32, 1},
    {NIB_TYPE_IQ4_NL, NIB_SIMD_AVX2, Q4_KX8_ROWS, 32, sizeof(block_q4_0x8), pack_iq4_nlx8_quads,
     cpu_dot_iq4_nlx8_q8_0_avx2, NULL, 0, 0, 1},
    {NIB_TYPE_MXFP4, NIB_SIMD_AVX2, Q4_KX8_ROWS, 32, sizeof(block_mxfp4x8), pack_mxfp4x8_quads,
     cpu_dot_mxfp4x8_q8_0_avx2, NULL, 0, 0, 1},
    {NIB_TYPE_IQ4_XS, NIB_SIMD_AVX512_VNNI, Q4_KX8_ROWS, QK_K, sizeof(block_iq4_xsx8), pack_iq4_xsx8,
     cpu_dot_iq4_xsx8_q8_K_avx512, NULL, 0, 0, 1},
};

bool cpu_packed_get(nib_type wtype, cpu_packed *p) {
    return cpu_packed_get_at(wtype, nib_cpu_simd_level(), p);
}

bool cpu_packed_get_at(nib_type wtype, nib_simd_level level, cpu_packed *p) {
    for (size_t i = 0; i < sizeof pack_rows / sizeof pack_rows[0]; i++)
        if (pack_rows[i].type == wtype && pack_rows[i].level == level) {
            *p = pack_rows[i];
            return true;
        }
    return false;
}

int64_t nib_cpu_packed_min_tokens(nib_type wtype, nib_simd_level layout) {
    cpu_packed p;
    return cpu_packed_get_at(wtype, layout, &p) ? p.min_tokens : 0;
}

size_t nib_cpu_repack_bytes(nib_type wtype, int64_t n_in, int64_t n_out) {
    cpu_packed p;
    if (!cpu_packed_get(wtype, &p) || n_in <= 0 || n_out <= 0 || n_in % p.block_elems || n_out % p.rows) return 0;
    const uint64_t blocks = (uint64_t)(n_in / p.block_elems) * (uint64_t)(n_out / p.rows);
    if (blocks > SIZE_MAX / p.group_block_bytes) return 0;
    return (size_t)blocks * p.group_block_bytes;
}

typedef struct pack_job {
    cpu_packed p;
    const uint8_t *W;
    size_t w_row_bytes;
    int64_t nb, n_groups;
    uint8_t *dst;
} pack_job;

static void pack_groups(void *arg, int ith, int nth) {
    const pack_job *j = arg;
    for (int64_t g = j->n_groups * ith / nth; g < j->n_groups * (ith + 1) / nth; g++) {
        const uint8_t *w = j->W + (size_t)g * j->p.rows * j->w_row_bytes;
        uint8_t *d = j->dst + (size_t)g * (size_t)j->nb * j->p.group_block_bytes;
        for (int64_t i = 0; i < j->nb; i++) j->p.pack(w, j->w_row_bytes, i, d + (size_t)i * j->p.group_block_bytes);
    }
}

nib_status nib_cpu_repack(nib_pool *pool, nib_type wtype, const void *W, int64_t n_in, int64_t n_out, void *dst,
                          nib_simd_level *layout) {
    cpu_packed p;
    size_t w_row_bytes;
    if (!W || !dst || !layout || nib_cpu_repack_bytes(wtype, n_in, n_out) == 0 || !cpu_packed_get(wtype, &p) ||
        !nib_row_bytes(wtype, n_in, &w_row_bytes))
        return NIB_ERR_ARG;
    pack_job j = {p, W, w_row_bytes, n_in / p.block_elems, n_out / p.rows, dst};
    nib_pool_run(pool, pack_groups, &j);
    *layout = p.level;
    return NIB_OK;
}
