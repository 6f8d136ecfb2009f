/* The CPU's element-wise ops and attention for the forward step: scalar
 * reference code, written to be read (the matrix products, where the time
 * goes, live in cpu/). Shapes are given in the comments as (rows, cols). */
#ifndef NIB_OPS_H
#define NIB_OPS_H

#include <stdint.h>

#include "core/fp16.h"

/* y = x / rms(x) * w over n elements (y may be x). w NULL: no weight. */
void nib_rmsnorm(float *y, const float *x, const float *w, int64_t n, float eps);

/* Rotary embedding of one head vector x (head_dim floats) at position pos:
 * the first n_rot dimensions rotate, the rest pass through. neox: pairs
 * (i, i + n_rot/2), else adjacent pairs (2i, 2i+1). theta_i = pos / scale *
 * base^(-2i/n_rot) / freq_factors[i] (freq_factors may be NULL). */
typedef struct nib_rope {
    int32_t n_rot;
    int neox;
    float base;
    float scale;
    const float *freq_factors;
    float mscale;          /* cos and sin times this (RoPE scaling's attention factor; 1: none) */
} nib_rope;
void nib_rope_apply(float *x, int64_t pos, const nib_rope *r);
/* The same in two steps, so the cos/sin of a position are computed once and
 * applied to all its heads: cs gets (n_rot/2) (cos, sin) pairs for pos. */
void nib_rope_table(float *cs, int64_t pos, const nib_rope *r);
void nib_rope_apply_table(float *x, const float *cs, const nib_rope *r);

/* gate = act(gate) * up over n elements. Both take the AVX2 form where the
 * CPU has it: the same operations but tanh (GELU) and exp (SiLU), which are
 * vector approximations there (ops/act_avx2.c) instead of libm's tanhf and
 * expf (the references). */
void nib_swiglu(float *gate, const float *up, int64_t n);
void nib_swiglu_ref(float *gate, const float *up, int64_t n);  /* scalar reference */
void nib_swiglu_avx2(float *gate, const float *up, int64_t n); /* AVX2/FMA: only when the CPU has them */
/* gpt-oss's SwiGLU (llama.cpp's swiglu_oai, alpha 1.702, limit 7):
 * g = min(gate, 7), u = clamp(up, -7, 7), gate = g * sigmoid(1.702 g) * (u + 1) */
void nib_swiglu_oai(float *gate, const float *up, int64_t n);
void nib_geglu_tanh(float *gate, const float *up, int64_t n);
void nib_geglu_tanh_ref(float *gate, const float *up, int64_t n);  /* scalar reference */
void nib_geglu_tanh_avx2(float *gate, const float *up, int64_t n); /* AVX2/FMA: only when the CPU has them */

/* Attention of a group of query heads sharing one KV head (GQA) over cached
 * positions [j0, j1): out[h] = softmax(scale * q[h] . K[j]) . V[j]. K and V
 * rows are strided (k_stride/v_stride elements between positions), fp16 or fp32. */
typedef struct nib_attn_args {
    float *out;            /* (group, hd_v) */
    const float *q;        /* (group, hd_k) */
    int group;
    const void *k, *v;     /* first element of this KV head at position 0 */
    int64_t k_stride, v_stride;  /* elements between positions */
    int kv_f16;
    int32_t hd_k, hd_v;
    int64_t j0, j1;
    float scale;
    float *scores;         /* scratch (group, j1 - j0) */
    float softcap;         /* 0: off; else each scaled score s becomes softcap * tanh(s / softcap) */
    const float *sinks;    /* NULL, or (group) one logit per query head that joins the softmax's denominator
                            * only (gpt-oss's attention sinks) */
} nib_attn_args;

void nib_attention_group(const nib_attn_args *a);       /* best available */

/* nq consecutive query tokens of one group: token i is at position
 * a->j1 - 1 + i, its queries at a->q + i * q_stride, its output at a->out + i
 * * out_stride; it sees [max(0, p + 1 - window) (window > 0), p], and token
 * 0's range is a->j0, a->j1 as for nib_attention_group. scores holds nq *
 * group * (nq - 1 + a->j1 - a->j0) floats. The outputs are, bit for bit,
 * nib_attention_group's on each token alone; the AVX2 form reads each K and
 * V row once for all nq tokens (prompts). At most NIB_ATTN_MAX_TOKENS. */
#define NIB_ATTN_MAX_TOKENS 4
void nib_attention_tokens(const nib_attn_args *a, int nq, int64_t q_stride, int64_t out_stride, int32_t window);
void nib_attention_tokens_avx2(const nib_attn_args *a, int nq, int64_t q_stride, int64_t out_stride, int32_t window);
void nib_attention_group_ref(const nib_attn_args *a);   /* scalar reference */
void nib_attention_group_avx2(const nib_attn_args *a);  /* AVX2/F16C: only when the CPU has them */
void nib_softmax_rows(float *s, int g, int64_t n);
/* The same with row h's denominator holding exp(sinks[h]) too (the sink
 * takes part in the max, as llama.cpp's soft_max with sinks). */
void nib_softmax_rows_sinks(float *s, int g, int64_t n, const float *sinks);
/* s[i] = cap * tanh(s[i] / cap) over n scores (cap > 0), as llama.cpp's attention softcap */
void nib_softcap_scores(float *s, int64_t n, float cap);

#endif
