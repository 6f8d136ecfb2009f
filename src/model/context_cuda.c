/* The forward step on the GPU, mirroring context.c's CPU step op for op.
 *
 * One step for n tokens (a prompt chunk, or one token in decode):
 *   embedding rows (dequantized on the device from the token ids in device memory)
 *   per layer:
 *     [residual add +] RMSNorm + quantize        one kernel (nib_cuda_add_norm), or for one token
 *                                                in the fused Q/K/V below
 *     Q, K, V projections                        one matmul (fused at load), or Q/K fused and V of
 *                                                another format, as one launch where a pair kernel fits
 *     bias, QK-norm, RoPE, KV-cache store (f16)  one kernel (nib_cuda_qkv_rope), or for one token
 *                                                without bias or QK-norm in the tiled projection's
 *                                                epilogue (nib_cuda_matmul_qkv_rope)
 *     attention                                  split-K flash decoding (nib_cuda_attention), which
 *                                                also quantizes its output for the projection
 *     output projection                          residual add fused (y += W x) unless a post-norm follows
 *     residual add + RMSNorm + quantize          one kernel
 *     gate and up with the GLU epilogue          one kernel
 *     down projection                            residual add fused unless a post-norm follows
 *     or, a mixture-of-experts layer: the router's GEMV, its choice (moe_route), the chosen
 *     experts' gate and up products over every token's slots in one launch each, the GLU,
 *     the down products, their weighted sum added to the residual (cuda_moe.h)
 *   final RMSNorm (last row), LM head, softcap, argmax on the device.
 *
 * A prompt chunk of at least GEMM_MIN_TOKENS tokens runs its projections as
 * cuBLAS GEMMs on weights decoded per matrix (cuda_gemm.h) where cuBLAS
 * loads, else as the batched GEMV like shorter chunks.
 *
 * Decode (one token) is captured once per context bucket (the attention's
 * split grid depends on the bound max_len) and replayed: the token id and
 * position reach the device by a captured copy from pinned memory, the
 * argmax leaves by another, and the host waits once per token to read it.
 * Nothing on that path allocates. */
#include "model/context_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cuda/cuda.h"
#include "cuda/cuda_attention.h"
#include "cuda/cuda_dequant.h"
#include "cuda/cuda_gemm.h"
#include "cuda/cuda_moe.h"
#include "cuda/cuda_ops.h"
#include "cuda/cuda_sample.h"

typedef struct gpu_layer {
    nib_cuda_weight *wq, *wk, *wv, *wo, *gate, *up, *down;
    /* Q, K (and V) of one format uploaded as one matrix: one launch instead
     * of two or three; wq/wk (and wv) are NULL then. n_fused: 0, 2 or 3 */
    nib_cuda_weight *wqkv;
    int n_fused;
    float *attn_norm, *ffn_norm;       /* (n_embd) */
    float *post_attn_norm, *post_ffn_norm;  /* (n_embd) or NULL */
    float *q_norm, *k_norm;            /* (hd_k) or NULL */
    float *bq, *bk, *bv;               /* or NULL */
    bool attn_defer, ffn_defer;        /* one token's norm may defer its 1/rms to the projections (defer_ok) */
    /* a mixture-of-experts layer (gate, up and down NULL then): the router
     * and each 3-D expert tensor as one matrix of n_expert * rows rows */
    nib_cuda_weight *router, *gate_exps, *up_exps, *down_exps;
} gpu_layer;

/* decode graphs: bucket b covers positions < 256 << b */
#define GPU_BUCKET_MIN 256
#define GPU_MAX_BUCKETS 24

/* pinned/device io block of int32: [0] position of the step's first token,
 * [2..3] the greedy pick's 64-bit key (nib_cuda_matmul_argmax; the host
 * zeroes it, and the step's first copy carries the zero to the device),
 * [4..7] the sampling parameters (nib_cuda_sample_params), [8..9] the
 * sampling uniform (a double), [10] the sampled id, [12..] the step's
 * tokens. One copy in before the step, one out (key and id) after it. */
#define IO_POS 0
#define IO_KEY 2
#define IO_SMP 4
#define IO_U 8
#define IO_ID 10
#define IO_TOK 12

struct nib_gpu {
    const nib_model *m;
    int32_t n_ctx, n_batch;
    void *stream;
    gpu_layer *layers;               /* (n_layer) */
    nib_cuda_weight *tok_embd, *output;  /* output == tok_embd when tied */
    float *output_norm;
    double *inv_freq;                /* (n_layer, n_rot/2) RoPE frequencies, from the host's pow() as the CPU's */
    uint16_t *k_cache, *v_cache;     /* (n_layer, n_ctx, n_head_kv * hd) f16 */
    float *x, *xn, *o;               /* (n_batch, n_embd) */
    float *q, *k, *v, *att;          /* (n_batch, heads * hd) */
    float *qkv;                      /* (n_batch, n_q + n_k + n_v) output of a fused projection */
    float *h, *tmp;                  /* (n_batch, n_ff) */
    float *logits;                   /* (n_vocab) */
    void *act;                       /* quantized activations, the widest of the step */
    void *act_ffn;                   /* one token's FFN input when the output projection normed it */
    /* mixtures of experts, k chosen a token: the router's logits (n_batch, n_expert), the choices
     * and their weights (n_batch, k), the slots' gate/h and up (n_batch * k, n_ff_exp), their down
     * products (n_batch * k, n_embd) and h quantized */
    float *moe_logits, *moe_w, *moe_g, *moe_u, *moe_y;
    int32_t *moe_ids;
    void *moe_act;
    void *attn_scratch;
    void *sample_scratch;            /* nib_cuda_sample's */
    int32_t *io_dev, *io_host;       /* (IO_TOK + n_batch) */
    int32_t last_id;                 /* the greedy pick (or the sampled id) of the last step */
    void *graphs[GPU_MAX_BUCKETS];   /* decode steps with the greedy pick */
    void *graphs_s[GPU_MAX_BUCKETS]; /* and with the sampler */
    uint64_t dev_bytes;
    bool have_out;
    bool head_defer;                 /* the final norm may defer its 1/rms to the LM head */
    nib_cuda_blas *gemm;             /* prompt chunks as GEMMs, or NULL (gemm_why says why) */
    char gemm_why[160];
};

/* Prompt chunks of at least this many tokens go to the GEMM. A chunk on it
 * costs about the same whatever its tokens up to a few dozen (decoding
 * every matrix to fp16 dominates), the batched GEMV about the same per
 * token. H200, `nib bench synth:... -p N -n 0`, pp t/s, GEMV -> GEMM:
 * Llama-3-8B Q4_K_M pp32 989 -> 2,371, pp48 1,009 -> 3,450; Qwen2.5-0.5B
 * Q4_K_M pp32 11,708 -> 13,033, pp48 13,317 -> 19,906; Llama-3.2-1B pp32
 * 6,116 -> 11,786 (bench/results/2026-12-01-h200-prefill-gemm.md). The
 * small models' crossover lies near 28 tokens, the 8B's lower. */
#ifndef GEMM_MIN_TOKENS /* (a -D sets it for measuring the crossover) */
#define GEMM_MIN_TOKENS 32
#endif

/* ---- setup ------------------------------------------------------------------------ */

static void *dev_alloc(nib_gpu *g, uint64_t bytes, nib_error *err) {
    if (bytes > SIZE_MAX) {
        nib_error_set(err, NIB_ERR_NOMEM, "GPU buffer of %llu bytes is too large", (unsigned long long)bytes);
        return NULL;
    }
    void *p = nib_cuda_alloc((size_t)(bytes ? bytes : 16), err);
    if (p) g->dev_bytes += bytes;
    return p;
}

static const char *wname(const nib_weight *w, char *buf, size_t n) {
    snprintf(buf, n, "%.*s", w->name ? w->name_len : 1, w->name ? w->name : "?");
    return buf;
}

static nib_status upload_matrix(nib_gpu *g, const nib_weight *w, nib_cuda_weight **out, nib_error *err) {
    char nm[96];
    nib_status s = nib_cuda_weight_upload(w->type, w->data, w->ne[0], w->ne[1], out, err);
    if (s != NIB_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return nib_error_set(err, s, "uploading '%s' (%s, %lld x %lld) to the GPU: %s", wname(w, nm, sizeof nm),
                             nib_type_name(w->type), (long long)w->ne[0], (long long)w->ne[1], msg);
    }
    g->dev_bytes += nib_cuda_weight_bytes(*out);
    return NIB_OK;
}

/* A matrix read only as products (not looked up by row, not part of the
 * Q/K/V pair kernel) into the tiled GEMV layout where it has one
 * (nib_cuda_weight_tile; a fused Q/K/V of one format only where that format
 * gains by it, nib_cuda_weight_tile_qkv; gate and up together,
 * nib_cuda_weight_tile_glu); the device bytes move by the layout's padding. */
typedef nib_status (*tile_fn)(nib_cuda_weight *w, bool *tiled, nib_error *err);
static nib_status tile_with(nib_gpu *g, nib_cuda_weight *w, tile_fn fn, nib_error *err) {
    if (!w) return NIB_OK;
    const uint64_t before = nib_cuda_weight_bytes(w);
    bool tiled = false;
    nib_status s = fn(w, &tiled, err);
    if (s == NIB_OK && tiled) g->dev_bytes = g->dev_bytes - before + nib_cuda_weight_bytes(w);
    return s;
}
static nib_status tile_matrix(nib_gpu *g, nib_cuda_weight *w, nib_error *err) {
    return tile_with(g, w, nib_cuda_weight_tile, err);
}
typedef nib_status (*tile2_fn)(nib_cuda_weight *a, nib_cuda_weight *b, bool *tiled, nib_error *err);
static nib_status tile_two(nib_gpu *g, nib_cuda_weight *a, nib_cuda_weight *b, tile2_fn fn, nib_error *err) {
    const uint64_t before = nib_cuda_weight_bytes(a) + nib_cuda_weight_bytes(b);
    bool tiled = false;
    nib_status s = fn(a, b, &tiled, err);
    (void)tiled; /* one of the two may have been laid out even where the pair was not */
    if (s == NIB_OK) g->dev_bytes = g->dev_bytes - before + nib_cuda_weight_bytes(a) + nib_cuda_weight_bytes(b);
    return s;
}
/* the fused Q/K/V (one matrix, or Q/K with V beside it) tiled where its format and shape take it */
static nib_status tile_qkv(nib_gpu *g, gpu_layer *L, nib_error *err) {
    if (L->n_fused == 3) return tile_with(g, L->wqkv, nib_cuda_weight_tile_qkv, err);
    if (L->n_fused == 2) return tile_two(g, L->wqkv, L->wv, nib_cuda_weight_tile_qkv_pair, err);
    return NIB_OK;
}

/* Q and K (and V when it shares their format) as one matrix: their rows
 * concatenated on the host, uploaded once. The products are the same numbers
 * (each output row is one row's dot either way); one launch instead of three
 * saves the per-kernel cost that dominates small models. */
static nib_status upload_qkv(nib_gpu *g, const nib_layer *l, gpu_layer *L, nib_error *err) {
    const bool qk = l->wq.type == l->wk.type && l->wq.ne[0] == l->wk.ne[0];
    const bool qkv = qk && l->wv.type == l->wq.type && l->wv.ne[0] == l->wq.ne[0];
    if (!qk)
        return upload_matrix(g, &l->wq, &L->wq, err) || upload_matrix(g, &l->wk, &L->wk, err) ||
                       upload_matrix(g, &l->wv, &L->wv, err)
                   ? err->status
                   : NIB_OK;
    const nib_weight *parts[3] = {&l->wq, &l->wk, &l->wv};
    const int np = qkv ? 3 : 2;
    size_t row = 0;
    uint64_t total = 0, rows = 0;
    nib_row_bytes(l->wq.type, l->wq.ne[0], &row);
    for (int i = 0; i < np; i++) total += (uint64_t)row * (uint64_t)parts[i]->ne[1], rows += (uint64_t)parts[i]->ne[1];
    uint8_t *buf = total <= SIZE_MAX ? malloc((size_t)total) : NULL;
    if (!buf) return nib_error_set(err, NIB_ERR_NOMEM, "out of host memory staging a fused QKV matrix (%llu bytes)",
                                   (unsigned long long)total);
    size_t off = 0;
    for (int i = 0; i < np; i++) {
        memcpy(buf + off, parts[i]->data, row * (size_t)parts[i]->ne[1]);
        off += row * (size_t)parts[i]->ne[1];
    }
    nib_weight fused = l->wq;
    fused.ne[1] = (int64_t)rows;
    fused.data = buf;
    nib_status s = upload_matrix(g, &fused, &L->wqkv, err);
    free(buf);
    if (s != NIB_OK) return s;
    L->n_fused = np;
    return qkv ? NIB_OK : upload_matrix(g, &l->wv, &L->wv, err);
}

/* A 1-D F32 tensor (norm weight, bias) to the device; absent -> NULL. */
static nib_status upload_vec(nib_gpu *g, const nib_weight *w, float **out, nib_error *err) {
    *out = NULL;
    if (!w->data) return NIB_OK;
    char nm[96];
    if (w->type != NIB_TYPE_F32)
        return nib_error_set(err, NIB_ERR_UNSUPPORTED, "'%s' is %s; the GPU path takes norm weights and biases as F32",
                             wname(w, nm, sizeof nm), nib_type_name(w->type));
    size_t bytes = (size_t)w->ne[0] * 4;
    if (!(*out = dev_alloc(g, bytes, err))) return err->status;
    return nib_cuda_copy_to_device(*out, w->data, bytes, err);
}

/* A 3-D expert tensor (n_in, rows, n_expert) as one matrix of n_expert * rows rows */
static nib_weight experts_flat(const nib_weight *w) {
    nib_weight f = *w;
    f.ne[1] = w->ne[1] * w->ne[2];
    f.ne[2] = 1;
    return f;
}
static nib_status upload_experts(nib_gpu *g, const nib_weight *w, nib_cuda_weight **out, nib_error *err) {
    const nib_weight f = experts_flat(w);
    return upload_matrix(g, &f, out, err);
}

/* A layer's FFN matrices: gate, up and down, or the router and the experts */
static nib_status upload_ffn(nib_gpu *g, const nib_layer *l, gpu_layer *L, nib_error *err) {
    if (l->gate_inp.data)
        return upload_matrix(g, &l->gate_inp, &L->router, err) || upload_experts(g, &l->gate_exps, &L->gate_exps, err) ||
                       upload_experts(g, &l->up_exps, &L->up_exps, err) ||
                       upload_experts(g, &l->down_exps, &L->down_exps, err)
                   ? err->status
                   : NIB_OK;
    return upload_matrix(g, &l->gate, &L->gate, err) || upload_matrix(g, &l->up, &L->up, err) ||
                   upload_matrix(g, &l->down, &L->down, err)
               ? err->status
               : NIB_OK;
}

/* Every matrix must have a CUDA kernel: list the ones that do not. */
static nib_status check_coverage(const nib_model *m, nib_error *err) {
    char list[512] = "";
    size_t used = 0;
    int missing = 0;
    const nib_weight *mats[8];
    for (int il = -1; il < m->hp.n_layer; il++) {
        int n = 0, n_exps = 0; /* the last n_exps of mats are expert tensors */
        if (il < 0) mats[n++] = &m->tok_embd, mats[n++] = &m->output;
        else {
            const nib_layer *l = &m->layers[il];
            mats[n++] = &l->wq, mats[n++] = &l->wk, mats[n++] = &l->wv, mats[n++] = &l->wo;
            if (l->gate_inp.data) {
                mats[n++] = &l->gate_inp, mats[n++] = &l->gate_exps, mats[n++] = &l->up_exps, mats[n++] = &l->down_exps;
                n_exps = 3;
            } else {
                mats[n++] = &l->gate, mats[n++] = &l->up, mats[n++] = &l->down;
            }
        }
        for (int i = 0; i < n; i++) {
            const nib_weight *w = mats[i];
            bool ok = i >= n - n_exps ? nib_cuda_moe_has(w->type)
                                      : nib_cuda_has_gemv(w->type) &&
                                            (w != &m->tok_embd || nib_cuda_has_get_rows(w->type));
            if (ok) continue;
            if (missing++ < 6 && used < sizeof list - 80)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s'%.*s' (%s)", used ? ", " : "",
                                         w->name ? w->name_len : 1, w->name ? w->name : "?", nib_type_name(w->type));
        }
    }
    if (!missing) return NIB_OK;
    return nib_error_set(err, NIB_ERR_UNSUPPORTED,
                         "%d tensor(s) have a format with no CUDA kernel: %s%s; run with --device cpu", missing, list,
                         missing > 6 ? ", ..." : "");
}

/* A one-token norm may leave its 1/rms to the GEMVs that read it
 * (nib_cuda_norm_args.defer) when every reader is a dp4a kernel: the float
 * path reads xn, which a deferred norm does not write. */
static bool defer_ok(const nib_weight *const *readers, int n) {
    for (int i = 0; i < n; i++) {
        const char *path = nib_cuda_gemv_path(readers[i]->type);
        if (!path || strcmp(path, "dp4a") != 0) return false;
    }
    return true;
}

/* Bytes the model's weights take on the device, to refuse early and clearly. */
static uint64_t matrix_bytes(const nib_weight *w) {
    size_t row = 0;
    return nib_row_bytes(w->type, w->ne[0], &row) ? (uint64_t)row * (uint64_t)w->ne[1] : 0;
}

/* What the device's block slots add to a matrix (cuda/gpu_layout.h) */
static uint64_t layout_extra(const nib_weight *w) {
    const uint64_t file = matrix_bytes(w);
    return w->data ? nib_cuda_layout_bytes(w->type, file) - file : 0;
}

/* The loader's count (every layer matrix and the head) plus the embedding
 * table when it is not the head: all of it goes to the device, the formats
 * kept in wider slots there with their slots' bytes. */
static uint64_t weight_bytes(const nib_model *m) {
    const bool own_embd = m->output.data != m->tok_embd.data;
    uint64_t b = m->weight_bytes + (own_embd ? matrix_bytes(&m->tok_embd) + layout_extra(&m->tok_embd) : 0) +
                 layout_extra(&m->output);
    for (int il = 0; il < m->hp.n_layer; il++) {
        const nib_layer *l = &m->layers[il];
        const nib_weight ge = experts_flat(&l->gate_exps), ue = experts_flat(&l->up_exps),
                         de = experts_flat(&l->down_exps);
        const nib_weight *ws[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->gate, &l->up, &l->down, &ge, &ue, &de};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) b += layout_extra(ws[i]);
        /* the loader counts a token's experts (model_load.c); the device holds them all */
        const nib_weight *xs[] = {&ge, &ue, &de};
        for (size_t i = 0; i < 3; i++) {
            const uint64_t all = xs[i]->data ? matrix_bytes(xs[i]) : 0;
            if (all) b += all - all / (uint64_t)m->hp.n_expert * (uint64_t)m->hp.n_expert_used;
        }
    }
    return b;
}

/* The prompt GEMM's fp16 scratch holds the largest per-layer matrix (the
 * LM head runs one row, on the GEMV) and a chunk of the widest input;
 * without room, or without cuBLAS, the batched GEMV takes every chunk and
 * gemm_why says why. */
static nib_status gemm_setup(nib_gpu *g, nib_error *err) {
    if (g->n_batch < GEMM_MIN_TOKENS) {
        snprintf(g->gemm_why, sizeof g->gemm_why, "batches of %d tokens are below %d", g->n_batch, GEMM_MIN_TOKENS);
        return NIB_OK;
    }
    int64_t elems = 1, width = 1;
    for (int il = 0; il < g->m->hp.n_layer; il++) {
        const nib_layer *l = &g->m->layers[il];
        /* Q, K and V may be one fused matrix: their rows together */
        const int64_t qkv = l->wq.ne[1] + l->wk.ne[1] + l->wv.ne[1];
        const int64_t shapes[][2] = {{l->wq.ne[0], qkv}, {l->wo.ne[0], l->wo.ne[1]}, {l->gate.ne[0], l->gate.ne[1]},
                                     {l->up.ne[0], l->up.ne[1]}, {l->down.ne[0], l->down.ne[1]}};
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            if (shapes[i][0] * shapes[i][1] > elems) elems = shapes[i][0] * shapes[i][1];
            if (shapes[i][0] > width) width = shapes[i][0];
        }
    }
    const int64_t act = width * g->n_batch;
    nib_status s = nib_cuda_blas_new(elems, act, &g->gemm, g->gemm_why, sizeof g->gemm_why, err);
    if (s == NIB_OK && g->gemm) g->dev_bytes += (uint64_t)(elems + act) * 2;
    return s;
}

const char *nib_gpu_prompt_path(const nib_gpu *g) { return g->gemm ? nib_cuda_blas_name() : g->gemm_why; }

nib_gpu *nib_gpu_new(const nib_model *m, int32_t n_ctx, int32_t n_batch, nib_error *err) {
    const nib_hparams *hp = &m->hp;
    char why[256];
    if (!nib_cuda_probe(why, sizeof why)) {
        nib_error_set(err, NIB_ERR_UNSUPPORTED, "no usable CUDA device: %s", why);
        return NULL;
    }
    if (hp->post_norm_only) {
        nib_error_set(err, NIB_ERR_UNSUPPORTED, "blocks without a norm before them (OLMo 2) are not on the GPU yet; run "
                      "with --device cpu");
        return NULL;
    }
    if (m->layers[0].q_norm.data && m->layers[0].q_norm.ne[0] != hp->head_dim_k) {
        nib_error_set(err, NIB_ERR_UNSUPPORTED, "a QK-norm over the whole projection (olmoe) is not on the GPU yet; run with "
                      "--device cpu");
        return NULL;
    }
    for (int il = 0; il < hp->n_layer; il++)
        if (m->layers[il].no_rope) {
            nib_error_set(err, NIB_ERR_UNSUPPORTED, "layers without RoPE (SmolLM3's) are not on the GPU yet; run with "
                          "--device cpu");
            return NULL;
        }
    if (hp->residual_scale != 1.0f || hp->logit_scale != 1.0f) {
        nib_error_set(err, NIB_ERR_UNSUPPORTED, "Granite's residual and logit scales are not on the GPU yet; run with "
                      "--device cpu");
        return NULL;
    }
    if (hp->n_expert > 0 && (hp->expert_softmax_chosen || hp->ffn_act == NIB_FFN_SWIGLU_OAI)) {
        nib_error_set(err, NIB_ERR_UNSUPPORTED, "gpt-oss's experts (the router's softmax over its choices, the clamped "
                      "SwiGLU, expert biases) are not on the GPU yet; run with --device cpu");
        return NULL;
    }
    if (hp->n_expert > 0 && (hp->n_expert_used > NIB_CUDA_MOE_MAX_K || (int64_t)n_batch * hp->n_expert_used > 65535)) {
        nib_error_set(err, NIB_ERR_UNSUPPORTED, "%d experts a token in batches of %d are more than the GPU's expert "
                      "kernels take (%d a token, 65535 a batch); run with --device cpu", hp->n_expert_used, n_batch,
                      NIB_CUDA_MOE_MAX_K);
        return NULL;
    }
    for (int il = 0; il < hp->n_layer; il++) {
        const nib_layer *l = &m->layers[il];
        if (l->gate_inp_b.data || l->gate_exps_b.data || l->up_exps_b.data || l->down_exps_b.data) {
            nib_error_set(err, NIB_ERR_UNSUPPORTED, "expert biases are not on the GPU yet; run with --device cpu");
            return NULL;
        }
    }
    /* RoPE's cos/sin scale: the GPU's rotation has none; folded into the
     * q.k scale, which carries it exactly only when the whole head rotates */
    if (m->rope_mscale != 1.0f && hp->n_rot != hp->head_dim_k) {
        nib_error_set(err, NIB_ERR_UNSUPPORTED,
                      "a RoPE attention factor (%g) with %d of %d head dimensions rotated is not on the GPU yet; run "
                      "with --device cpu",
                      (double)m->rope_mscale, hp->n_rot, hp->head_dim_k);
        return NULL;
    }
    if (check_coverage(m, err) != NIB_OK) return NULL;
    nib_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        nib_error_set(err, NIB_ERR_NOMEM, "out of host memory");
        return NULL;
    }
    g->m = m;
    g->n_ctx = n_ctx;
    g->n_batch = n_batch;
    const int64_t E = hp->n_embd, F = hp->n_ff, QD = (int64_t)hp->n_head * hp->head_dim_k;
    const int64_t AD = (int64_t)hp->n_head * hp->head_dim_v;
    const int64_t KR = (int64_t)hp->n_head_kv * hp->head_dim_k, VR = (int64_t)hp->n_head_kv * hp->head_dim_v;
    const uint64_t B = (uint64_t)n_batch, kv_rows = (uint64_t)hp->n_layer * (uint64_t)n_ctx;
    size_t act = nib_cuda_act_bytes(E, n_batch);
    if (nib_cuda_act_bytes(F, n_batch) > act) act = nib_cuda_act_bytes(F, n_batch);
    if (nib_cuda_act_bytes(AD, n_batch) > act) act = nib_cuda_act_bytes(AD, n_batch);
    size_t attn = nib_cuda_attention_scratch_bytes(n_batch, hp->n_head, hp->head_dim_v, n_ctx);
    size_t attn1 = nib_cuda_attention_scratch_bytes(1, hp->n_head, hp->head_dim_v, n_ctx);
    if (attn1 > attn) attn = attn1;
    const int64_t NE = hp->n_expert, KE = hp->n_expert_used, FE = hp->n_ff_exp;
    const uint64_t moe =
        NE > 0 ? B * 4 * (uint64_t)(NE + 2 * KE + KE * (2 * FE + E)) + nib_cuda_act_bytes(FE, n_batch * (int)KE) : 0;
    uint64_t buf = kv_rows * (uint64_t)(KR + VR) * 2 + B * 4 * (uint64_t)(3 * E + QD + KR + VR + AD + 2 * F) +
                   (uint64_t)hp->n_vocab * 4 + act + nib_cuda_act_bytes(E, 1) + attn +
                   nib_cuda_sample_scratch_bytes(hp->n_vocab, NIB_CUDA_SAMPLE_MAX_K) + moe;
    uint64_t need = weight_bytes(m) + buf;
    nib_cuda_device_info info;
    if (nib_cuda_device_get(0, &info, why, sizeof why) && need > info.free_bytes) {
        nib_error_set(err, NIB_ERR_NOMEM,
                      "the model does not fit on %s: it needs %.2f GiB (weights %.2f GiB, cache and buffers for %d "
                      "positions %.2f GiB) and %.2f GiB are free; use a smaller context (-c) or --device cpu",
                      info.name, need / 1073741824.0, weight_bytes(m) / 1073741824.0, n_ctx, buf / 1073741824.0,
                      info.free_bytes / 1073741824.0);
        free(g);
        return NULL;
    }
    if (!(g->stream = nib_cuda_stream_new(err))) goto fail;
    if (!(g->layers = calloc((size_t)hp->n_layer, sizeof *g->layers))) {
        nib_error_set(err, NIB_ERR_NOMEM, "out of host memory");
        goto fail;
    }
    if (upload_matrix(g, &m->tok_embd, &g->tok_embd, err)) goto fail;
    if (m->output.data == m->tok_embd.data) g->output = g->tok_embd;
    else if (upload_matrix(g, &m->output, &g->output, err) || tile_matrix(g, g->output, err)) goto fail;
    if (upload_vec(g, &m->output_norm, &g->output_norm, err)) goto fail;
    {
        /* per layer (Gemma 3's local and global layers have their own bases) */
        const int half = hp->n_rot / 2;
        double *tab = malloc(sizeof(double) * (size_t)(half > 0 ? half : 1) * (size_t)hp->n_layer);
        if (!tab) {
            nib_error_set(err, NIB_ERR_NOMEM, "out of host memory");
            goto fail;
        }
        const float *ff = nib_model_rope_ff(m, n_ctx);
        for (int il = 0; il < hp->n_layer; il++)
            for (int i = 0; i < half; i++) {
                double f = pow((double)m->layers[il].rope_base, -2.0 * i / (double)hp->n_rot);
                tab[(size_t)il * half + i] = ff ? f / (double)ff[i] : f;
            }
        size_t tb = sizeof(double) * (size_t)(half > 0 ? half : 1) * (size_t)hp->n_layer;
        g->inv_freq = dev_alloc(g, tb, err);
        nib_status s = g->inv_freq ? nib_cuda_copy_to_device(g->inv_freq, tab, tb, err) : err->status;
        free(tab);
        if (s != NIB_OK) goto fail;
    }
    for (int il = 0; il < hp->n_layer; il++) {
        const nib_layer *l = &m->layers[il];
        gpu_layer *L = &g->layers[il];
        if (upload_qkv(g, l, L, err) || upload_matrix(g, &l->wo, &L->wo, err) || upload_ffn(g, l, L, err) ||
            upload_vec(g, &l->attn_norm, &L->attn_norm, err) ||
            upload_vec(g, &l->ffn_norm, &L->ffn_norm, err) ||
            upload_vec(g, &l->post_attn_norm, &L->post_attn_norm, err) ||
            upload_vec(g, &l->post_ffn_norm, &L->post_ffn_norm, err) || upload_vec(g, &l->q_norm, &L->q_norm, err) ||
            upload_vec(g, &l->k_norm, &L->k_norm, err) || upload_vec(g, &l->bq, &L->bq, err) ||
            upload_vec(g, &l->bk, &L->bk, err) || upload_vec(g, &l->bv, &L->bv, err) ||
            tile_matrix(g, L->wo, err) || (!L->router && tile_two(g, L->gate, L->up, nib_cuda_weight_tile_glu, err)) ||
            tile_matrix(g, L->down, err) || tile_qkv(g, L, err))
            goto fail;
        const nib_weight *qkv[] = {&l->wq, &l->wk, &l->wv}, *ffn[] = {&l->gate, &l->up};
        L->attn_defer = defer_ok(qkv, 3);
        L->ffn_defer = !L->router && defer_ok(ffn, 2); /* the router reads xn, which a deferred norm leaves */
    }
    {
        const nib_weight *head[] = {&m->output};
        g->head_defer = defer_ok(head, 1);
    }
    if (!(g->k_cache = dev_alloc(g, kv_rows * (uint64_t)KR * 2, err)) ||
        !(g->v_cache = dev_alloc(g, kv_rows * (uint64_t)VR * 2, err)) ||
        !(g->x = dev_alloc(g, B * E * 4, err)) || !(g->xn = dev_alloc(g, B * E * 4, err)) ||
        !(g->o = dev_alloc(g, B * E * 4, err)) || !(g->q = dev_alloc(g, B * QD * 4, err)) ||
        !(g->k = dev_alloc(g, B * KR * 4, err)) || !(g->v = dev_alloc(g, B * VR * 4, err)) ||
        !(g->att = dev_alloc(g, B * AD * 4, err)) || !(g->qkv = dev_alloc(g, B * (QD + KR + VR) * 4, err)) || !(g->h = dev_alloc(g, B * F * 4, err)) ||
        !(g->tmp = dev_alloc(g, B * F * 4, err)) || !(g->logits = dev_alloc(g, (uint64_t)hp->n_vocab * 4, err)) ||
        !(g->act = dev_alloc(g, act, err)) || !(g->act_ffn = dev_alloc(g, nib_cuda_act_bytes(E, 1), err)) ||
        (attn && !(g->attn_scratch = dev_alloc(g, attn, err))) ||
        !(g->sample_scratch = dev_alloc(g, nib_cuda_sample_scratch_bytes(hp->n_vocab, NIB_CUDA_SAMPLE_MAX_K), err)) ||
        !(g->io_dev = dev_alloc(g, (IO_TOK + B) * 4, err)) ||
        !(g->io_host = nib_cuda_host_alloc((IO_TOK + B) * 4, err)))
        goto fail;
    if (NE > 0 && (!(g->moe_logits = dev_alloc(g, B * NE * 4, err)) || !(g->moe_w = dev_alloc(g, B * KE * 4, err)) ||
                   !(g->moe_ids = dev_alloc(g, B * KE * 4, err)) || !(g->moe_g = dev_alloc(g, B * KE * FE * 4, err)) ||
                   !(g->moe_u = dev_alloc(g, B * KE * FE * 4, err)) || !(g->moe_y = dev_alloc(g, B * KE * E * 4, err)) ||
                   !(g->moe_act = dev_alloc(g, nib_cuda_act_bytes(FE, n_batch * (int)KE), err))))
        goto fail;
    /* the attention's merge counters start at zero and every call leaves them
     * there (cuda_attention.h) */
    if (attn && (nib_cuda_fill_f32(g->attn_scratch, 0.0f, attn / 4, err) || nib_cuda_sync(err))) goto fail;
    if (gemm_setup(g, err) != NIB_OK) goto fail;
    return g;
fail:
    nib_gpu_free(g);
    return NULL;
}

void nib_gpu_free(nib_gpu *g) {
    if (!g) return;
    nib_cuda_blas_free(g->gemm);
    for (int i = 0; i < GPU_MAX_BUCKETS; i++) nib_cuda_graph_free(g->graphs[i]), nib_cuda_graph_free(g->graphs_s[i]);
    if (g->layers) {
        for (int il = 0; il < g->m->hp.n_layer; il++) {
            gpu_layer *L = &g->layers[il];
            nib_cuda_weight *ws[] = {L->wq,     L->wk,        L->wv,       L->wo,        L->gate, L->up,
                                     L->down,   L->wqkv,      L->router,   L->gate_exps, L->up_exps, L->down_exps};
            for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) nib_cuda_weight_free(ws[i]);
            float *vs[] = {L->attn_norm, L->ffn_norm, L->post_attn_norm, L->post_ffn_norm,
                           L->q_norm, L->k_norm, L->bq, L->bk, L->bv};
            for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) nib_cuda_free(vs[i]);
        }
        free(g->layers);
    }
    if (g->output != g->tok_embd) nib_cuda_weight_free(g->output);
    nib_cuda_weight_free(g->tok_embd);
    void *bufs[] = {g->output_norm, g->inv_freq, g->k_cache, g->v_cache, g->x, g->xn, g->o, g->q, g->k, g->v,
                    g->att, g->qkv, g->h, g->tmp, g->logits, g->act, g->act_ffn, g->attn_scratch,
                    g->sample_scratch, g->io_dev, g->moe_logits, g->moe_w, g->moe_ids, g->moe_g, g->moe_u, g->moe_y,
                    g->moe_act};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) nib_cuda_free(bufs[i]);
    nib_cuda_host_free(g->io_host);
    nib_cuda_stream_free(g->stream);
    free(g);
}

uint64_t nib_gpu_device_bytes(const nib_gpu *g) { return g->dev_bytes; }
int32_t nib_gpu_argmax(const nib_gpu *g) { return g->last_id; }

/* ---- the step ----------------------------------------------------------------------- */

#define TRY(call)                       \
    do {                                \
        nib_status s_ = (call);         \
        if (s_ != NIB_OK) return s_;    \
    } while (0)

/* y = W x over n token rows (+ y with add), on the GEMM for long prompt
 * chunks, else the GEMV on the quantized activations in g->act */
static bool use_gemm(const nib_gpu *g, const nib_cuda_weight *w, int n) {
    return n >= GEMM_MIN_TOKENS && nib_cuda_blas_takes(g->gemm, w);
}
static nib_status mm(nib_gpu *g, const nib_cuda_weight *w, const float *x, int n, float *y, bool add, nib_error *err) {
    if (use_gemm(g, w, n)) return nib_cuda_gemm(g->gemm, w, x, n, y, add, g->stream, err);
    return nib_cuda_matmul(w, x, g->act, n, y, add, g->stream, err);
}

/* Whether a norm of n tokens leaves its 1/rms to the GEMVs (nib_cuda_norm_args.defer):
 * one token, readers that take it (defer_ok), and with a sandwich post-norm
 * (post_w) a row the deferred post-norm kernel holds. */
static bool norm_defers(const nib_hparams *hp, int n, const float *post_w, bool readers_ok) {
    return n == 1 && readers_ok && (!post_w || hp->n_embd <= NIB_CUDA_POST_DEFER_MAX_N);
}

/* Whether layer L's output projection leaves the FFN's deferred norm in
 * act_ffn (nib_cuda_matmul_norm): one token, no post-attention norm, and
 * kernels for both the projection and the gate/up pair that take it. */
static bool ffn_norm_fused(const nib_hparams *hp, const gpu_layer *L, int n) {
    return !L->router && !L->post_attn_norm && norm_defers(hp, n, NULL, L->ffn_defer) &&
           nib_cuda_matmul_norm_ok(L->wo) && nib_cuda_glu_takes_norm(L->gate);
}

/* Layer L's Q/K/V projections of n tokens: fused (q, k, v interleaved in
 * g->qkv), fused Q/K with V apart (V's format differs), or three matrices */
static nib_status qkv_project(nib_gpu *g, const gpu_layer *L, int n, nib_error *err) {
    if (L->n_fused == 3) return mm(g, L->wqkv, g->xn, n, g->qkv, false, err);
    if (!L->n_fused) {
        TRY(mm(g, L->wq, g->xn, n, g->q, false, err));
        TRY(mm(g, L->wk, g->xn, n, g->k, false, err));
        return mm(g, L->wv, g->xn, n, g->v, false, err);
    }
    if (use_gemm(g, L->wqkv, n) && use_gemm(g, L->wv, n)) { /* V's format differs */
        TRY(mm(g, L->wqkv, g->xn, n, g->qkv, false, err));
        return mm(g, L->wv, g->xn, n, g->v, false, err);
    }
    return nib_cuda_matmul_pair(L->wqkv, L->wv, g->xn, g->act, n, g->qkv, g->v, g->stream, err);
}

/* The previous layer's post-FFN norm (Gemma 3), whose output the attention
 * norm of layer il adds first, or NULL */
static const float *prev_post_norm(const nib_gpu *g, int il) {
    return il > 0 ? g->layers[il - 1].post_ffn_norm : NULL;
}
/* The attention norm of layer il: adds the previous layer's post-FFN-normed
 * output first when that layer kept it apart. One token's norms defer their
 * 1/rms to the GEMVs (defer_ok) with or without that add: with it, every
 * block of the norm reduces o's sum of squares itself (ops.cu,
 * norm_q8_post_deferred); against the single-block norm, tg128 Gemma 3 12B
 * Q4_K_M 281.8 -> 311.7 t/s, 270M 1,797 -> 1,872 (bench/gpu-decode-notes.md
 * v86). */
static nib_status attn_norm(nib_gpu *g, int il, int n, nib_error *err) {
    const nib_hparams *hp = &g->m->hp;
    const float *prev_post = prev_post_norm(g, il);
    nib_cuda_norm_args na = {
        .x = g->x, .o = prev_post ? g->o : NULL, .post_w = prev_post, .norm_w = g->layers[il].attn_norm,
        .xn = g->xn, .act = g->act, .n_tok = n, .n = hp->n_embd, .eps = hp->norm_eps,
        .defer = norm_defers(hp, n, prev_post, g->layers[il].attn_defer),
    };
    return nib_cuda_add_norm(&na, g->stream, err);
}

static nib_status attention_block(nib_gpu *g, int il, int n, int max_len, nib_error *err) {
    const nib_hparams *hp = &g->m->hp;
    const nib_layer *l = &g->m->layers[il];
    const gpu_layer *L = &g->layers[il];
    const int64_t KR = (int64_t)hp->n_head_kv * hp->head_dim_k, VR = (int64_t)hp->n_head_kv * hp->head_dim_v;
    void *st = g->stream;
    const int64_t QD = (int64_t)hp->n_head * hp->head_dim_k;
    const float *qs = g->q, *ks = g->k, *vs = g->v;
    int stride = 0, v_stride = 0;
    if (L->n_fused) {
        stride = (int)(QD + KR + (L->n_fused == 3 ? VR : 0));
        qs = g->qkv, ks = g->qkv + QD;
        if (L->n_fused == 3) vs = g->qkv + QD + KR, v_stride = stride;
    }
    uint16_t *kc = g->k_cache + (uint64_t)il * g->n_ctx * KR, *vc = g->v_cache + (uint64_t)il * g->n_ctx * VR;
    nib_cuda_qkv_args qa = {
        .q = (float *)qs, .k = ks, .v = vs, .q_stride = stride, .k_stride = stride, .v_stride = v_stride,
        .q_out = L->n_fused ? g->q : NULL, .bq = L->bq, .bk = L->bk, .bv = L->bv,
        .q_norm = L->q_norm, .k_norm = L->k_norm, .eps = hp->norm_eps,
        .k_cache = kc, .v_cache = vc, .pos = g->io_dev + IO_POS,
        .n_tok = n, .n_head = hp->n_head, .n_head_kv = hp->n_head_kv, .hd_k = hp->head_dim_k, .hd_v = hp->head_dim_v,
        .n_rot = hp->n_rot, .neox = hp->rope_kind == NIB_ROPE_NEOX,
        .rope_base = l->rope_base, .rope_scale = l->rope_scale, .rope_freqs = NULL,
        .inv_freq = g->inv_freq + (size_t)il * (hp->n_rot / 2),
    };
    const nib_cuda_weight *wv = L->n_fused == 2 ? L->wv : NULL; /* V beside a fused Q/K */
    const bool fused = L->n_fused >= 2 && !use_gemm(g, L->wqkv, n) && nib_cuda_matmul_qkv_rope_ok(L->wqkv, wv, &qa);
    /* the fused projection also does the attention norm where that would be
     * deferred with no post-norm output to add first (bench/gpu-decode-notes.md v97) */
    if (fused && !prev_post_norm(g, il) && norm_defers(hp, n, NULL, L->attn_defer)) {
        qa.norm_x = g->x, qa.norm_w = L->attn_norm, qa.norm_eps = hp->norm_eps;
        if (!nib_cuda_matmul_qkv_rope_ok(L->wqkv, wv, &qa)) qa.norm_x = NULL;
    }
    if (!qa.norm_x) TRY(attn_norm(g, il, n, err));
    if (fused) {
        /* one token's fused Q/K/V leaves RoPE and the cache stores done (one kernel fewer a layer;
         * tg128 Llama-3-8B Q4_K_M +1.7% with the 16 of its 32 layers whose V is Q4_K taking it, and
         * +2.9% more with the other 16 (Q6_K V beside the Q/K), bench/gpu-decode-notes.md v95, v96) */
        TRY(nib_cuda_matmul_qkv_rope(L->wqkv, wv, g->act, &qa, st, err));
    } else {
        TRY(qkv_project(g, L, n, err));
        TRY(nib_cuda_qkv_rope(&qa, st, err));
    }
    nib_cuda_attn aa = {
        .q = g->q, .k = kc, .v = vc, .out = g->att, .pos = g->io_dev + IO_POS,
        .n_tok = n, .n_head = hp->n_head, .n_head_kv = hp->n_head_kv, .hd_k = hp->head_dim_k, .hd_v = hp->head_dim_v,
        .n_ctx = g->n_ctx, .window = l->window, .scale = hp->attn_scale * g->m->rope_mscale * g->m->rope_mscale, .softcap = hp->attn_softcap, .sinks = NULL,
        .max_len = max_len, .scratch = g->attn_scratch, .act_out = use_gemm(g, L->wo, n) ? NULL : g->act,
    };
    /* the attention quantizes its output for the projection (act_out): tg128 in one build, against a
     * separate quantize kernel, Llama-3-8B Q4_K_M +0.7%, Qwen2.5-0.5B +3.6%, Llama-3.2-1B +1.8%
     * (bench/gpu-decode-notes.md v30; v9's version, folded into the last CTA, had lost) */
    TRY(nib_cuda_attention(&aa, st, err));
    /* without a post-norm the residual add rides on the projection, and for
     * one token the FFN's deferred norm with it where its kernel and the
     * gate/up kernel take that (nib_cuda_matmul_norm: one kernel fewer a
     * layer; tg128 Llama-3-8B Q4_K_M +1.4%, bench/gpu-decode-notes.md v94) */
    if (ffn_norm_fused(hp, L, n))
        return nib_cuda_matmul_norm(L->wo, g->act, g->x, L->ffn_norm, hp->norm_eps, g->act_ffn, st, err);
    return mm(g, L->wo, g->att, n, L->post_attn_norm ? g->o : g->x, !L->post_attn_norm, err);
}

/* A mixture-of-experts FFN of n tokens after its norm (xn and act hold it):
 * the router on xn, each token's k choices, the experts' products over the
 * n * k slots (gate and up on the token's row, down on the slot's h), and
 * their weighted sum into the residual or, before a post-norm, into o */
static nib_status ffn_moe(nib_gpu *g, const gpu_layer *L, int n, nib_cuda_glu glu, nib_error *err) {
    const nib_hparams *hp = &g->m->hp;
    const int K = hp->n_expert_used, NE = hp->n_expert;
    void *st = g->stream;
    TRY(nib_cuda_matmul(L->router, g->xn, g->act, n, g->moe_logits, false, st, err));
    TRY(nib_cuda_moe_route(g->moe_logits, n, NE, K, hp->expert_norm, g->moe_ids, g->moe_w, st, err));
    TRY(nib_cuda_moe_matmul(L->gate_exps, NE, g->moe_ids, n * K, K, g->act, g->moe_g, st, err));
    TRY(nib_cuda_moe_matmul(L->up_exps, NE, g->moe_ids, n * K, K, g->act, g->moe_u, st, err));
    TRY(nib_cuda_glu_rows(g->moe_g, g->moe_u, g->moe_g, (int64_t)n * K * hp->n_ff_exp, glu, st, err));
    TRY(nib_cuda_act_quantize(g->moe_g, hp->n_ff_exp, n * K, g->moe_act, st, err));
    TRY(nib_cuda_moe_matmul(L->down_exps, NE, g->moe_ids, n * K, 1, g->moe_act, g->moe_y, st, err));
    return nib_cuda_moe_combine(g->moe_y, g->moe_w, n, K, hp->n_embd, L->post_ffn_norm ? g->o : g->x,
                                !L->post_ffn_norm, st, err);
}

static nib_status ffn_block(nib_gpu *g, int il, int n, nib_error *err) {
    const nib_hparams *hp = &g->m->hp;
    const gpu_layer *L = &g->layers[il];
    void *st = g->stream;
    nib_cuda_norm_args na = {
        .x = g->x, .o = L->post_attn_norm ? g->o : NULL, .post_w = L->post_attn_norm, .norm_w = L->ffn_norm,
        .xn = g->xn, .act = g->act, .n_tok = n, .n = hp->n_embd, .eps = hp->norm_eps,
        .defer = norm_defers(hp, n, L->post_attn_norm, L->ffn_defer),
    };
    const bool fused = ffn_norm_fused(hp, L, n);
    const void *act = fused ? g->act_ffn : g->act; /* the output projection did the norm */
    if (!fused) TRY(nib_cuda_add_norm(&na, st, err));
    nib_cuda_glu glu = hp->ffn_act == NIB_FFN_GELU_TANH ? NIB_CUDA_GLU_GELU_TANH : NIB_CUDA_GLU_SILU;
    if (L->router) return ffn_moe(g, L, n, glu, err);
    /* (quantizing h in the GLU's epilogue, 32-row tiles per block, lost 10% on
     * Llama-3-8B: bench/gpu-decode-notes.md, v7) */
    if (use_gemm(g, L->gate, n) && use_gemm(g, L->up, n))
        TRY(nib_cuda_gemm_glu(g->gemm, L->gate, L->up, g->xn, n, glu, g->h, g->tmp, st, err));
    else
        TRY(nib_cuda_matmul_glu(L->gate, L->up, g->xn, act, n, glu, g->h, g->tmp, st, err));
    if (!use_gemm(g, L->down, n)) TRY(nib_cuda_act_quantize(g->h, hp->n_ff, n, g->act, st, err));
    return mm(g, L->down, g->h, n, L->post_ffn_norm ? g->o : g->x, !L->post_ffn_norm, err);
}

/* Final norm and LM head of row r (x and the last layer's pending output);
 * with pick, the greedy key lands in the io block (fused into the head's
 * GEMV unless a softcap must come first), with sample the sampled id does
 * (parameters and uniform from the io block). */
static nib_status head_row(nib_gpu *g, int r, bool pick, bool sample, nib_error *err) {
    const nib_hparams *hp = &g->m->hp;
    const int64_t E = hp->n_embd;
    const float *last_post = g->layers[hp->n_layer - 1].post_ffn_norm;
    nib_cuda_norm_args na = {
        .x = g->x + r * E, .o = last_post ? g->o + r * E : NULL, .post_w = last_post, .norm_w = g->output_norm,
        .xn = g->xn, .act = g->act, .n_tok = 1, .n = (int)E, .eps = hp->norm_eps,
        .defer = !last_post && g->head_defer,
    };
    TRY(nib_cuda_add_norm(&na, g->stream, err));
    uint64_t *key = (uint64_t *)(g->io_dev + IO_KEY);
    if (pick && sample) {
        TRY(nib_cuda_matmul(g->output, g->xn, g->act, 1, g->logits, false, g->stream, err));
        if (hp->logit_softcap > 0.0f) TRY(nib_cuda_softcap(g->logits, hp->n_vocab, hp->logit_softcap, g->stream, err));
        return nib_cuda_sample(g->logits, hp->n_vocab, (const nib_cuda_sample_params *)(g->io_dev + IO_SMP),
                               (const double *)(g->io_dev + IO_U), g->sample_scratch, NIB_CUDA_SAMPLE_MAX_K,
                               g->io_dev + IO_ID, g->stream, err);
    }
    if (pick && !(hp->logit_softcap > 0.0f))
        return nib_cuda_matmul_argmax(g->output, g->xn, g->act, g->logits, key, g->stream, err);
    TRY(nib_cuda_matmul(g->output, g->xn, g->act, 1, g->logits, false, g->stream, err));
    if (hp->logit_softcap > 0.0f) TRY(nib_cuda_softcap(g->logits, hp->n_vocab, hp->logit_softcap, g->stream, err));
    return pick ? nib_cuda_argmax(g->logits, hp->n_vocab, key, g->stream, err) : NIB_OK;
}

/* Everything of one step after the ids and position are on the device. With
 * rows_out, every row's logits are copied to the host (tests; not captured). */
static nib_status forward(nib_gpu *g, int n, int max_len, float *rows_out, bool sample, nib_error *err) {
    const nib_hparams *hp = &g->m->hp;
    TRY(nib_cuda_get_rows(g->tok_embd, g->io_dev + IO_TOK, n, hp->embd_scale, g->x, g->stream, err));
    for (int il = 0; il < hp->n_layer; il++) {
        TRY(attention_block(g, il, n, max_len, err)); /* the attention norm first */
        TRY(ffn_block(g, il, n, err));
    }
    if (rows_out) {
        for (int r = 0; r < n; r++) {
            TRY(head_row(g, r, r == n - 1, sample, err));
            TRY(nib_cuda_copy_async(rows_out + (size_t)r * hp->n_vocab, g->logits, (size_t)hp->n_vocab * 4, g->stream,
                                    err));
        }
        /* head_row added the pending post-norm output into x for every row;
         * the last row's logits are in g->logits */
    } else {
        TRY(head_row(g, n - 1, true, sample, err));
    }
    return nib_cuda_copy_async(g->io_host + IO_KEY, g->io_dev + IO_KEY, (IO_TOK - IO_KEY) * 4, g->stream, err);
}

static int bucket_of(int32_t len) {
    int b = 0;
    while ((int64_t)GPU_BUCKET_MIN << b < len) b++;
    return b;
}

static nib_status decode_one(nib_gpu *g, bool sample, nib_error *err) {
    const int32_t pos = g->io_host[IO_POS];
    int b = bucket_of(pos + 1);
    if (b >= GPU_MAX_BUCKETS) return nib_error_set(err, NIB_ERR_ARG, "position %d is beyond the GPU's buckets", pos);
    int64_t max_len = (int64_t)GPU_BUCKET_MIN << b;
    if (max_len > g->n_ctx) max_len = g->n_ctx;
    void **slot = sample ? &g->graphs_s[b] : &g->graphs[b];
    if (!*slot) {
        TRY(nib_cuda_graph_begin(g->stream, err));
        nib_status s = nib_cuda_copy_async(g->io_dev, g->io_host, (IO_TOK + 1) * 4, g->stream, err);
        if (s == NIB_OK) s = forward(g, 1, (int)max_len, NULL, sample, err);
        void *graph = NULL;
        nib_error end_err;
        nib_status e = nib_cuda_graph_end(g->stream, &graph, &end_err);
        if (s != NIB_OK) {
            nib_cuda_graph_free(graph);
            return s;
        }
        if (e != NIB_OK) {
            if (err) *err = end_err;
            return e;
        }
        *slot = graph;
    }
    return nib_cuda_graph_launch(*slot, g->stream, err);
}

nib_status nib_gpu_decode(nib_gpu *g, const int32_t *tokens, int64_t n, int32_t pos, float *all_logits,
                          const nib_gpu_sampling *smp, nib_error *err) {
    if (n < 1 || n > g->n_batch || pos < 0 || pos + n > g->n_ctx)
        return nib_error_set(err, NIB_ERR_ARG, "GPU step of %lld tokens at position %d does not fit (batch %d, context %d)",
                             (long long)n, pos, g->n_batch, g->n_ctx);
    g->io_host[IO_POS] = pos;
    memset(g->io_host + IO_KEY, 0, 8);
    memcpy(g->io_host + IO_TOK, tokens, (size_t)n * 4);
    if (smp) {
        const nib_cuda_sample_params sp = {smp->temp, smp->top_k, smp->top_p, smp->min_p};
        memcpy(g->io_host + IO_SMP, &sp, sizeof sp);
        memcpy(g->io_host + IO_U, &smp->u, sizeof smp->u);
        g->io_host[IO_ID] = -1;
    }
    if (n == 1 && !all_logits) {
        TRY(decode_one(g, smp != NULL, err));
    } else {
        TRY(nib_cuda_copy_async(g->io_dev, g->io_host, (size_t)(IO_TOK + n) * 4, g->stream, err));
        TRY(forward(g, (int)n, (int)(pos + n), all_logits, smp != NULL, err));
    }
    TRY(nib_cuda_stream_sync(g->stream, err));
    if (smp) {
        g->last_id = g->io_host[IO_ID];
        if (g->last_id < 0 || g->last_id >= g->m->hp.n_vocab)
            return nib_error_set(err, NIB_ERR_IO, "the GPU sampler returned id %d (vocabulary %d)", g->last_id,
                                 g->m->hp.n_vocab);
        return NIB_OK;
    }
    uint64_t key;
    memcpy(&key, g->io_host + IO_KEY, 8);
    g->last_id = key ? (int32_t)(0xFFFFFFFFu - (uint32_t)key) : 0;
    return NIB_OK;
}

nib_status nib_gpu_logits(nib_gpu *g, float *out, nib_error *err) {
    return nib_cuda_copy_to_host(out, g->logits, (size_t)g->m->hp.n_vocab * 4, err);
}
