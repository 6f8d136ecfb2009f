/* The IQ codebooks on the device: copies of quant/iq_grids.h's tables, made
 * by the compiler, for the IQ1/IQ2/IQ3 kernels (dequant.cu, and the GEMV
 * dots of gemv_formats_extra.cuh).
 *
 * One source of truth: the tables are not written out a second time. A
 * constexpr function copies each host table element by element into a struct
 * at compile time, and that struct initialises a __device__ variable, so the
 * numbers land in the cubin's global data (nvcc rejects a __device__
 * variable that would need run-time initialisation; this one does not).
 *
 * Where they live, and why global memory rather than __constant__: together
 * they are 33 KB (IQ1_S's 2048 x 8 is 16 KB, IQ2_S's 1024 x 8 is 8 KB), half of
 * the 64 KB constant bank, and every lane of a warp looks up a different,
 * data-dependent point. The constant cache serves one address per cycle and
 * serialises the rest (up to 32 replays per lookup), while an L1-cached
 * global load (__ldg) serves a warp's 32 scattered 8-byte points in a few
 * wavefronts; after the first blocks of a row the tables stay resident in L1
 * (ggml-cuda keeps its grids in global memory for the same reason).
 *
 * Each point is 8 bytes (IQ1/IQ2) or 4 bytes (IQ3) and the structs are
 * 8-byte aligned, so a point is one uint2 (or uint32) load: two int8x4 words
 * ready for dp4a.
 *
 * The GEMV kernels copy their codebook from here into shared memory once a
 * block (iq_book below); the dequantize kernels read it here.
 *
 * Each .cu file that includes this gets its own copy (static: the build links
 * no relocatable device code); 33 KB per file of device data.
 */
#ifndef NIB_CUDA_IQ_GRIDS_DEV_CUH
#define NIB_CUDA_IQ_GRIDS_DEV_CUH

#include <stdint.h>

#include "quant/iq_grids.h"

template <class T, int N, int M>
struct alignas(8) iq_grid_dev {
    T v[N][M];
};

/* Compile-time copy of a host table (its elements are constant expressions). */
template <class T, int N, int M>
constexpr iq_grid_dev<T, N, M> iq_grid_copy(const T (&g)[N][M]) {
    iq_grid_dev<T, N, M> d{};
    for (int i = 0; i < N; i++)
        for (int j = 0; j < M; j++) d.v[i][j] = g[i][j];
    return d;
}

static __device__ const iq_grid_dev<uint8_t, 256, 8> iq2xxs_grid_dev = iq_grid_copy(iq2xxs_grid);
static __device__ const iq_grid_dev<uint8_t, 512, 8> iq2xs_grid_dev = iq_grid_copy(iq2xs_grid);
static __device__ const iq_grid_dev<uint8_t, 1024, 8> iq2s_grid_dev = iq_grid_copy(iq2s_grid);
static __device__ const iq_grid_dev<uint8_t, 256, 4> iq3xxs_grid_dev = iq_grid_copy(iq3xxs_grid);
static __device__ const iq_grid_dev<uint8_t, 512, 4> iq3s_grid_dev = iq_grid_copy(iq3s_grid);
static __device__ const iq_grid_dev<int8_t, 2048, 8> iq1s_grid_dev = iq_grid_copy(iq1s_grid);

/* The IQ2 lattices' points as prmt selectors (the tiled kernels' form,
 * gemv_tiled_iq.cuh): every magnitude of those codebooks is 8, 25 or 43, so
 * nibble k of a point's word holds magnitude k's code 0, 1 or 2. A sign word
 * sets bit 2 of the nibbles whose weight is negative; prmt over the register
 * pair {8, 25, 43, 0, -8, -25, -43, 0} then yields a word's 4 signed weights
 * in one instruction (iq2_sel_dot), where the byte masks took ~12. */
template <int N>
struct alignas(16) iq_sel_dev {
    uint32_t v[N];
};
constexpr uint32_t iq2_code(uint8_t m) { return m == 8 ? 0u : m == 25 ? 1u : 2u; }
template <int N>
constexpr iq_sel_dev<N> iq2_sel_copy(const uint8_t (&g)[N][8]) {
    iq_sel_dev<N> d{};
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 8; k++) d.v[i] |= iq2_code(g[i][k]) << (4 * k);
    return d;
}
/* The 8 sign bits of a group from the stored ones: SEVEN, s holds 7 and
 * the 8th makes the count of set bits even (quant/q_iq.c even_signs:
 * IQ2_XXS, IQ2_XS, IQ3_XXS); else all 8 are stored (IQ2_S, IQ3_S). */
template <bool SEVEN>
constexpr int iq_sign_bits(int s) {
    int ones = 0;
    for (int k = 0; k < 7; k++) ones += (s >> k) & 1;
    return SEVEN && (ones & 1) ? s | 0x80 : s;
}
/* sign words: bit 2 of nibble k where weight k is negative */
template <int N, bool SEVEN>
constexpr iq_sel_dev<N> iq_sign_sel_make() {
    iq_sel_dev<N> d{};
    for (int s = 0; s < N; s++)
        for (int k = 0; k < 8; k++)
            if ((iq_sign_bits<SEVEN>(s) >> k) & 1) d.v[s] |= 4u << (4 * k);
    return d;
}
/* IQ1_S/IQ1_M's points the same way: values -1, 0, 1 as codes 0, 1, 2 */
template <int N>
constexpr iq_sel_dev<N> iq1_sel_copy(const int8_t (&g)[N][8]) {
    iq_sel_dev<N> d{};
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 8; k++) d.v[i] |= (uint32_t)(g[i][k] + 1) << (4 * k);
    return d;
}
/* IQ3's signs as byte masks: 0xFF where the weight is negative, weights
 * 0-3 in .x, 4-7 in .y (iq_sign_bits) */
template <int N>
struct alignas(16) iq_mask_dev {
    uint2 v[N];
};
template <int N, bool SEVEN>
constexpr iq_mask_dev<N> iq_sign_mask_make() {
    iq_mask_dev<N> d{};
    for (int s = 0; s < N; s++)
        for (int k = 0; k < 8; k++)
            if ((iq_sign_bits<SEVEN>(s) >> k) & 1) (k < 4 ? d.v[s].x : d.v[s].y) |= 0xFFu << (8 * (k & 3));
    return d;
}
static __device__ const iq_sel_dev<256> iq2xxs_sel_dev = iq2_sel_copy(iq2xxs_grid);
static __device__ const iq_sel_dev<512> iq2xs_sel_dev = iq2_sel_copy(iq2xs_grid);
static __device__ const iq_sel_dev<1024> iq2s_sel_dev = iq2_sel_copy(iq2s_grid);
static __device__ const iq_sel_dev<128> iq_sign7_sel_dev = iq_sign_sel_make<128, true>();
static __device__ const iq_sel_dev<256> iq_sign8_sel_dev = iq_sign_sel_make<256, false>();
static __device__ const iq_sel_dev<2048> iq1s_sel_dev = iq1_sel_copy(iq1s_grid);
static __device__ const iq_mask_dev<128> iq_sign7_mask_dev = iq_sign_mask_make<128, true>();
static __device__ const iq_mask_dev<256> iq_sign8_mask_dev = iq_sign_mask_make<256, false>();

/* A point as words: 8 values as two int8x4 words (IQ1/IQ2), 4 as one (IQ3). */
template <class T, int N>
__device__ __forceinline__ uint2 iq_point8(const iq_grid_dev<T, N, 8> &g, unsigned i) {
    return __ldg((const uint2 *)g.v[i]);
}
template <int N>
__device__ __forceinline__ uint32_t iq_point4(const iq_grid_dev<uint8_t, N, 4> &g, unsigned i) {
    return __ldg((const uint32_t *)g.v[i]);
}

/* A codebook as a kernel reads it: straight from global memory through L1
 * (S = false, the above), or (S = true) from a copy in the block's shared
 * memory that prepare() makes once per block. P is a point (uint2 or
 * uint32_t), N the points. The shared copy trades L1's scattered-line
 * wavefronts (a warp's 32 points fall in up to 32 lines of a 2-16 KB table)
 * for bank conflicts among 32 banks. */
template <class P, int N, bool S>
struct iq_book {
    static constexpr bool shared = S;
    static __device__ __forceinline__ P *smem() {
        __shared__ P t[S ? N : 1];
        return t;
    }
    /* every thread of the block, before any divergence */
    static __device__ __forceinline__ void prepare(const void *g) {
        if constexpr (S) {
            for (int i = threadIdx.x; i < N; i += blockDim.x) smem()[i] = __ldg((const P *)g + i);
            __syncthreads();
        }
    }
    static __device__ __forceinline__ P at(const void *g, unsigned i) {
        if constexpr (S) return smem()[i];
        else return __ldg((const P *)g + i);
    }
};

#endif
