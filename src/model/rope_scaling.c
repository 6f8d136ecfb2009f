/* RoPE scaling as the metadata states it, read as llama.cpp reads it.
 *
 *   {arch}.rope.scaling.type     "linear" when absent; "none", "linear" or
 *                                "yarn" (others, such as Phi-3's "longrope",
 *                                are refused by name)
 *   {arch}.rope.scaling.factor   positions are divided by it whatever the type
 *                                (the old key: {arch}.rope.scale_linear); 0 = 1
 *
 * YaRN blends, per rotated pair i, the interpolated angle (position / factor)
 * with the extrapolated one (position) by a ramp over the pairs whose
 * wavelength lies between beta_fast and beta_slow turns of the original
 * context, and scales cos and sin by mscale = attn_factor * (1 + 0.1 ln factor):
 *
 *   theta_i = p/factor * f_i * (1 - mix_i) + p * f_i * mix_i
 *           = p/factor * f_i * (1 - mix_i + mix_i * factor)
 *
 * so it is a per-pair divisor of the frequency, 1 / (1 - mix_i + mix_i *
 * factor), beside the usual position scale, which is how both backends apply
 * it (their frequency tables take divisors already, for Llama 3.1's
 * rope_freqs), and a scale of cos and sin (the CPU's RoPE table takes it; the
 * GPU folds its square into the q.k scale, exact when the whole head rotates).
 *
 * LongRoPE (Phi-3's long-context models) is two tensors of divisors,
 * rope_factors_short for contexts up to original_context_length and
 * rope_factors_long beyond it, with rope.scaling.attn_factor as its scale. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"

#define YARN_BETA_FAST 32.0f /* llama.cpp's defaults */
#define YARN_BETA_SLOW 1.0f

/* The pair index where a rotation of wavelength n_ctx_orig / n_turns falls
 * (in float, as ggml computes it: its floor and ceil decide the ramp). */
static float corr_dim(int n_rot, int n_ctx_orig, float n_turns, float base) {
    return (float)n_rot * logf((float)n_ctx_orig / (n_turns * 2.0f * (float)M_PI)) / (2.0f * logf(base));
}

void nib_yarn_freq_divisors(float *div, int n_rot, float base, float factor, int n_ctx_orig, float ext_factor,
                            float beta_fast, float beta_slow) {
    /* as ggml's rope_yarn_corr_dims and rope_yarn_ramp, in float where they are */
    float lo = floorf(corr_dim(n_rot, n_ctx_orig, beta_fast, base));
    float hi = ceilf(corr_dim(n_rot, n_ctx_orig, beta_slow, base));
    lo = lo > 0.0f ? lo : 0.0f;
    hi = hi < (float)(n_rot - 1) ? hi : (float)(n_rot - 1);
    for (int i = 0; i < n_rot / 2; i++) {
        float y = ((float)i - lo) / fmaxf(0.001f, hi - lo);
        float ramp = 1.0f - fminf(1.0f, fmaxf(0.0f, y));
        double mix = (double)ramp * ext_factor;
        div[i] = (float)(1.0 / (1.0 - mix + mix * (double)factor));
    }
}

float nib_yarn_mscale(float factor, float ext_factor, float attn_factor) {
    return ext_factor != 0.0f ? attn_factor * (1.0f + 0.1f * logf(factor)) : attn_factor;
}

nib_status nib_read_rope_scaling(nib_loader *ld, nib_model *m) {
    char key[128];
    nib_str type = {"linear", 6};
    snprintf(key, sizeof key, "%s.rope.scaling.type", ld->arch);
    nib_error e = {0};
    nib_status s = nib_gguf_get_str(ld->g, key, &type, &e);
    if (s == NIB_ERR_NOT_FOUND) type = (nib_str){"linear", 6}, s = NIB_OK;
    if (s != NIB_OK) return nib_error_set(ld->err, NIB_ERR_FORMAT, "%s", e.msg);
    bool yarn = type.len == 4 && !memcmp(type.ptr, "yarn", 4);
    if (!yarn && !(type.len == 6 && !memcmp(type.ptr, "linear", 6)) && !(type.len == 4 && !memcmp(type.ptr, "none", 4)))
        return nib_error_set(ld->err, NIB_ERR_UNSUPPORTED,
                             "%s = '%.*s' is not supported (nib reads none, linear and yarn)", key,
                             (int)(type.len < 32 ? type.len : 32), type.ptr);
    float factor;
    snprintf(key, sizeof key, "%s.rope.scaling.factor", ld->arch);
    if ((s = nib_ld_f32_or(ld, "rope.scaling.factor", 0.0f, &factor))) return s;
    if (factor == 0.0f && (s = nib_ld_f32_or(ld, "rope.scale_linear", 0.0f, &factor))) return s;
    /* 0 means "no scaling", as in llama.cpp; a negative factor would run positions backwards */
    if (factor < 0.0f)
        return nib_error_set(ld->err, NIB_ERR_FORMAT, "%s = %g must not be negative", key, (double)factor);
    if (factor == 0.0f) factor = 1.0f;
    for (int il = 0; il < m->hp.n_layer; il++) m->layers[il].rope_scale = factor;
    m->yarn.on = yarn;
    /* the cos/sin scale llama.cpp applies whatever the type (Phi-3.5's 1.19, say) */
    if ((s = nib_ld_f32_or(ld, "rope.scaling.attn_factor", 1.0f, &m->yarn.rope_attn_factor))) return s;
    if (!(m->yarn.rope_attn_factor > 0.0f && m->yarn.rope_attn_factor < 100.0f))
        return nib_error_set(ld->err, NIB_ERR_FORMAT, "%s.rope.scaling.attn_factor = %g is out of range (0, 100)",
                             ld->arch, (double)m->yarn.rope_attn_factor);
    if (!yarn) return NIB_OK;
    int32_t n_orig;
    float log_mul;
    if ((s = nib_ld_u32_or(ld, "rope.scaling.original_context_length", m->hp.n_ctx_train, &n_orig)) ||
        (s = nib_ld_f32_or(ld, "rope.scaling.yarn_ext_factor", 1.0f, &m->yarn.ext_factor)) ||
        (s = nib_ld_f32_or(ld, "rope.scaling.yarn_attn_factor", 1.0f, &m->yarn.attn_factor)) ||
        (s = nib_ld_f32_or(ld, "rope.scaling.yarn_beta_fast", YARN_BETA_FAST, &m->yarn.beta_fast)) ||
        (s = nib_ld_f32_or(ld, "rope.scaling.yarn_beta_slow", YARN_BETA_SLOW, &m->yarn.beta_slow)) ||
        (s = nib_ld_f32_or(ld, "rope.scaling.yarn_log_multiplier", 0.0f, &log_mul)))
        return s;
    m->yarn.n_ctx_orig = n_orig;
    if (n_orig < 1 || !(m->yarn.ext_factor >= 0.0f && m->yarn.ext_factor <= 1.0f) || !(m->yarn.beta_fast > 0.0f) ||
        !(m->yarn.beta_slow > 0.0f) || !(m->yarn.attn_factor > 0.0f) || !(m->yarn.rope_attn_factor > 0.0f))
        return nib_error_set(ld->err, NIB_ERR_FORMAT,
                             "%s: YaRN settings out of range (original context %d, ext_factor %g, beta %g/%g, "
                             "attention factors %g/%g)",
                             ld->arch, n_orig, (double)m->yarn.ext_factor, (double)m->yarn.beta_fast,
                             (double)m->yarn.beta_slow, (double)m->yarn.attn_factor, (double)m->yarn.rope_attn_factor);
    if (log_mul != 0.0f)
        return nib_error_set(ld->err, NIB_ERR_UNSUPPORTED,
                             "%s.rope.scaling.yarn_log_multiplier = %g: that YaRN variant (DeepSeek's) is not supported",
                             ld->arch, (double)log_mul);
    return NIB_OK;
}

const float *nib_model_rope_ff(const nib_model *m, int32_t n_ctx) {
    return n_ctx > m->rope_n_ctx_orig ? m->rope_ff_long : m->rope_ff_short;
}

nib_status nib_finish_rope_scaling(nib_loader *ld, nib_model *m) {
    nib_hparams *hp = &m->hp;
    const int half = hp->n_rot / 2;
    const float *rf = m->rope_freqs.data ? (const float *)m->rope_freqs.data : NULL;
    m->rope_mscale = m->yarn.rope_attn_factor;
    m->rope_n_ctx_orig = INT32_MAX;
    if (m->rope_factors_short.data || m->rope_factors_long.data) { /* LongRoPE (Phi-3 128k, Phi-3.5, Phi-4-mini) */
        if (!m->rope_factors_short.data || !m->rope_factors_long.data || rf || m->yarn.on)
            return nib_error_set(ld->err, NIB_ERR_FORMAT,
                                 "%s: rope_factors_short and rope_factors_long come as a pair, without rope_freqs or "
                                 "YaRN", ld->arch);
        nib_status s = nib_ld_u32_or(ld, "rope.scaling.original_context_length", hp->n_ctx_train, &m->rope_n_ctx_orig);
        if (s != NIB_OK) return s;
        m->rope_ff_short = m->rope_factors_short.data;
        m->rope_ff_long = m->rope_factors_long.data;
        return NIB_OK;
    }
    if (!m->yarn.on) {
        m->rope_ff_short = m->rope_ff_long = rf;
        return NIB_OK;
    }
    const nib_layer *l0 = &m->layers[0];
    for (int il = 1; il < hp->n_layer; il++)
        if (m->layers[il].rope_base != l0->rope_base || m->layers[il].rope_scale != l0->rope_scale)
            return nib_error_set(ld->err, NIB_ERR_UNSUPPORTED,
                                 "%s: YaRN with layers of different rope bases or scales is not supported", ld->arch);
    m->rope_ff_owned = malloc(sizeof(float) * (size_t)(half > 0 ? half : 1));
    if (!m->rope_ff_owned) return nib_error_set(ld->err, NIB_ERR_NOMEM, "out of memory");
    nib_yarn_freq_divisors(m->rope_ff_owned, hp->n_rot, l0->rope_base, l0->rope_scale, m->yarn.n_ctx_orig,
                           m->yarn.ext_factor, m->yarn.beta_fast, m->yarn.beta_slow);
    for (int i = 0; rf && i < half; i++) m->rope_ff_owned[i] *= rf[i];
    m->rope_ff_short = m->rope_ff_long = m->rope_ff_owned;
    m->rope_mscale = nib_yarn_mscale(l0->rope_scale, m->yarn.ext_factor, m->yarn.attn_factor * m->yarn.rope_attn_factor);
    return NIB_OK;
}
