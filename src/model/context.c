/* The CPU forward step: one decoder block for every architecture, its
 * optional pieces switched by what the model bound (biases, QK-norm, sandwich
 * norms) and by hyperparameters (activation, RoPE ordering, window).
 *
 * Buffers are sized once in nib_ctx_new for n_batch tokens; the token loop
 * never allocates. */
#include "model/context_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/context_cuda.h"
#include "ops/ops.h"


/* ---- setup --------------------------------------------------------------------- */

static size_t mm_scratch_for(const nib_weight *w, int64_t n_tok) {
    return w->data ? nib_cpu_matmul_scratch_bytes(w->type, w->ne[0], n_tok) : 0;
}

static void *alloc_bytes(uint64_t a, uint64_t b, uint64_t *total, nib_error *err, const char *what);

/* The matmul weights a CPU context reads: the layers' seven and the output,
 * then every expert's three matrices (the context's views of them). */
static int cpu_matrices(const nib_ctx *c, const nib_weight **out) {
    const nib_model *m = c->m;
    int n = 0;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const nib_layer *l = &m->layers[il];
        const nib_weight *ws[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->gate, &l->up, &l->down};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) out[n++] = ws[i];
    }
    out[n++] = &m->output;
    for (int64_t i = 0; i < c->n_expert_views; i++) out[n++] = &c->expert_views[i];
    return n;
}
#define CPU_MATRICES_MAX(c) ((c)->m->hp.n_layer * 7 + 1 + (c)->n_expert_views)

/* MemAvailable of /proc/meminfo in bytes (free memory plus the page cache
 * that can be reclaimed), or 0 where there is no such file. */
static uint64_t mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[128];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    return (uint64_t)kb * 1024;
}

/* The experts' packed copies take as much memory as the experts: a model
 * near the size of the machine's memory keeps them in the file's layout
 * (slower, but mapped, not copied) and says so (nib_ctx_experts_note). */
#define EXPERTS_PACK_MAX_SHARE 0.8 /* of MemAvailable */
static bool experts_fit(nib_ctx *c) {
    uint64_t need = 0;
    for (int64_t i = 0; i < c->n_expert_views; i++) {
        const nib_weight *w = &c->expert_views[i];
        need += nib_cpu_repack_bytes(w->type, w->ne[0], w->ne[1]);
    }
    const uint64_t avail = mem_available();
    if (need == 0 || avail == 0 || (double)need <= EXPERTS_PACK_MAX_SHARE * (double)avail) return true;
    snprintf(c->experts_note, sizeof c->experts_note,
             "the experts stay in the file's layout: their packed copy would take %.1f GiB of the %.1f GiB available",
             (double)need / (1 << 30), (double)avail / (1 << 30));
    return false;
}

const char *nib_ctx_experts_note(const nib_ctx *c) { return c->experts_note[0] ? c->experts_note : NULL; }

/* Repacks every matrix whose format has a layout of the CPU kernels' own at
 * the active SIMD level (cpu/repack.h); they then run from the copy.
 * NIB_REPACK=0 in the environment keeps the file's layout (to compare). */
static bool repack_weights(nib_ctx *c, uint64_t *total, nib_error *err) {
    const char *env = getenv("NIB_REPACK");
    if (env && !strcmp(env, "0")) return true;
    const nib_weight **ws = malloc(sizeof *ws * (size_t)CPU_MATRICES_MAX(c));
    if (!ws || !(c->packed = calloc((size_t)CPU_MATRICES_MAX(c), sizeof *c->packed))) {
        free(ws);
        nib_error_set(err, NIB_ERR_NOMEM, "out of host memory");
        return false;
    }
    const int n_all = cpu_matrices(c, ws), n_dense = n_all - (int)c->n_expert_views;
    const int n = c->n_expert_views > 0 && !experts_fit(c) ? n_dense : n_all;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        const nib_weight *w = ws[i];
        if (i == n_dense) c->n_packed_dense = c->n_packed; /* packed_of looks among the dense ones only */
        const size_t bytes = w->data ? nib_cpu_repack_bytes(w->type, w->ne[0], w->ne[1]) : 0;
        if (bytes == 0) continue;
        /* the LM head only ever sees one token at a time (forward's last step) */
        if (w == &c->m->output && nib_cpu_packed_min_tokens(w->type, nib_cpu_simd_level()) > 1) continue;
        void *p = alloc_bytes(1, bytes, total, err, "the weights repacked for the CPU kernels");
        if (!p) {
            ok = false;
            break;
        }
        if (i >= n_dense) c->expert_packed[i - n_dense] = c->n_packed;
        packed_weight *pw = &c->packed[c->n_packed++];
        *pw = (packed_weight){w, p, NIB_SIMD_SCALAR, 1};
        c->packed_bytes += bytes;
        if (nib_cpu_repack(c->pool, w->type, w->data, w->ne[0], w->ne[1], p, &pw->layout) == NIB_OK) {
            pw->min_tokens = nib_cpu_packed_min_tokens(w->type, pw->layout);
        } else {
            nib_error_set(err, NIB_ERR_ARG, "repacking '%.*s' (%s, %lld x %lld) failed", w->name ? w->name_len : 1,
                          w->name ? w->name : "?", nib_type_name(w->type), (long long)w->ne[0], (long long)w->ne[1]);
            ok = false;
        }
    }
    if (n == n_dense) c->n_packed_dense = c->n_packed;
    free(ws);
    return ok;
}

static const packed_weight *packed_of(const nib_ctx *c, const nib_weight *w) {
    for (int i = 0; i < c->n_packed_dense; i++)
        if (c->packed[i].w == w) return &c->packed[i];
    return NULL;
}

static void *alloc_bytes(uint64_t a, uint64_t b, uint64_t *total, nib_error *err, const char *what) {
    uint64_t n;
    if (!nib_mul_u64(a, b, &n) || n > SIZE_MAX) {
        nib_error_set(err, NIB_ERR_NOMEM, "%s: size overflows", what);
        return NULL;
    }
    void *p = malloc(n ? (size_t)n : 1);
    if (!p)
        nib_error_set(err, NIB_ERR_NOMEM, "out of host memory allocating %s: %llu bytes needed (%llu allocated so far)",
                      what, (unsigned long long)n, (unsigned long long)*total);
    *total += n;
    return p;
}

nib_ctx *nib_ctx_new(const nib_model *m, const nib_ctx_params *p, nib_error *err) {
    const nib_hparams *hp = &m->hp;
    nib_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        nib_error_set(err, NIB_ERR_NOMEM, "out of memory");
        return NULL;
    }
    c->m = m;
    c->n_ctx = p->n_ctx > 0 ? p->n_ctx : (hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096);
    if (c->n_ctx < 1) {
        /* a file whose context_length is 0 runs only with a size given */
        nib_error_set(err, NIB_ERR_ARG, "the model's %s.context_length is %d: give a context size (-c)",
                      hp->arch_name, hp->n_ctx_train);
        free(c);
        return NULL;
    }
    c->rope_ff = nib_model_rope_ff(m, c->n_ctx);
    c->n_batch = p->n_batch > 0 ? p->n_batch : 256;
    if (c->n_batch > c->n_ctx) c->n_batch = c->n_ctx;
    c->kv_f16 = !p->kv_f32;
    c->kv_elem = c->kv_f16 ? 2 : 4;
    c->kv_k_row = (int64_t)hp->n_head_kv * hp->head_dim_k;
    c->kv_v_row = (int64_t)hp->n_head_kv * hp->head_dim_v;
    c->pool = nib_pool_new(p->n_threads, err);
    if (!c->pool) goto fail;
    c->n_threads = nib_pool_size(c->pool);
    if (p->device == NIB_DEVICE_CUDA) {
        /* the cache and every buffer live on the GPU; the host keeps the logits */
        if (!(c->gpu = nib_gpu_new(m, c->n_ctx, c->n_batch, err))) goto fail;
        if (!(c->logits = malloc((size_t)hp->n_vocab * 4))) {
            nib_error_set(err, NIB_ERR_NOMEM, "out of host memory for the logits");
            goto fail;
        }
        return c;
    }

    uint64_t total = 0, B = (uint64_t)c->n_batch;
    const int64_t ff = hp->n_expert > 0 && hp->n_ff_exp > hp->n_ff ? hp->n_ff_exp : hp->n_ff;
    uint64_t kv_pos = (uint64_t)hp->n_layer * (uint64_t)c->n_ctx;
    if (!(c->k_cache = alloc_bytes(kv_pos, (uint64_t)c->kv_k_row * c->kv_elem, &total, err, "the K cache")) ||
        !(c->v_cache = alloc_bytes(kv_pos, (uint64_t)c->kv_v_row * c->kv_elem, &total, err, "the V cache")) ||
        !(c->x = alloc_bytes(B, (uint64_t)hp->n_embd * 4, &total, err, "activations")) ||
        !(c->xn = alloc_bytes(B, (uint64_t)hp->n_embd * 4, &total, err, "activations")) ||
        !(c->o = alloc_bytes(B, (uint64_t)hp->n_embd * 4, &total, err, "activations")) ||
        !(c->q = alloc_bytes(B, (uint64_t)hp->n_head * hp->head_dim_k * 4, &total, err, "queries")) ||
        !(c->k = alloc_bytes(B, (uint64_t)c->kv_k_row * 4, &total, err, "keys")) ||
        !(c->v = alloc_bytes(B, (uint64_t)c->kv_v_row * 4, &total, err, "values")) ||
        !(c->att = alloc_bytes(B, (uint64_t)hp->n_head * hp->head_dim_v * 4, &total, err, "attention output")) ||
        !(c->gate = alloc_bytes(B, (uint64_t)ff * 4, &total, err, "feed-forward")) ||
        !(c->up = alloc_bytes(B, (uint64_t)ff * 4, &total, err, "feed-forward")) ||
        !(c->scores = alloc_bytes((uint64_t)c->n_threads * (uint64_t)(hp->n_head / hp->n_head_kv) * NIB_ATTN_MAX_TOKENS,
                                  (uint64_t)c->n_ctx * 4, &total, err, "attention scores")) ||
        !(c->rope_cs = alloc_bytes(B, (uint64_t)hp->n_rot * 4, &total, err, "rope table")) ||
        !(c->logits = alloc_bytes((uint64_t)hp->n_vocab, 4, &total, err, "logits")))
        goto fail;
    if (hp->n_expert > 0) {
        const uint64_t BK = B * (uint64_t)hp->n_expert_used;
        if (!(c->router = alloc_bytes(B, (uint64_t)hp->n_expert * 4, &total, err, "the experts' router")) ||
            !(c->moe_x = alloc_bytes(B, (uint64_t)hp->n_embd * 4, &total, err, "the experts' inputs")) ||
            !(c->moe_y = alloc_bytes(BK, (uint64_t)hp->n_embd * 4, &total, err, "the experts' outputs")) ||
            !(c->moe_sel = alloc_bytes(BK, 4, &total, err, "the experts' choices")) ||
            !(c->moe_w = alloc_bytes(BK, 4, &total, err, "the experts' weights")) ||
            !(c->moe_rows = alloc_bytes(B, 4, &total, err, "the experts' tokens")))
            goto fail;
    }
    /* the largest activation scratch any matmul of this model needs */
    size_t mm = mm_scratch_for(&m->output, 1);
    for (int il = 0; il < hp->n_layer; il++) {
        const nib_layer *l = &m->layers[il];
        const nib_weight *ws[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->gate, &l->up, &l->down,
                                  &l->gate_inp, &l->gate_exps, &l->up_exps, &l->down_exps};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
            size_t s = mm_scratch_for(ws[i], c->n_batch);
            if (s > mm) mm = s;
        }
    }
    if (!(c->mm_scratch = alloc_bytes(1, mm, &total, err, "matmul scratch"))) goto fail;
    if (hp->n_expert > 0) { /* each expert's matrices as weights of their own, for the repacking */
        c->n_expert_views = (int64_t)hp->n_layer * 3 * hp->n_expert;
        if (!(c->expert_views = alloc_bytes((uint64_t)c->n_expert_views, sizeof *c->expert_views, &total, err,
                                            "the experts' views")) ||
            !(c->expert_packed = alloc_bytes((uint64_t)c->n_expert_views, sizeof *c->expert_packed, &total, err,
                                             "the experts' views")))
            goto fail;
        for (int il = 0; il < hp->n_layer; il++)
            for (int k = 0; k < 3; k++) {
                const nib_layer *l = &m->layers[il];
                const nib_weight *w3 = k == 0 ? &l->gate_exps : k == 1 ? &l->up_exps : &l->down_exps;
                for (int e = 0; e < hp->n_expert; e++) {
                    const int64_t v = ((int64_t)il * 3 + k) * hp->n_expert + e;
                    c->expert_views[v] = nib_expert_slice(w3, e);
                    c->expert_packed[v] = -1;
                }
            }
    }
    if (!repack_weights(c, &total, err)) goto fail;
    return c;
fail:
    nib_ctx_free(c);
    return NULL;
}

void nib_ctx_free(nib_ctx *c) {
    if (!c) return;
    nib_gpu_free(c->gpu);
    nib_pool_free(c->pool);
    free(c->k_cache), free(c->v_cache), free(c->x), free(c->xn), free(c->o), free(c->q), free(c->k), free(c->v);
    free(c->att), free(c->gate), free(c->up), free(c->scores), free(c->rope_cs), free(c->logits), free(c->mm_scratch);
    free(c->router), free(c->moe_x), free(c->moe_y), free(c->moe_sel), free(c->moe_w), free(c->moe_rows);
    free(c->expert_views), free(c->expert_packed);
    for (int i = 0; i < c->n_packed; i++) free(c->packed[i].p);
    free(c->packed);
    free(c);
}

int32_t nib_ctx_n_ctx(const nib_ctx *c) { return c->n_ctx; }
int32_t nib_ctx_pos(const nib_ctx *c) { return c->pos; }
int nib_ctx_n_threads(const nib_ctx *c) { return c->n_threads; }
void nib_ctx_truncate(nib_ctx *c, int32_t pos) {
    if (pos >= 0 && pos < c->pos) c->pos = pos;
}
uint64_t nib_ctx_kv_bytes(const nib_ctx *c) {
    return (uint64_t)c->m->hp.n_layer * (uint64_t)c->n_ctx * (uint64_t)(c->kv_k_row + c->kv_v_row) * c->kv_elem;
}
nib_device nib_ctx_device(const nib_ctx *c) { return c->gpu ? NIB_DEVICE_CUDA : NIB_DEVICE_CPU; }
uint64_t nib_ctx_repacked_bytes(const nib_ctx *c, int *n_matrices) {
    if (n_matrices) *n_matrices = c->n_packed;
    return c->packed_bytes;
}
uint64_t nib_ctx_device_bytes(const nib_ctx *c) { return c->gpu ? nib_gpu_device_bytes(c->gpu) : 0; }
const char *nib_ctx_prompt_path(const nib_ctx *c) { return c->gpu ? nib_gpu_prompt_path(c->gpu) : NULL; }

const float *nib_ctx_logits(nib_ctx *c) {
    if (c->gpu && c->logits_stale) {
        nib_error err;
        /* a failed copy leaves NaN, which the caller's finiteness check reports */
        if (nib_gpu_logits(c->gpu, c->logits, &err) != NIB_OK)
            for (int32_t i = 0; i < c->m->hp.n_vocab; i++) c->logits[i] = NAN;
        c->logits_stale = false;
    }
    return c->logits;
}

bool nib_ctx_sample_next(nib_ctx *c, float temp, int32_t top_k, float top_p, float min_p, double u) {
    if (!c->gpu) return false;
    const nib_gpu_sampling smp = {temp, top_k, top_p, min_p, u};
    c->smp = smp;
    c->smp_pending = true;
    return true;
}

int32_t nib_ctx_sampled(const nib_ctx *c) { return c->gpu && c->sampled ? nib_gpu_argmax(c->gpu) : -1; }

int32_t nib_ctx_argmax(nib_ctx *c) {
    if (!c->decoded) return -1;
    if (c->gpu) return nib_gpu_argmax(c->gpu);
    /* the first maximum, NaN never wins: what the GPU's argmax and the sampler's greedy pick give */
    int32_t best = -1;
    for (int32_t i = 0; i < c->m->hp.n_vocab; i++)
        if (!isnan(c->logits[i]) && (best < 0 || c->logits[i] > c->logits[best])) best = i;
    return best < 0 ? 0 : best;
}

/* ---- pieces of the step ---------------------------------------------------------- */

nib_status nib_ctx_matmul(nib_ctx *c, const nib_weight *w, const float *X, int64_t n_tok, float *Y, nib_error *err) {
    return nib_ctx_matmul_packed(c, w, packed_of(c, w), X, n_tok, Y, err);
}

nib_status nib_ctx_matmul_packed(nib_ctx *c, const nib_weight *w, const packed_weight *p, const float *X, int64_t n_tok,
                                 float *Y, nib_error *err) {
    if (p && n_tok < p->min_tokens) p = NULL;
    nib_status s = p ? nib_cpu_matmul_packed(c->pool, w->type, p->layout, p->p, w->ne[0], w->ne[1], X, n_tok, Y,
                                             c->mm_scratch)
                     : nib_cpu_matmul(c->pool, w->type, w->data, w->ne[0], w->ne[1], X, n_tok, Y, c->mm_scratch);
    if (s != NIB_OK)
        return nib_error_set(err, s, "matmul of '%.*s' (%s, %lld x %lld) failed", w->name ? w->name_len : 1,
                             w->name ? w->name : "?",
                             nib_type_name(w->type), (long long)w->ne[0], (long long)w->ne[1]);
    return NIB_OK;
}

static void add_bias(float *y, const nib_weight *b, int64_t n_tok, int64_t n) {
    if (!b->data) return;
    const float *bias = b->data;
    for (int64_t t = 0; t < n_tok; t++)
        for (int64_t i = 0; i < n; i++) y[t * n + i] += bias[i];
}

/* x += o, or x += scale * o (Granite's residual_scale) */
static void residual_add(float *x, const float *o, int64_t n, float scale) {
    if (scale == 1.0f)
        for (int64_t i = 0; i < n; i++) x[i] += o[i];
    else
        for (int64_t i = 0; i < n; i++) x[i] += o[i] * scale;
}

/* RMSNorm each of n_tok * n_groups vectors of size n (per-head QK-norm when n_groups > 1). */
static void norm_rows(float *y, const float *x, const nib_weight *w, int64_t rows, int64_t n, float eps) {
    for (int64_t r = 0; r < rows; r++) nib_rmsnorm(y + r * n, x + r * n, w ? w->data : NULL, n, eps);
}

/* xn = the sub-block's input: x normed, or x itself where the block has no
 * norm before it (OLMo 2 norms only after) */
static void pre_norm(nib_ctx *c, const nib_weight *w, int64_t n_tok) {
    const int64_t E = c->m->hp.n_embd;
    if (w->data) norm_rows(c->xn, c->x, w, n_tok, E, c->m->hp.norm_eps);
    else memcpy(c->xn, c->x, (size_t)(n_tok * E) * sizeof *c->xn);
}

typedef struct attn_job {
    nib_ctx *c;
    const nib_layer *l;
    int il;
    int64_t n_tok;
    int32_t pos0;
} attn_job;

/* One (block of up to NIB_ATTN_MAX_TOKENS tokens, KV head) pair per work
 * item, spread over the threads: the group of query heads sharing that KV
 * head, for every token of the block, reads its cache rows once
 * (nib_attention_tokens; the same bits as one token at a time). Llama-3.2-1B
 * shape Q5_K_M, pp512 on 2 threads: attention was 25% of the time one token
 * a work item. */
static void attn_worker(void *arg, int ith, int nth) {
    const attn_job *j = arg;
    nib_ctx *c = j->c;
    const nib_hparams *hp = &c->m->hp;
    int group = hp->n_head / hp->n_head_kv;
    const int64_t blocks = (j->n_tok + NIB_ATTN_MAX_TOKENS - 1) / NIB_ATTN_MAX_TOKENS, items = blocks * hp->n_head_kv;
    const uint8_t *kl = c->k_cache + (uint64_t)j->il * c->n_ctx * c->kv_k_row * c->kv_elem;
    const uint8_t *vl = c->v_cache + (uint64_t)j->il * c->n_ctx * c->kv_v_row * c->kv_elem;
    for (int64_t it = ith; it < items; it += nth) {
        int64_t t = it / hp->n_head_kv * NIB_ATTN_MAX_TOKENS, kvh = it % hp->n_head_kv, h0 = kvh * group;
        const int nq = j->n_tok - t < NIB_ATTN_MAX_TOKENS ? (int)(j->n_tok - t) : NIB_ATTN_MAX_TOKENS;
        int64_t p = j->pos0 + t;  /* the block's first query's position: it sees [j0, p] */
        int64_t j0 = j->l->window > 0 && p + 1 > j->l->window ? p + 1 - j->l->window : 0;
        nib_attn_args a = {
            .out = c->att + (t * hp->n_head + h0) * hp->head_dim_v,
            .q = c->q + (t * hp->n_head + h0) * hp->head_dim_k,
            .group = group,
            .k = kl + (uint64_t)kvh * hp->head_dim_k * c->kv_elem,
            .v = vl + (uint64_t)kvh * hp->head_dim_v * c->kv_elem,
            .k_stride = c->kv_k_row,
            .v_stride = c->kv_v_row,
            .kv_f16 = c->kv_f16,
            .hd_k = hp->head_dim_k,
            .hd_v = hp->head_dim_v,
            .j0 = j0,
            .j1 = p + 1,
            .scale = hp->attn_scale,
            .softcap = hp->attn_softcap,
            .sinks = j->l->sinks.data ? (const float *)j->l->sinks.data + h0 : NULL,
            .scores = c->scores + (int64_t)ith * group * c->n_ctx * NIB_ATTN_MAX_TOKENS,
        };
        nib_attention_tokens(&a, nq, (int64_t)hp->n_head * hp->head_dim_k, (int64_t)hp->n_head * hp->head_dim_v,
                             j->l->window);
    }
}

static void store_kv(nib_ctx *c, int il, int32_t pos0, int64_t n_tok) {
    for (int64_t t = 0; t < n_tok; t++) {
        uint64_t kpos = ((uint64_t)il * c->n_ctx + (uint64_t)(pos0 + t));
        const float *ks = c->k + t * c->kv_k_row, *vs = c->v + t * c->kv_v_row;
        if (c->kv_f16) {
            nib_fp16 *kd = (nib_fp16 *)c->k_cache + kpos * c->kv_k_row;
            nib_fp16 *vd = (nib_fp16 *)c->v_cache + kpos * c->kv_v_row;
            for (int64_t i = 0; i < c->kv_k_row; i++) kd[i] = nib_f32_to_fp16(ks[i]);
            for (int64_t i = 0; i < c->kv_v_row; i++) vd[i] = nib_f32_to_fp16(vs[i]);
        } else {
            memcpy((float *)c->k_cache + kpos * c->kv_k_row, ks, (size_t)c->kv_k_row * 4);
            memcpy((float *)c->v_cache + kpos * c->kv_v_row, vs, (size_t)c->kv_v_row * 4);
        }
    }
}

static nib_status attention_block(nib_ctx *c, const nib_layer *l, int il, int64_t n_tok, nib_error *err) {
    const nib_model *m = c->m;
    const nib_hparams *hp = &m->hp;
    int64_t E = hp->n_embd, QD = (int64_t)hp->n_head * hp->head_dim_k;
    nib_status s;
    pre_norm(c, &l->attn_norm, n_tok);
    if ((s = nib_ctx_matmul(c, &l->wq, c->xn, n_tok, c->q, err))) return s;
    if ((s = nib_ctx_matmul(c, &l->wk, c->xn, n_tok, c->k, err))) return s;
    if ((s = nib_ctx_matmul(c, &l->wv, c->xn, n_tok, c->v, err))) return s;
    add_bias(c->q, &l->bq, n_tok, QD);
    add_bias(c->k, &l->bk, n_tok, c->kv_k_row);
    add_bias(c->v, &l->bv, n_tok, c->kv_v_row);
    /* QK-norm per head (qwen3, gemma3: weights of head_dim) or over the whole projection (olmoe) */
    if (l->q_norm.data)
        norm_rows(c->q, c->q, &l->q_norm, n_tok * QD / l->q_norm.ne[0], l->q_norm.ne[0], hp->norm_eps);
    if (l->k_norm.data)
        norm_rows(c->k, c->k, &l->k_norm, n_tok * c->kv_k_row / l->k_norm.ne[0], l->k_norm.ne[0], hp->norm_eps);
    nib_rope rope = {hp->n_rot, hp->rope_kind == NIB_ROPE_NEOX, l->rope_base, l->rope_scale, c->rope_ff, m->rope_mscale};
    for (int64_t t = 0; t < n_tok && !l->no_rope; t++) {
        float *cs = c->rope_cs + t * hp->n_rot;
        nib_rope_table(cs, c->pos + t, &rope);
        for (int32_t h = 0; h < hp->n_head; h++) nib_rope_apply_table(c->q + (t * hp->n_head + h) * hp->head_dim_k, cs, &rope);
        for (int32_t h = 0; h < hp->n_head_kv; h++)
            nib_rope_apply_table(c->k + (t * hp->n_head_kv + h) * hp->head_dim_k, cs, &rope);
    }
    store_kv(c, il, c->pos, n_tok);
    attn_job job = {c, l, il, n_tok, c->pos};
    nib_pool_run(c->pool, attn_worker, &job);
    if ((s = nib_ctx_matmul(c, &l->wo, c->att, n_tok, c->o, err))) return s;
    add_bias(c->o, &l->bo, n_tok, E);
    if (l->post_attn_norm.data) norm_rows(c->o, c->o, &l->post_attn_norm, n_tok, E, hp->norm_eps);
    residual_add(c->x, c->o, n_tok * E, hp->residual_scale);
    return NIB_OK;
}

/* The GLU (gate = act(gate) * up) over the threads in slices of whole
 * 16-element runs: each element is computed as the single-threaded op does,
 * so the bits do not depend on the thread count. Below GLU_PARALLEL_MIN
 * elements (one decode token of most models) the pool's wake-up costs more
 * than it saves. Gemma 3 270M pp128 on 2 threads: the GELU's tanhf had been
 * ~14% of the prompt's time on one thread while the other waited. */
#define GLU_PARALLEL_MIN 4096
typedef struct glu_job {
    float *gate;
    const float *up;
    int64_t n;
    nib_ffn_act act;
} glu_job;

static void glu_run(const glu_job *j, int64_t i0, int64_t i1) {
    if (i0 >= i1) return;
    if (j->act == NIB_FFN_GELU_TANH) nib_geglu_tanh(j->gate + i0, j->up + i0, i1 - i0);
    else if (j->act == NIB_FFN_SWIGLU_OAI) nib_swiglu_oai(j->gate + i0, j->up + i0, i1 - i0);
    else nib_swiglu(j->gate + i0, j->up + i0, i1 - i0);
}

static void glu_worker(void *arg, int ith, int nth) {
    const glu_job *j = arg;
    const int64_t per = (j->n / nth + 15) & ~(int64_t)15;
    const int64_t i0 = ith * per, i1 = i0 + per < j->n ? i0 + per : j->n;
    glu_run(j, i0, i1);
}

void nib_ctx_glu(nib_ctx *c, float *gate, const float *up, int64_t n) {
    const glu_job j = {gate, up, n, c->m->hp.ffn_act};
    if (n < GLU_PARALLEL_MIN || c->n_threads < 2) glu_run(&j, 0, n);
    else nib_pool_run(c->pool, glu_worker, (void *)&j);
}

static nib_status ffn_block(nib_ctx *c, const nib_layer *l, int64_t n_tok, nib_error *err) {
    const nib_hparams *hp = &c->m->hp;
    int64_t E = hp->n_embd, F = hp->n_ff;
    nib_status s;
    pre_norm(c, &l->ffn_norm, n_tok);
    if (l->gate_inp.data) {
        if ((s = nib_ffn_moe(c, l, (int)(l - c->m->layers), n_tok, err))) return s;
    } else {
        if ((s = nib_ctx_matmul(c, &l->gate, c->xn, n_tok, c->gate, err))) return s;
        if ((s = nib_ctx_matmul(c, &l->up, c->xn, n_tok, c->up, err))) return s;
        nib_ctx_glu(c, c->gate, c->up, n_tok * F);
        if ((s = nib_ctx_matmul(c, &l->down, c->gate, n_tok, c->o, err))) return s;
    }
    if (l->post_ffn_norm.data) norm_rows(c->o, c->o, &l->post_ffn_norm, n_tok, E, hp->norm_eps);
    residual_add(c->x, c->o, n_tok * E, hp->residual_scale);
    return NIB_OK;
}

/* Final norm and LM head for n rows of x starting at row r0, into out (n, n_vocab). */
static nib_status head(nib_ctx *c, int64_t r0, int64_t n, float *out, nib_error *err) {
    const nib_hparams *hp = &c->m->hp;
    norm_rows(c->xn, c->x + r0 * hp->n_embd, &c->m->output_norm, n, hp->n_embd, hp->norm_eps);
    for (int64_t i = 0; i < n; i++) {
        nib_status s = nib_ctx_matmul(c, &c->m->output, c->xn + i * hp->n_embd, 1, out + i * hp->n_vocab, err);
        if (s) return s;
    }
    if (hp->logit_scale != 1.0f)
        for (int64_t i = 0; i < n * hp->n_vocab; i++) out[i] /= hp->logit_scale;
    if (hp->logit_softcap > 0.0f)
        for (int64_t i = 0; i < n * hp->n_vocab; i++)
            out[i] = hp->logit_softcap * tanhf(out[i] / hp->logit_softcap);
    return NIB_OK;
}

static nib_status forward_batch(nib_ctx *c, const int32_t *tokens, int64_t n_tok, float *all_logits, nib_error *err) {
    const nib_model *m = c->m;
    const nib_hparams *hp = &m->hp;
    nib_status s;
    for (int64_t t = 0; t < n_tok; t++) {
        if (tokens[t] < 0 || tokens[t] >= hp->n_vocab)
            return nib_error_set(err, NIB_ERR_ARG, "token id %d is outside the vocabulary of %d", tokens[t], hp->n_vocab);
        float *row = c->x + t * hp->n_embd;
        if ((s = nib_cpu_get_row(m->tok_embd.type, m->tok_embd.data, hp->n_embd, tokens[t], row)))
            return nib_error_set(err, s, "embedding lookup of token %d failed", tokens[t]);
        if (hp->embd_scale != 1.0f)
            for (int64_t i = 0; i < hp->n_embd; i++) row[i] *= hp->embd_scale;
    }
    for (int il = 0; il < hp->n_layer; il++) {
        const nib_layer *l = &m->layers[il];
        if ((s = attention_block(c, l, il, n_tok, err))) return s;
        if ((s = ffn_block(c, l, n_tok, err))) return s;
    }
    if (all_logits && (s = head(c, 0, n_tok, all_logits, err))) return s;
    if ((s = head(c, n_tok - 1, 1, c->logits, err))) return s;
    c->pos += (int32_t)n_tok;
    return NIB_OK;
}

nib_status nib_ctx_decode(nib_ctx *c, const int32_t *tokens, int64_t n, float *all_logits, nib_error *err) {
    if (n <= 0) return nib_error_set(err, NIB_ERR_ARG, "nothing to decode");
    if (n > (int64_t)c->n_ctx - c->pos)
        return nib_error_set(err, NIB_ERR_ARG,
                             "%lld tokens do not fit: the context holds %d positions and %d are used",
                             (long long)n, c->n_ctx, c->pos);
    for (int64_t i = 0; i < n; i += c->n_batch) {
        int64_t b = n - i < c->n_batch ? n - i : c->n_batch;
        float *lg = all_logits ? all_logits + i * c->m->hp.n_vocab : NULL;
        nib_status s;
        if (c->gpu) {
            for (int64_t t = 0; t < b; t++)
                if (tokens[i + t] < 0 || tokens[i + t] >= c->m->hp.n_vocab)
                    return nib_error_set(err, NIB_ERR_ARG, "token id %d is outside the vocabulary of %d",
                                         tokens[i + t], c->m->hp.n_vocab);
            const bool last = i + b == n;
            s = nib_gpu_decode(c->gpu, tokens + i, b, c->pos, lg, last && c->smp_pending ? &c->smp : NULL, err);
            if (last) c->sampled = s == NIB_OK && c->smp_pending, c->smp_pending = false;
            if (s == NIB_OK) c->pos += (int32_t)b, c->logits_stale = true;
        } else {
            s = forward_batch(c, tokens + i, b, lg, err);
        }
        if (s) return s;
        c->decoded = true;
    }
    return NIB_OK;
}
