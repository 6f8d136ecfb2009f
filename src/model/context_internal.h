/* The CPU context's insides, shared by the forward step (context.c) and the
 * pieces of it that live in files of their own (ffn_moe.c). Not part of any
 * public API. */
#ifndef NIB_MODEL_CONTEXT_INTERNAL_H
#define NIB_MODEL_CONTEXT_INTERNAL_H

#include "model/context.h"
#include "model/context_cuda.h"

typedef struct packed_weight {
    const nib_weight *w;
    void *p;
    nib_simd_level layout; /* the level whose layout p holds */
    int64_t min_tokens;    /* fewer tokens run on the file's layout (nib_cpu_packed_min_tokens) */
} packed_weight;

struct nib_ctx {
    const nib_model *m;
    nib_pool *pool;
    int32_t n_ctx, n_batch, pos;
    int kv_f16;
    size_t kv_elem;           /* bytes per cached element */
    int64_t kv_k_row, kv_v_row; /* elements per position: n_head_kv * head_dim */
    uint8_t *k_cache;         /* (n_layer, n_ctx, kv_k_row) */
    uint8_t *v_cache;         /* (n_layer, n_ctx, kv_v_row) */

    float *x;                 /* (n_batch, n_embd) the residual stream */
    float *xn;                /* (n_batch, n_embd) normed input of a sub-block */
    float *q;                 /* (n_batch, n_head * hd_k) */
    float *k;                 /* (n_batch, n_head_kv * hd_k) */
    float *v;                 /* (n_batch, n_head_kv * hd_v) */
    float *att;               /* (n_batch, n_head * hd_v) attention output */
    float *o;                 /* (n_batch, n_embd) sub-block output */
    float *gate, *up;         /* (n_batch, max(n_ff, n_ff_exp)) */
    /* mixture-of-experts layers (ffn_moe.c); NULL without experts */
    float *router;            /* (n_batch, n_expert) the router's logits, then probabilities */
    float *moe_x;             /* (n_batch, n_embd) one expert's tokens, gathered */
    float *moe_y;             /* (n_batch * n_expert_used, n_embd) each token's experts' outputs, in choice order */
    int32_t *moe_sel;         /* (n_batch, n_expert_used) the experts each token chose */
    float *moe_w;             /* (n_batch, n_expert_used) their weights */
    int32_t *moe_rows;        /* (n_batch) one expert's tokens' slots: t * n_expert_used + k */
    nib_weight *expert_views; /* (n_layer, 3, n_expert) each expert's gate, up and down as a weight of its own */
    int32_t *expert_packed;   /* (same) its index in packed[], or -1 */
    int64_t n_expert_views;
    char experts_note[160];   /* why the experts were not repacked, or empty */
    float *scores;            /* (n_threads, NIB_ATTN_MAX_TOKENS * group * n_ctx) softmax scratch per thread */
    float *rope_cs;           /* (n_batch, n_rot) cos/sin of each position in the batch */
    const float *rope_ff;     /* the model's frequency divisors for this context size (nib_model_rope_ff) */
    float *logits;            /* (n_vocab) last position */
    void *mm_scratch;         /* activation quantization for the matmuls */
    packed_weight *packed;    /* the matrices repacked for the CPU kernels (nib_cpu_repack) */
    int n_packed, n_packed_dense; /* the dense matrices' first; then the experts' (expert_packed) */
    uint64_t packed_bytes;
    int n_threads;
    nib_gpu *gpu;             /* the CUDA step, when the context runs there; the CPU buffers stay unallocated */
    bool logits_stale;        /* the GPU has logits the host copy lacks */
    bool decoded;
    bool smp_pending;         /* nib_ctx_sample_next armed the next decode */
    bool sampled;             /* the last decode sampled on the device */
    nib_gpu_sampling smp;
};

/* y (n_tok, w->ne[1]) = X (n_tok, w->ne[0]) . w^T on the thread pool, from the
 * repacked copy where there is one; errors name the weight. */
nib_status nib_ctx_matmul(nib_ctx *c, const nib_weight *w, const float *X, int64_t n_tok, float *Y, nib_error *err);
/* gate[i] = act(gate[i]) * up[i] for i < n (the model's GLU), on the pool when it pays. */
void nib_ctx_glu(nib_ctx *c, float *gate, const float *up, int64_t n);
/* The mixture-of-experts FFN of a layer on xn's n_tok rows, into o (ffn_moe.c). */
nib_status nib_ffn_moe(nib_ctx *c, const nib_layer *l, int il, int64_t n_tok, nib_error *err);
/* nib_ctx_matmul with the packed copy given (NULL: the file's layout). */
nib_status nib_ctx_matmul_packed(nib_ctx *c, const nib_weight *w, const packed_weight *p, const float *X, int64_t n_tok,
                                 float *Y, nib_error *err);

#endif
