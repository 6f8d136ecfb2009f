/* Packing weights into the CPU kernels' own layouts (cpu/repack.h), and the
 * table of which formats have one.
 *
 * To add a packed layout: define its block in repack.h, write its pack
 * function here and its kernel in the SIMD file of its family, and add a row
 * to pack_rows; tests/test_cpu.c walks the table. */
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

/* Q4_K: the scales and minimums unpacked to bytes,
 * the quants regrouped per repack.h. Row r's super-block i is at
 * w + r * w_stride + i * 144. */
void cpu_pack_q4_Kx8(const uint8_t *w, size_t w_stride, int64_t i, q4_Kx8_order order, block_q4_Kx8 *dst) {
    for (int r = 0; r < Q4_KX8_ROWS; r++) {
        const block_q4_K *x = (const block_q4_K *)(w + (size_t)r * w_stride) + i;
        dst->d[r] = x->d, dst->dmin[r] = x->dmin;
        for (int j = 0; j < 8; j++) unpack_scale_min(x->scales, j, &dst->sc[j][r], &dst->m[j / 2][r][j % 2]);
        for (int j = 0; j < 8; j++) {
            /* sub-block j: the low (j even) or high (j odd) nibbles of qs[32 (j/2) ..] */
            const uint8_t *q = x->qs + 32 * (j / 2);
            const int sh = 4 * (j % 2);
            for (int k = 0; k < 4; k++)
                for (int e = 0; e < 4; e++) {
                    const uint8_t lo = (q[4 * k + e] >> sh) & 0x0F, hi = (q[16 + 4 * k + e] >> sh) & 0x0F;
                    dst->qs[j][q4_Kx8_qs_byte(order, k, r, e)] = (uint8_t)(lo | (hi << 4));
                }
        }
    }
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
 * kernel. */
static const cpu_packed pack_rows[] = {
    {NIB_TYPE_Q4_K, NIB_SIMD_AVX2, Q4_KX8_ROWS, QK_K, sizeof(block_q4_Kx8), pack_q4_Kx8_quads, cpu_dot_q4_Kx8_q8_K_avx2},
    {NIB_TYPE_Q4_K, NIB_SIMD_AVX512_VNNI, Q4_KX8_ROWS, QK_K, sizeof(block_q4_Kx8), pack_q4_Kx8_pairs,
     cpu_dot_q4_Kx8_q8_K_avx512},
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
