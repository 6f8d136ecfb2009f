/* One token's Q/K/V projection leaving RoPE and the KV-cache stores done
 * (gemv_t32's t32_rope epilogue, gemv_tiled.cuh), so the step has no
 * qkv_rope kernel: a fused Q/K/V of one format on its own grid (the
 * format's t32_ops.launch_rope), or a fused Q/K with a V of another format
 * tiled beside it, both in one launch (gemv_t32_qkv2, the table below: the
 * layers of llama.cpp's Q4_K_M mix whose V is Q6_K, half of Llama-3-8B's). */
#include <stdio.h>

#include "cuda/cuda_internal.h"
#include "cuda/cuda_ops.h"
#include "cuda/gemv_tiled_ops.cuh"

/* gemv_t32_qkv2's warps a block: Q4_K's gemv_t32 block (T32_OPS); its V
 * part, one tile a warp, keeps Q6_K at 122 registers with it (ptxas -v,
 * sm_90), two blocks a multiprocessor */
#define QKV2_WARPS 8

typedef struct qkv2_row {
    nib_type a, b; /* the Q/K's format, the V's */
    int g;         /* rows a group of both */
    const char *kernel;
    bool (*per_sm)(int n_in, int *per_sm, nib_error *err);
    cudaError_t (*launch)(const nib_cuda_weight *qk, const nib_cuda_weight *v, const act_q8 &a, const t32_rope &r,
                          const t32_rope_xn *xn, cudaStream_t st);
} qkv2_row;

template <class FA, class FB>
static int qkv2_smem(int n_in) {
    const int sa = t32_smem_bytes<FA>(n_in), sb = t32_smem_bytes<FB>(n_in);
    return sa > sb ? sa : sb;
}
/* the blocks a multiprocessor of the fewer of the two instances */
template <class FA, class FB, int G>
static bool qkv2_per_sm(int n_in, int *per_sm, nib_error *err) {
    int a = 0, b = 0;
    const int smem = qkv2_smem<FA, FB>(n_in);
    if (!t32_per_sm(gemv_t32_qkv2<FA, FB, QKV2_WARPS, G, t32_rope>, 32 * QKV2_WARPS, smem, &a, err) ||
        !t32_per_sm(gemv_t32_qkv2<FA, FB, QKV2_WARPS, G, t32_rope_xn>, 32 * QKV2_WARPS, smem, &b, err))
        return false;
    *per_sm = a < b ? a : b;
    return true;
}
template <class FA, class FB, int G, class E>
static cudaError_t qkv2_launch_e(const nib_cuda_weight *qk, const nib_cuda_weight *v, const act_q8 &a, const E &r,
                                 cudaStream_t st) {
    return pdl_launch(gemv_t32_qkv2<FA, FB, QKV2_WARPS, G, E>, dim3((unsigned)(qk->t32_qk_grid + qk->t32_v_grid)),
                      dim3(32 * QKV2_WARPS), qkv2_smem<FA, FB>((int)qk->n_in), st, qk->dev, (int)qk->n_out, v->dev,
                      (int)v->n_out, a, (int)qk->n_in, qk->t32_qk_grid, r);
}
template <class FA, class FB, int G>
static cudaError_t qkv2_launch(const nib_cuda_weight *qk, const nib_cuda_weight *v, const act_q8 &a,
                               const t32_rope &r, const t32_rope_xn *xn, cudaStream_t st) {
    return xn ? qkv2_launch_e<FA, FB, G>(qk, v, a, *xn, st) : qkv2_launch_e<FA, FB, G>(qk, v, a, r, st);
}
template <class FA, class FB, int G>
constexpr qkv2_row qkv2_of(nib_type a, nib_type b, const char *kernel) {
    return {a, b, G, kernel, qkv2_per_sm<FA, FB, G>, qkv2_launch<FA, FB, G>};
}
static const qkv2_row qkv2_rows[] = {
    qkv2_of<t32_q4_K, t32_q6_K, 2>(NIB_TYPE_Q4_K, NIB_TYPE_Q6_K, "gemv_t32_qkv2<Q4_K, Q6_K, 2-row groups>"),
};

static const qkv2_row *qkv2_get(nib_type a, nib_type b, int g) {
    for (size_t i = 0; i < sizeof qkv2_rows / sizeof qkv2_rows[0]; i++)
        if (qkv2_rows[i].a == a && qkv2_rows[i].b == b && qkv2_rows[i].g == g) return &qkv2_rows[i];
    return NULL;
}

bool t32_qkv2_has(nib_type a, nib_type b, int g) { return qkv2_get(a, b, g) != NULL; }

/* A warp a V group of one tile, and the rest of the device's blocks
 * (at most a block per 8 Q/K groups) for the Q/K part: Llama-3-8B's 4096 x
 * 1024 Q6_K V takes 64 blocks and its 4096 x 5120 Q4_K Q/K 200 of a
 * 132-multiprocessor device's 264, so every warp takes one or two groups, as
 * on the layers whose fused Q/K/V is one matrix. */
bool t32_qkv2_plan(nib_cuda_weight *qk, const nib_cuda_weight *v, int g, nib_error *err) {
    qk->t32_qk_grid = qk->t32_v_grid = 0;
    const qkv2_row *r = qkv2_get(qk->type, v->type, g);
    if (!r || qk->n_in != v->n_in || g * (qk->n_in / 256) != 32) return true; /* the V part: a tile a group */
    int per_sm = 0;
    if (!r->per_sm((int)qk->n_in, &per_sm, err)) return false;
    const int64_t most = (int64_t)qk->sms * per_sm, gb = CEIL_DIV(CEIL_DIV(v->n_out, g), QKV2_WARPS);
    int64_t ga = CEIL_DIV(CEIL_DIV(qk->n_out, g), QKV2_WARPS);
    if (ga > most - gb) ga = most - gb;
    if (ga < 1 || !t32_rope_fits(qk->n_out, g, ga * QKV2_WARPS)) return true;
    qk->t32_qk_grid = (int)ga, qk->t32_v_grid = (int)gb;
    return true;
}

/* ---- the launch ------------------------------------------------------------------ */

static bool args_ok(const nib_cuda_qkv_args *a) {
    return a->n_tok == 1 && !a->neox && !a->bq && !a->bk && !a->bv && !a->q_norm && !a->k_norm && a->inv_freq &&
           a->q_out && a->k_cache && a->v_cache && a->pos && a->hd_k >= 2 && a->hd_k % 2 == 0 && a->hd_v % 2 == 0 &&
           a->n_rot >= 0 && a->n_rot <= a->hd_k && a->n_rot % 2 == 0;
}

/* wv as t32_qkv2_plan took it beside w: the V part a tile a warp */
static const qkv2_row *beside(const nib_cuda_weight *w, const nib_cuda_weight *wv) {
    if (!w->t32_v_grid || wv->t32_g != w->t32_g || wv->t32_pair || wv->t32_kernel != T32_WARPS ||
        wv->n_in != w->n_in || CEIL_DIV(CEIL_DIV(wv->n_out, w->t32_g), QKV2_WARPS) != w->t32_v_grid)
        return NULL;
    return qkv2_get(w->type, wv->type, w->t32_g);
}

extern "C" bool nib_cuda_matmul_qkv_rope_ok(const nib_cuda_weight *w, const nib_cuda_weight *wv,
                                            const nib_cuda_qkv_args *a) {
    if (!w || !a || !w->t32_g || w->t32_pair || w->t32_kernel != T32_WARPS || !args_ok(a)) return false;
    const int64_t n_q = (int64_t)a->n_head * a->hd_k, n_k = (int64_t)a->n_head_kv * a->hd_k,
                  n_v = (int64_t)a->n_head_kv * a->hd_v;
    if (a->norm_x && (!a->norm_w || ((uintptr_t)a->norm_x & 15) || ((uintptr_t)a->norm_w & 15) || w->n_in % 1024 ||
                      w->n_in > 1024 * T32_XN_PASS))
        return false; /* t32_fill_xn: 16-byte loads, 4 passes of 1024 at most */
    if (wv) return beside(w, wv) && w->n_out == n_q + n_k && wv->n_out == n_v; /* both instances: t32_qkv2_plan */
    const t32_ops *o = t32_find(w->type);
    return o && o->launch_rope && (!a->norm_x || o->rope_xn) &&
           t32_rope_fits(w->n_out, w->t32_g, (int64_t)w->t32_grid * w->t32_warps) && w->n_out == n_q + n_k + n_v;
}

extern "C" nib_status nib_cuda_matmul_qkv_rope(const nib_cuda_weight *w, const nib_cuda_weight *wv, const void *act,
                                               const nib_cuda_qkv_args *a, void *stream, nib_error *err) {
    if (!w || !a || (!act && !a->norm_x))
        return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_matmul_qkv_rope: NULL argument");
    if (!nib_cuda_matmul_qkv_rope_ok(w, wv, a))
        return nib_error_set(err, NIB_ERR_UNSUPPORTED,
                             "nib_cuda_matmul_qkv_rope: %s %lld x %lld%s%s with %d+2x%d heads of %d/%d (%d rotated, "
                             "%s, %d tokens) has no fused RoPE (see nib_cuda_matmul_qkv_rope_ok)",
                             nib_type_name(w->type), (long long)w->n_in, (long long)w->n_out, wv ? " and V " : "",
                             wv ? nib_type_name(wv->type) : "", a->n_head, a->n_head_kv, a->hd_k, a->hd_v, a->n_rot,
                             a->neox ? "neox" : "adjacent pairs", a->n_tok);
    t32_rope r;
    r.q = a->q_out;
    r.k_cache = (__half *)a->k_cache, r.v_cache = (__half *)a->v_cache;
    r.pos = a->pos;
    r.inv_freq = a->inv_freq;
    r.rope_scale = a->rope_scale;
    r.n_q = a->n_head * a->hd_k, r.n_k = a->n_head_kv * a->hd_k, r.n_v = a->n_head_kv * a->hd_v;
    r.hd = a->hd_k, r.n_rot = a->n_rot;
    t32_rope_xn xn;
    if (a->norm_x) {
        static_cast<t32_rope &>(xn) = r;
        xn.x = a->norm_x, xn.w = a->norm_w, xn.eps = a->norm_eps;
    }
    const act_q8 av = act ? cuda_act_view(act, w->n_in, 1) : act_q8{};
    char what[160];
    cudaError_t e;
    if (wv) {
        const qkv2_row *row = beside(w, wv);
        e = row->launch(w, wv, av, r, a->norm_x ? &xn : NULL, (cudaStream_t)stream);
        snprintf(what, sizeof what, "launch of %s%s (%lld x %lld and %lld)", row->kernel,
                 a->norm_x ? " with the norm" : "", (long long)w->n_in, (long long)w->n_out, (long long)wv->n_out);
    } else {
        e = t32_find(w->type)->launch_rope(w, av, r, a->norm_x ? &xn : NULL, (cudaStream_t)stream);
        snprintf(what, sizeof what, "launch of gemv_t32 with RoPE%s (%s %lld x %lld)", a->norm_x ? " and the norm" : "",
                 nib_type_name(w->type), (long long)w->n_in, (long long)w->n_out);
    }
    return cuda_launch_status(e, what, err);
}
