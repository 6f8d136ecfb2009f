/* Scalar reference ops; see ops.h. Accumulations that decide numerics
 * (norm sums, softmax) run in double where it is free, so the CPU reference
 * the GPU is later held to is as accurate as it can cheaply be. */
#include "ops/ops.h"

#include <math.h>

void nib_rmsnorm(float *y, const float *x, const float *w, int64_t n, float eps) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
    float inv = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    if (w) {
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * inv * w[i];
    } else {
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * inv;
    }
}

void nib_rope_apply(float *x, int64_t pos, const nib_rope *r) {
    int32_t half = r->n_rot / 2;
    /* base^(-2i/n_rot) computed per i in double: no drift over long heads */
    for (int32_t i = 0; i < half; i++) {
        double inv_freq = pow((double)r->base, -2.0 * i / (double)r->n_rot);
        if (r->freq_factors) inv_freq /= (double)r->freq_factors[i];
        double theta = (double)pos / (double)r->scale * inv_freq;
        float c = (float)cos(theta), s = (float)sin(theta);
        int32_t a = r->neox ? i : 2 * i;
        int32_t b = r->neox ? i + half : 2 * i + 1;
        float x0 = x[a], x1 = x[b];
        x[a] = x0 * c - x1 * s;
        x[b] = x0 * s + x1 * c;
    }
}

void nib_swiglu(float *gate, const float *up, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        gate[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

void nib_geglu_tanh(float *gate, const float *up, int64_t n) {
    /* the tanh approximation of GELU, as Gemma was trained with */
    const float k = 0.7978845608028654f;  /* sqrt(2/pi) */
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        gate[i] = 0.5f * g * (1.0f + tanhf(k * (g + 0.044715f * g * g * g))) * up[i];
    }
}

static inline float kv_at(const void *base, int kv_f16, int64_t i) {
    return kv_f16 ? nib_fp16_to_f32(((const nib_fp16 *)base)[i]) : ((const float *)base)[i];
}

void nib_attention_head(float *out, const float *q, const void *k, const void *v, int64_t kv_stride, int kv_f16,
                        int32_t hd_k, int32_t hd_v, int64_t j0, int64_t j1, float scale, float *scores) {
    float mx = -INFINITY;
    for (int64_t j = j0; j < j1; j++) {
        float s = 0.0f;
        for (int32_t d = 0; d < hd_k; d++) s += q[d] * kv_at(k, kv_f16, j * kv_stride + d);
        s *= scale;
        scores[j - j0] = s;
        if (s > mx) mx = s;
    }
    double sum = 0.0;
    for (int64_t j = j0; j < j1; j++) {
        float e = expf(scores[j - j0] - mx);
        scores[j - j0] = e;
        sum += e;
    }
    float inv = (float)(1.0 / sum);
    for (int32_t d = 0; d < hd_v; d++) out[d] = 0.0f;
    for (int64_t j = j0; j < j1; j++) {
        float p = scores[j - j0] * inv;
        for (int32_t d = 0; d < hd_v; d++) out[d] += p * kv_at(v, kv_f16, j * kv_stride + d);
    }
}
