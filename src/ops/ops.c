/* Scalar reference ops; see ops.h. Accumulations that decide numerics
 * (norm sums, softmax) run in double where it is free, so the CPU reference
 * the GPU is later held to is as accurate as it can cheaply be. */
#include "ops/ops.h"

#include "cpu/cpu.h"

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

void nib_rope_table(float *cs, int64_t pos, const nib_rope *r) {
    /* base^(-2i/n_rot) computed per i in double: no drift over long heads */
    for (int32_t i = 0; i < r->n_rot / 2; i++) {
        double inv_freq = pow((double)r->base, -2.0 * i / (double)r->n_rot);
        if (r->freq_factors) inv_freq /= (double)r->freq_factors[i];
        double theta = (double)pos / (double)r->scale * inv_freq;
        cs[2 * i] = (float)cos(theta) * r->mscale;
        cs[2 * i + 1] = (float)sin(theta) * r->mscale;
    }
}

void nib_rope_apply_table(float *x, const float *cs, const nib_rope *r) {
    int32_t half = r->n_rot / 2;
    for (int32_t i = 0; i < half; i++) {
        float c = cs[2 * i], s = cs[2 * i + 1];
        int32_t a = r->neox ? i : 2 * i;
        int32_t b = r->neox ? i + half : 2 * i + 1;
        float x0 = x[a], x1 = x[b];
        x[a] = x0 * c - x1 * s;
        x[b] = x0 * s + x1 * c;
    }
}

void nib_rope_apply(float *x, int64_t pos, const nib_rope *r) {
    float cs[1024];  /* n_rot <= head size <= 1024, checked at load */
    nib_rope_table(cs, pos, r);
    nib_rope_apply_table(x, cs, r);
}

void nib_swiglu_oai(float *gate, const float *up, int64_t n) {
    const float alpha = 1.702f, limit = 7.0f;
    for (int64_t i = 0; i < n; i++) {
        const float g = gate[i] < limit ? gate[i] : limit;
        const float u = up[i] < -limit ? -limit : up[i] > limit ? limit : up[i];
        gate[i] = g / (1.0f + expf(-alpha * g)) * (u + 1.0f);
    }
}

void nib_swiglu(float *gate, const float *up, int64_t n) {
    if (nib_cpu_simd_level() >= NIB_SIMD_AVX2) {
        nib_swiglu_avx2(gate, up, n);
        return;
    }
    nib_swiglu_ref(gate, up, n);
}

void nib_swiglu_ref(float *gate, const float *up, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        gate[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

void nib_geglu_tanh(float *gate, const float *up, int64_t n) {
    if (nib_cpu_simd_level() >= NIB_SIMD_AVX2) {
        nib_geglu_tanh_avx2(gate, up, n);
        return;
    }
    nib_geglu_tanh_ref(gate, up, n);
}

void nib_geglu_tanh_ref(float *gate, const float *up, int64_t n) {
    /* the tanh approximation of GELU, as Gemma was trained with */
    const float k = 0.7978845608028654f;  /* sqrt(2/pi) */
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        gate[i] = 0.5f * g * (1.0f + tanhf(k * (g + 0.044715f * g * g * g))) * up[i];
    }
}

