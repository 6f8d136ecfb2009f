/* The tiled GEMV's host side: which matrices take the t32 layout, the
 * conversion at load, and the launches (kernels: gemv_tiled.cuh).
 *
 * A tiled matrix keeps only the tiled copy; every device reader of it knows
 * the layout: the one-token GEMV here, prompt tokens as one-token launches
 * (nib_cuda_matmul with n_tok > 1), the prompt GEMM's decoder (dequant.cu).
 * A gate/up pair is tiled as one matrix of interleaved rows (gate i, up i),
 * so the GLU kernel's groups are single tiles: tiled apart, a group was a
 * gate tile and an up tile, and 7,168 such groups of the 8B's 4096 x 14336
 * pair over ~2,100 warps left the last warps 8 tiles where the mean is 6.8
 * (lab: 20.8 us against 19.3 interleaved). The pair kernel, the staged LM
 * head and the row lookup read the file's layout and are not given tiled
 * matrices (gemv.cu pair_get; get_rows refuses them). A fused Q/K whose V
 * has another format (the pair kernel's case) is tiled with its V or not at
 * all, and one token's Q/K/V then runs as one launch of both
 * (gemv_tiled_qkv.cu): Llama-3-8B Q4_K_M tg128 +2.9% (v96).
 *
 * Which: matrices of the formats in t32_table (every dp4a format but Q8_0).
 * Rows of a multiple of 2048 elements (G = 1, 2 or 4 rows a warp group):
 * short rows (gate, up, LM head), the about square ones (the output
 * projection, and a fused Q/K/V of the formats with t32_ops.qkv) of the
 * formats with t32_ops.sq, and the long rows of the formats with t32_ops.ks
 * when a group is 7 tiles (14336-wide downs: split over 7 warps; on
 * gemv_t32_seg they lost: 8B Q6_K -3.2%, Q4_K_M level, v77); long rows of
 * fewer tiles a group (8192-wide downs: 1) on gemv_t32_seg in groups of 7
 * tiles or more (8 rows: Llama-3.2-1B Q4_K_M +1.8%, v77). Other
 * multiples of 256 whose groups need 8, 16 or 32 rows (Qwen2.5-7B's 3584 and
 * 18944, 5120): every matrix, on gemv_t32_seg (a block a group), a fused
 * Q/K/V as above; Qwen2.5-7B tg128 Q4_K_M 475.9 -> 521.3 t/s, Q4_0 539.0 ->
 * 569.1, IQ4_XS 498.8 -> 536.7, and each role alone in the file's layout
 * lost (LM head -0.8%, output projection -1.0%, gate/up -4.6%, down -3.3%;
 * bench/gpu-decode-notes.md v76). Rows whose groups need 32 (Gemma 3 12B's
 * 3840, 27B's 5376) the same way: tg128 Q4_K_M 12B 247.3 -> 263.9 t/s, 27B
 * 132.1 -> 146.9 (v80). All of them with rows enough to fill the
 * device (t32_fills). The other formats' long rows keep the item
 * kernels' split K (which one by the 8B step's speed: gemv_tiled_kq.cu,
 * gemv_tiled_legacy.cu; bench/gpu-decode-notes.md v65-v67). Q4_K and Q6_K,
 * kernel lab, H200, PDL graph replay, item kernel -> tiled
 * (bench/gpu-decode-notes.md v55): gate/up GLU Q4_K 4096 x 2 x 14336 21.3 ->
 * 19.3 us, Q4_K 4096 x 4096 6.4 -> 5.5, Q6_K 4096 x 4096 8.9 -> 7.2, Q6_K
 * 14336 x 4096 20.2 -> 17.8, Q6_K 4096 x 128256 117.6 -> 102.5 (99% of copy
 * bandwidth), Q4_K 4096 x 128256 ~76 -> 71.8. */
#include <stdio.h>
#include <stdlib.h>

#include "cuda/cuda_internal.h"
#include "cuda/cuda_ops.h"
#include "cuda/gemv_tiled_ops.cuh"

/* the formats with a tiled form: gemv_tiled_kq.cu, gemv_tiled_iq.cu, gemv_tiled_legacy.cu */
extern const t32_ops t32_ops_q4_0, t32_ops_q4_K, t32_ops_q5_K, t32_ops_q6_K, t32_ops_q3_K, t32_ops_q2_K,
    t32_ops_iq4_xs, t32_ops_iq2_xxs, t32_ops_iq2_xs, t32_ops_iq2_s, t32_ops_iq3_xxs, t32_ops_iq3_s, t32_ops_iq1_s,
    t32_ops_iq1_m, t32_ops_tq2_0, t32_ops_q4_1, t32_ops_q5_0, t32_ops_q5_1, t32_ops_iq4_nl, t32_ops_mxfp4;
static const t32_ops *const t32_table[] = {
    &t32_ops_q4_0,    &t32_ops_q4_K,   &t32_ops_q5_K,  &t32_ops_q6_K,    &t32_ops_q3_K,
    &t32_ops_q2_K,    &t32_ops_iq4_xs, &t32_ops_iq2_xxs, &t32_ops_iq2_xs, &t32_ops_iq2_s,
    &t32_ops_iq3_xxs, &t32_ops_iq3_s,  &t32_ops_iq1_s, &t32_ops_iq1_m,   &t32_ops_tq2_0,
    &t32_ops_q4_1,   &t32_ops_q5_0,  &t32_ops_q5_1,    &t32_ops_iq4_nl,
    &t32_ops_mxfp4,
};

const t32_ops *t32_find(nib_type t) {
    for (size_t i = 0; i < sizeof t32_table / sizeof t32_table[0]; i++)
        if (t32_table[i]->type == t) return t32_table[i];
    return NULL;
}

/* ---- the layout ------------------------------------------------------------------- */

/* Enough row groups to fill the device: a warp takes a group at a time, so
 * a matrix of few rows leaves most multiprocessors idle where the item
 * kernels split its rows over more warps. Gemma 3 270M (its 2048 -> 640
 * downs tiled: 160 groups) lost 5% (tg128 1,723 -> 1,627-1,637 t/s); the
 * 8B's 4096-row output projections (2,048 groups) gained. At least
 * T32_MIN_WARPS_SM groups a multiprocessor (the split kernel: a block, 7
 * warps, a group). */
#define T32_MIN_WARPS_SM 8
static bool t32_fills(const nib_cuda_weight *w, int g, int kernel, bool glu) {
    const int64_t n_groups = CEIL_DIV(w->n_out * (glu ? 2 : 1), g);
    return n_groups >= (int64_t)w->sms * (kernel != T32_WARPS ? 1 : T32_MIN_WARPS_SM);
}

/* What a matrix is read as: one matrix, a fused Q/K/V, a gate/up pair, a
 * V beside its fused Q/K (gemv_t32_qkv2: one launch, so it need not fill
 * the device alone) */
typedef enum t32_role { T32_MATRIX, T32_QKV, T32_PAIR, T32_BESIDE } t32_role;

/* Which layout a matrix takes (rows a group *g, *kernel), or false: the file's. */
static bool t32_shape(const nib_cuda_weight *w, t32_role role, int *g, int *kernel) {
    const bool pair = role == T32_PAIR;
    if (getenv("NIB_CUDA_TILED") && getenv("NIB_CUDA_TILED")[0] == '0') return false;
    const t32_ops *o = t32_find(w->type);
    if (!o || w->n_in % 256 != 0 || w->n_in > 30720) return false; /* activation fits 48 KB */
    const int nb = (int)(w->n_in / 256);
    *g = t32_group_rows(nb);
    *kernel = T32_WARPS;
    if (!*g) return false;
    const int t = *g * nb / 32;
    if (role == T32_BESIDE) return *g <= 4; /* gemv_t32's groups, as the Q/K beside it */
    if (*g > 4) { /* 8-, 16- or 32-row groups: every role but a Q/K/V the format keeps apart */
        *kernel = T32_SEG;
        return role != T32_QKV || o->qkv;
    }
    const bool long_rows = w->n_in >= 3 * w->n_out && w->n_in >= 4096; /* gemv.cu plan_q8's split-K rule */
    if (pair) {
        if (*g == 1) *g = 2; /* whole (gate, up) pairs a group */
        return true;
    }
    if (long_rows) {
        if (t < T32_KS_TILES) { /* a group of few tiles (8192: 1): groups of at least 7 on gemv_t32_seg */
            while (*g < 16 && *g * nb / 32 < T32_KS_TILES) *g *= 2;
            *kernel = T32_SEG;
            return true;
        }
        if (!(o->ks && *g == 4 && t == T32_KS_TILES)) return false;
        *kernel = T32_SPLIT;
        return true;
    }
    if (role == T32_QKV) return o->qkv;
    const bool square = 2 * w->n_out >= w->n_in && w->n_out <= 2 * w->n_in; /* the output projection */
    return !square || o->sq;
}

/* n_src matrices of w's shape into one new tiled allocation *out of *bytes;
 * *out NULL (and NIB_OK) when the device has no room for it while the file's
 * layout is still there: that layout stays */
static nib_status t32_build(const nib_cuda_weight *w, const uint8_t *src0, const uint8_t *src1, int n_src, int g,
                            uint8_t **out, size_t *bytes, nib_error *err) {
    const int nb = (int)(w->n_in / 256), tile = t32_find(w->type)->tile;
    const size_t n_blocks = (size_t)w->n_out * nb * n_src;
    /* whole groups: gemv_t32_seg loads every tile of its last group (zeros past the rows) */
    const size_t group = (size_t)g * nb, tiles = (n_blocks + group - 1) / group * group / 32;
    const int stride = (int)(w->row_bytes / nb); /* a tiled block's device bytes: 144, Q6_K's 224-byte slot, 8 x 18 */
    *out = NULL;
    *bytes = tiles * tile;
    uint8_t *dst = NULL;
    const cudaError_t e = cudaMalloc(&dst, *bytes + 16);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        return NIB_OK;
    }
    if (!CUDA_OK(e, "tile a weight", err)) return err ? err->status : NIB_ERR_IO;
    const size_t used = (n_blocks + 31) / 32 * tile; /* t32_tile writes the tiles that hold blocks */
    if (!CUDA_OK(cudaMemset(dst + used, 0, *bytes - used), "tile a weight", err)) {
        cudaFree(dst);
        return err ? err->status : NIB_ERR_IO;
    }
    const unsigned grid = (unsigned)(tiles < 4096 ? tiles : 4096);
    t32_find(w->type)->tile_matrix(src0, src1, n_src, dst, n_blocks, nb, stride, grid);
    if (!CUDA_OK(cudaGetLastError(), "t32_tile", err) || !CUDA_OK(cudaMemset(dst + *bytes, 0, 16), "tile a weight", err) ||
        !CUDA_OK(cudaDeviceSynchronize(), "t32_tile", err)) {
        cudaFree(dst);
        return err ? err->status : NIB_ERR_IO;
    }
    *out = dst;
    return NIB_OK;
}

static nib_status t32_tile_one(nib_cuda_weight *w, t32_role role, bool *tiled, nib_error *err) {
    *tiled = false;
    if (!w) return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_weight_tile: NULL weight");
    if (w->t32_g) {
        *tiled = !w->t32_pair;
        return NIB_OK;
    }
    int g = 0, kernel = T32_WARPS;
    if (!t32_shape(w, role, &g, &kernel) || (role != T32_BESIDE && !t32_fills(w, g, kernel, false))) return NIB_OK;
    if (!t32_find(w->type)->plan(w, g, kernel, false, err))
        return err ? err->status : NIB_ERR_IO;
    if (!w->t32_grid) return NIB_OK;
    uint8_t *dst = NULL;
    size_t bytes = 0;
    const nib_status s = t32_build(w, w->dev, w->dev, 1, g, &dst, &bytes, err);
    if (s != NIB_OK || !dst) return s;
    cudaFree(w->dev);
    const t32_ops *o = t32_find(w->type);
    w->dev = dst, w->bytes = bytes, w->t32_g = g, w->t32_kernel = kernel;
    w->t32_tile = o->tile;
    *tiled = true;
    if (role == T32_MATRIX && o->norm_plan && !o->norm_plan(w, err)) return err ? err->status : NIB_ERR_IO;
    return NIB_OK;
}

extern "C" nib_status nib_cuda_weight_tile(nib_cuda_weight *w, bool *tiled, nib_error *err) {
    return t32_tile_one(w, T32_MATRIX, tiled, err);
}

extern "C" nib_status nib_cuda_weight_tile_qkv(nib_cuda_weight *w, bool *tiled, nib_error *err) {
    return t32_tile_one(w, T32_QKV, tiled, err);
}

/* Only where both matrices take the layout and one launch has an instance
 * for their formats and groups; so a Q/K is never tiled without its V (the
 * pair kernel reads the file's layout, gemv.cu). */
extern "C" nib_status nib_cuda_weight_tile_qkv_pair(nib_cuda_weight *qk, nib_cuda_weight *v, bool *tiled,
                                                    nib_error *err) {
    *tiled = false;
    if (!qk || !v) return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_weight_tile_qkv_pair: NULL weight");
    if (qk->t32_g || v->t32_g) {
        *tiled = qk->t32_v_grid > 0;
        return NIB_OK;
    }
    int g = 0, gv = 0, kernel = T32_WARPS, kv = T32_WARPS;
    if (qk->n_in != v->n_in || !t32_shape(qk, T32_QKV, &g, &kernel) || kernel != T32_WARPS ||
        !t32_fills(qk, g, kernel, false) || !t32_shape(v, T32_BESIDE, &gv, &kv) || gv != g ||
        !t32_qkv2_has(qk->type, v->type, g))
        return NIB_OK;
    if (!t32_qkv2_plan(qk, v, g, err)) return err ? err->status : NIB_ERR_IO;
    if (!qk->t32_v_grid) return NIB_OK; /* the one launch does not fit the device */
    bool a = false, b = false;
    nib_status s = t32_tile_one(qk, T32_QKV, &a, err);
    if (s == NIB_OK && a) s = t32_tile_one(v, T32_BESIDE, &b, err);
    *tiled = s == NIB_OK && a && b;
    if (!*tiled) qk->t32_qk_grid = qk->t32_v_grid = 0; /* no room for one: each its own launches */
    return s;
}

extern "C" nib_status nib_cuda_weight_tile_glu(nib_cuda_weight *gate, nib_cuda_weight *up, bool *tiled,
                                               nib_error *err) {
    *tiled = false;
    if (!gate || !up) return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_weight_tile_glu: NULL weight");
    if (gate->t32_g || up->t32_g) {
        *tiled = gate->t32_pair == 1 && up->t32_pair == 2 && gate->dev == up->dev;
        return NIB_OK;
    }
    int g = 0, kernel = T32_WARPS;
    if (gate->type != up->type || gate->n_in != up->n_in || gate->n_out != up->n_out ||
        !t32_shape(gate, T32_PAIR, &g, &kernel) || !t32_fills(gate, g, kernel, true))
        return NIB_OK;
    if (!t32_find(gate->type)->plan(gate, g, kernel, true, err))
        return err ? err->status : NIB_ERR_IO;
    if (!gate->t32_grid) return NIB_OK;
    uint8_t *dst = NULL;
    size_t bytes = 0;
    const nib_status s = t32_build(gate, gate->dev, up->dev, 2, g, &dst, &bytes, err);
    if (s != NIB_OK || !dst) return s;
    cudaFree(gate->dev);
    cudaFree(up->dev);
    gate->dev = up->dev = dst;
    gate->bytes = bytes / 2, up->bytes = bytes - bytes / 2; /* the device bytes, shared out */
    gate->t32_g = up->t32_g = g;
    gate->t32_kernel = up->t32_kernel = kernel;
    gate->t32_tile = up->t32_tile = t32_find(gate->type)->tile;
    up->t32_grid = gate->t32_grid, up->t32_warps = gate->t32_warps, up->t32_two = gate->t32_two;
    gate->t32_pair = 1, up->t32_pair = 2;
    *tiled = true;
    return NIB_OK;
}

/* one token at a time: a prompt's rows each read the matrix (the GEMM takes
 * chunks of GEMM_MIN_TOKENS and more) */
cudaError_t cuda_t32_matmul(const nib_cuda_weight *w, const act_q8 &a, float *y, int add, int act,
                            unsigned long long *best, cudaStream_t st) {
    const t32_ops *o = t32_find(w->type);
    if (!o) return cudaErrorInvalidValue; /* not reached: only tiled matrices come here */
    const auto launch = o->launch;
    for (int t = 0; t < a.n_tok; t++) {
        act_q8 at = a;
        at.xq = a.xq + (size_t)t * a.qs_stride, at.xds = a.xds + (size_t)t * (w->n_in / 32), at.n_tok = 1;
        float *yt = y + (size_t)t * w->n_out;
        const cudaError_t e = launch(w, at, yt, add, act, best, st);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

/* ---- the output projection with the FFN's norm (gemv_t32's NORM) ------------------ */

static_assert(ACT_SCALE_SLOTS == NIB_CUDA_ACT_SCALE_SLOTS, "cuda.h's count of an activation trailer's parts");

extern "C" bool nib_cuda_matmul_norm_ok(const nib_cuda_weight *w) { return w && w->t32_norm; }

/* gemv_t32's gate/up instances read all of a trailer's parts (act_rs_load4) */
extern "C" bool nib_cuda_glu_takes_norm(const nib_cuda_weight *gate) {
    return gate && gate->t32_pair == 1 && gate->t32_kernel == T32_WARPS;
}

extern "C" nib_status nib_cuda_matmul_norm(const nib_cuda_weight *w, const void *act, float *y, const float *norm_w,
                                           float eps, void *act_out, void *stream, nib_error *err) {
    if (!w || !act || !y || !norm_w || !act_out)
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_matmul_norm: NULL argument");
    if (!w->t32_norm)
        return nib_error_set(err, NIB_ERR_UNSUPPORTED,
                             "nib_cuda_matmul_norm: %s %lld x %lld has no fused norm (see nib_cuda_matmul_norm_ok)",
                             nib_type_name(w->type), (long long)w->n_in, (long long)w->n_out);
    uint8_t *out = (uint8_t *)act_out;
    t32_norm nrm;
    nrm.w = norm_w;
    nrm.qs = (int8_t *)out;
    nrm.ds = (float2 *)(out + cuda_act_qs_stride(w->n_out));
    nrm.sc = (act_scale *)(out + cuda_act_scale_off(w->n_out, 1));
    nrm.eps = eps;
    const cudaError_t e =
        t32_find(w->type)->launch_norm(w, cuda_act_view(act, w->n_in, 1), y, nrm, (cudaStream_t)stream);
    char what[128];
    snprintf(what, sizeof what, "launch of gemv_t32 with the norm (%s %lld x %lld)", nib_type_name(w->type),
             (long long)w->n_in, (long long)w->n_out);
    return cuda_launch_status(e, what, err);
}
