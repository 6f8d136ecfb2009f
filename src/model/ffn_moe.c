/* The mixture-of-experts FFN on the CPU (Mixtral, Qwen3-MoE, OLMoE, Granite,
 * gpt-oss), as llama.cpp's build_moe_ffn computes it:
 *
 *   l      = router . x (+ its bias: gpt-oss)
 *   p      = softmax(l)                             over the n_expert experts
 *   chosen = the n_expert_used largest p, largest first
 *   w_k    = p[chosen_k]  (/ max(sum_k p[chosen_k], 2^-14) when expert_norm)
 *            or, gpt-oss: softmax over l[chosen_k] of the k largest logits
 *   out    = sum_k w_k * (down_k(act(gate_k . x + bg) * (up_k . x + bu)) + bd)
 *            in choice order (the biases: gpt-oss's)
 *
 * Each expert runs once for all the tokens of the batch that chose it: their
 * rows are gathered, put through the expert's three matrices (each
 * repacked at load like the dense ones, as the context's views of the 3-D
 * tensors, unless they would not fit the memory available), and its outputs go
 * to the tokens' slots, summed per token in choice order at the end. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "model/context_internal.h"
#include "ops/ops.h"

#define MOE_WEIGHT_SUM_MIN 6.103515625e-5f /* llama.cpp clamps the sum it divides by to this (2^-14) */

/* the k largest of p[0..n) by value, largest first (the first index among
 * equals); n <= NIB_MAX_EXPERTS, checked at load */
static void top_k(const float *p, int n, int k, int32_t *sel) {
    bool taken[NIB_MAX_EXPERTS] = {false};
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (!taken[i] && (best < 0 || p[i] > p[best])) best = i;
        taken[best] = true;
        sel[j] = best;
    }
}

/* y's n rows (of m outputs) += expert e's row of bias b (absent: nothing) */
static void add_expert_bias(float *y, const nib_weight *b, int e, int64_t n, int64_t m) {
    if (!b->data) return;
    const float *row = (const float *)b->data + (int64_t)e * m;
    for (int64_t r = 0; r < n; r++)
        for (int64_t i = 0; i < m; i++) y[r * m + i] += row[i];
}

/* Expert e's matrix k (0 gate, 1 up, 2 down) of layer il: the context's view and its packed copy. */
static nib_status expert_matmul(nib_ctx *c, int il, int k, int e, const float *X, int64_t n, float *Y, nib_error *err) {
    const int64_t v = ((int64_t)il * 3 + k) * c->m->hp.n_expert + e;
    const int32_t p = c->expert_packed[v];
    return nib_ctx_matmul_packed(c, &c->expert_views[v], p >= 0 ? &c->packed[p] : NULL, X, n, Y, err);
}

nib_status nib_ffn_moe(nib_ctx *c, const nib_layer *l, int il, int64_t n_tok, nib_error *err) {
    const nib_hparams *hp = &c->m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff_exp;
    const int K = hp->n_expert_used, NE = hp->n_expert;
    nib_status s;
    if ((s = nib_ctx_matmul(c, &l->gate_inp, c->xn, n_tok, c->router, err))) return s;
    for (int64_t t = 0; t < n_tok; t++) {
        float *p = c->router + t * NE, *w = c->moe_w + t * K;
        int32_t *sel = c->moe_sel + t * K;
        if (l->gate_inp_b.data)
            for (int e = 0; e < NE; e++) p[e] += ((const float *)l->gate_inp_b.data)[e];
        if (hp->expert_softmax_chosen) { /* gpt-oss: the k largest logits, a softmax over them */
            top_k(p, NE, K, sel);
            for (int k = 0; k < K; k++) w[k] = p[sel[k]];
            nib_softmax_rows(w, 1, K); /* ops.h: the exponentials' sum in double, as ggml's */
        } else {
            nib_softmax_rows(p, 1, NE);
            top_k(p, NE, K, sel);
            for (int k = 0; k < K; k++) w[k] = p[sel[k]];
        }
        float sum = 0.0f;
        for (int k = 0; k < K; k++) sum += w[k];
        if (hp->expert_norm) {
            sum = sum > MOE_WEIGHT_SUM_MIN ? sum : MOE_WEIGHT_SUM_MIN;
            for (int k = 0; k < K; k++) w[k] /= sum;
        }
    }
    for (int e = 0; e < NE; e++) {
        int64_t n = 0;
        for (int64_t slot = 0; slot < n_tok * K; slot++)
            if (c->moe_sel[slot] == e) {
                c->moe_rows[n] = (int32_t)slot;
                memcpy(c->moe_x + n * E, c->xn + (slot / K) * E, (size_t)E * sizeof(float));
                n++;
            }
        if (n == 0) continue;
        if ((s = expert_matmul(c, il, 0, e, c->moe_x, n, c->gate, err)) ||
            (s = expert_matmul(c, il, 1, e, c->moe_x, n, c->up, err)))
            return s;
        add_expert_bias(c->gate, &l->gate_exps_b, e, n, F);
        add_expert_bias(c->up, &l->up_exps_b, e, n, F);
        nib_ctx_glu(c, c->gate, c->up, n * F);
        if ((s = expert_matmul(c, il, 2, e, c->gate, n, c->moe_x, err))) return s;
        add_expert_bias(c->moe_x, &l->down_exps_b, e, n, E);
        for (int64_t r = 0; r < n; r++)
            memcpy(c->moe_y + (int64_t)c->moe_rows[r] * E, c->moe_x + r * E, (size_t)E * sizeof(float));
    }
    for (int64_t t = 0; t < n_tok; t++) {
        float *o = c->o + t * E;
        const float *w = c->moe_w + t * K;
        for (int64_t i = 0; i < E; i++) o[i] = c->moe_y[(t * K) * E + i] * w[0];
        for (int k = 1; k < K; k++) {
            const float *y = c->moe_y + (t * K + k) * E;
            for (int64_t i = 0; i < E; i++) o[i] += y[i] * w[k];
        }
    }
    return NIB_OK;
}
