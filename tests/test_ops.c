/* The forward step's ops against float64 references: RMSNorm, RoPE (both
 * orderings, partial rotation, frequency factors), GQA attention (scalar and
 * AVX2, fp16 and fp32 caches, windows), and the activations. Random inputs,
 * outputs poisoned with NaN before each call. */
#include <stdlib.h>

#include "core/fp16.h"
#include "cpu/cpu.h"
#include "model/model.h"
#include "ops/ops.h"
#include "test.h"

static void fill(float *x, int64_t n, double s) {
    for (int64_t i = 0; i < n; i++) x[i] = (float)(s * rng_normal());
}

static void test_rmsnorm(void) {
    rng_seed(3);
    float x[1000], w[1000], y[1000];
    fill(x, 1000, 3.0);
    fill(w, 1000, 1.0);
    for (int i = 0; i < 1000; i++) y[i] = NAN;
    nib_rmsnorm(y, x, w, 1000, 1e-6f);
    double ss = 0;
    for (int i = 0; i < 1000; i++) ss += (double)x[i] * x[i];
    double inv = 1.0 / sqrt(ss / 1000 + 1e-6);
    double worst = 0;
    for (int i = 0; i < 1000; i++) worst = fmax(worst, fabs(y[i] - x[i] * inv * w[i]) / (fabs(x[i] * inv * w[i]) + 1e-30));
    /* three fp32 roundings (inv, two products): < 4 * 2^-24 relative */
    CHECK(worst < 4 * ldexp(1.0, -24), "rmsnorm relative error %.3g", worst);
}

static void test_rope(void) {
    rng_seed(4);
    float ff[32];
    for (int i = 0; i < 32; i++) ff[i] = (float)(1.0 + 7.0 * rng_uniform());
    for (int neox = 0; neox < 2; neox++)
        for (int partial = 0; partial < 2; partial++)
            for (int use_ff = 0; use_ff < 2; use_ff++) {
                nib_rope r = {partial ? 32 : 64, neox, 10000.0f, use_ff ? 1.0f : 2.0f, use_ff ? ff : NULL, 1.0f};
                float x[64], y[64];
                fill(x, 64, 1.0);
                memcpy(y, x, sizeof x);
                int64_t pos = 1 + (int64_t)(rng_u64() % 30000);
                nib_rope_apply(y, pos, &r);
                double worst = 0;
                for (int i = 0; i < r.n_rot / 2; i++) {
                    double th = (double)pos / r.scale * pow(10000.0, -2.0 * i / r.n_rot) / (use_ff ? ff[i] : 1.0);
                    int a = neox ? i : 2 * i, b = neox ? i + r.n_rot / 2 : 2 * i + 1;
                    double ya = x[a] * cos(th) - x[b] * sin(th), yb = x[a] * sin(th) + x[b] * cos(th);
                    worst = fmax(worst, fmax(fabs(ya - y[a]), fabs(yb - y[b])));
                }
                for (int i = r.n_rot; i < 64; i++) CHECK(y[i] == x[i], "dimension %d beyond n_rot changed", i);
                /* |x| ~ 3 at most; cos/sin rounded to fp32 and two products: ~1e-6 */
                CHECK(worst < 2e-6 * 4, "rope neox=%d partial=%d ff=%d error %.3g", neox, partial, use_ff, worst);
            }
}

/* YaRN as llama.cpp states it (ggml's rope_yarn: the interpolated and the
 * extrapolated angle blended by a ramp over the pairs), in float64, against
 * nib's form of it: a per-pair frequency divisor beside the position scale. */
static void test_rope_yarn(void) {
    static const struct { float base, factor; int n_rot, n_ctx_orig; } cases[] = {
        {100000.0f, 4.0f, 64, 2048}, {1000000.0f, 4.0f, 128, 32768}, {10000.0f, 8.0f, 128, 4096}, {500000.0f, 2.5f, 64, 8192},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int n = cases[c].n_rot, half = n / 2;
        const double base = cases[c].base, factor = cases[c].factor;
        float div[64];
        nib_yarn_freq_divisors(div, n, cases[c].base, cases[c].factor, cases[c].n_ctx_orig, 1.0f, 32.0f, 1.0f);
        /* the ramp's ends: the pairs turning 32 and 1 times over the original context */
        double lo = floor(n * log(cases[c].n_ctx_orig / (32.0 * 2 * M_PI)) / (2 * log(base)));
        double hi = ceil(n * log(cases[c].n_ctx_orig / (1.0 * 2 * M_PI)) / (2 * log(base)));
        lo = fmax(lo, 0), hi = fmin(hi, n - 1);
        int n_extrap = 0, n_interp = 0, n_blend = 0;
        nib_rope r = {n, 1, cases[c].base, cases[c].factor, div, 1.0f};
        float cs[128];
        double worst = 0;
        for (int t = 0; t < 6; t++) {
            int64_t pos = t == 0 ? 1 : 1 + (int64_t)(rng_u64() % 8192);
            nib_rope_table(cs, pos, &r);
            for (int i = 0; i < half; i++) {
                double ramp = 1 - fmin(1, fmax(0, (i - lo) / fmax(0.001, hi - lo)));
                if (t == 0) n_extrap += ramp == 1, n_interp += ramp == 0, n_blend += ramp > 0 && ramp < 1;
                double ex = (double)pos * pow(base, -2.0 * i / n), in = ex / factor;
                double th = in * (1 - ramp) + ex * ramp;
                /* the divisor is rounded to fp32 (2^-24 of the angle), then cos/sin to fp32 */
                double tol = 3 * fabs(th) * ldexp(1.0, -24) + 2 * ldexp(1.0, -24);
                double e = fmax(fabs(cs[2 * i] - cos(th)), fabs(cs[2 * i + 1] - sin(th)));
                worst = fmax(worst, e / tol);
            }
        }
        CHECK(worst <= 1.0, "yarn case %zu: angle error %.3g of its bound", c, worst);
        CHECK(n_extrap > 0 && n_interp > 0 && n_blend > 0, "yarn case %zu: %d extrapolated, %d interpolated, %d blended pairs",
              c, n_extrap, n_interp, n_blend);
    }
    /* cos and sin are scaled by attn_factor * (1 + 0.1 ln factor): q.k by its square */
    CHECK(fabsf(nib_yarn_mscale(4.0f, 1.0f, 1.0f) - (float)(1 + 0.1 * log(4.0))) < 1e-6f, "mscale %.7g",
          (double)nib_yarn_mscale(4.0f, 1.0f, 1.0f));
    CHECK(nib_yarn_mscale(4.0f, 0.0f, 0.5f) == 0.5f, "mscale without extrapolation is the attention factor");
}

/* float64 attention of one group */
static void attention_f64(double *out, const float *q, int g, const float *k, const float *v, int64_t stride, int hd,
                          int64_t j0, int64_t j1, double scale, double softcap, const float *sinks) {
    for (int h = 0; h < g; h++) {
        double mx = sinks ? sinks[h] : -1e300, *s = malloc(sizeof(double) * (size_t)(j1 - j0)), sum = 0;
        for (int64_t j = j0; j < j1; j++) {
            double d = 0;
            for (int e = 0; e < hd; e++) d += (double)q[h * hd + e] * k[j * stride + e];
            s[j - j0] = softcap > 0 ? softcap * tanh(d * scale / softcap) : d * scale;
            mx = fmax(mx, s[j - j0]);
        }
        if (sinks) sum += exp(sinks[h] - mx); /* in the denominator only */
        for (int64_t j = j0; j < j1; j++) sum += (s[j - j0] = exp(s[j - j0] - mx));
        for (int e = 0; e < hd; e++) {
            double o = 0;
            for (int64_t j = j0; j < j1; j++) o += s[j - j0] / sum * v[j * stride + e];
            out[h * hd + e] = o;
        }
        free(s);
    }
}

static void test_attention(void) {
    rng_seed(5);
    static const int64_t lens[] = {1, 7, 64, 255, 1023};
    static const int hds[] = {64, 128, 256};
    int n_cases = 0;
    for (int level = NIB_SIMD_SCALAR; level <= NIB_SIMD_AVX2; level++) {
        if (level > (int)nib_cpu_detect_simd()) continue;
        nib_simd_level prev = nib_cpu_set_simd_level((nib_simd_level)level);
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
            for (size_t hi = 0; hi < sizeof hds / sizeof hds[0]; hi++)
                for (int f16 = 0; f16 < 2; f16++) {
                    int64_t n = lens[li], hd = hds[hi], stride = 2 * hd + 8;  /* KV head 0 of 2, padded */
                    int g = 1 + (int)(rng_u64() % 4);
                    int64_t j0 = n > 8 && (rng_u64() & 1) ? n / 3 : 0;  /* a window start */
                    float *q = malloc(sizeof(float) * (size_t)(g * hd)), *k = malloc(sizeof(float) * (size_t)(n * stride)),
                          *v = malloc(sizeof(float) * (size_t)(n * stride)), *out = malloc(sizeof(float) * (size_t)(g * hd)),
                          *sc = malloc(sizeof(float) * (size_t)(g * n));
                    nib_fp16 *k16 = malloc(2 * (size_t)(n * stride)), *v16 = malloc(2 * (size_t)(n * stride));
                    double *ref = malloc(sizeof(double) * (size_t)(g * hd));
                    fill(q, g * hd, 1.0);
                    fill(k, n * stride, 1.0);
                    fill(v, n * stride, 1.0);
                    if (f16)  /* the reference sees the values the cache holds */
                        for (int64_t i = 0; i < n * stride; i++) {
                            k16[i] = nib_f32_to_fp16(k[i]), k[i] = nib_fp16_to_f32(k16[i]);
                            v16[i] = nib_f32_to_fp16(v[i]), v[i] = nib_fp16_to_f32(v16[i]);
                        }
                    for (int64_t i = 0; i < g * hd; i++) out[i] = NAN;
                    /* every other case soft-capped (Gemma 2's 50 is rarely reached by scores of size ~1:
                     * scores ~8x larger against a cap of 4 put most of them in tanh's bend) */
                    const int capped = (int)(rng_u64() & 1), sunk = (int)(rng_u64() & 1);
                    double scale = (capped ? 8.0 : 1.0) / sqrt((double)hd), softcap = capped ? 4.0 : 0.0;
                    /* every other case with sinks of size like the scores' (gpt-oss's): they take real weight */
                    float sinks[8];
                    for (int h = 0; h < g; h++) sinks[h] = (float)(2.0 * rng_uniform() - 0.5);
                    nib_attn_args a = {out, q, g, f16 ? (void *)k16 : k, f16 ? (void *)v16 : v, stride, stride, f16,
                                       (int32_t)hd, (int32_t)hd, j0, n, (float)scale, sc, (float)softcap,
                                       sunk ? sinks : NULL};
                    nib_attention_group(&a);
                    attention_f64(ref, q, g, k, v, stride, (int)hd, j0, n, scale, softcap, sunk ? sinks : NULL);
                    double worst = 0;
                    for (int64_t i = 0; i < g * hd; i++) worst = fmax(worst, fabs(out[i] - ref[i]));
                    /* outputs are convex combinations of N(0,1) values; scores of size ~sqrt(hd)*scale = O(1)
                     * carry fp32 error ~hd * 2^-24, which moves weights by as much: 1e-5 absolute is ample */
                    CHECK(worst < 1e-5, "%s attention n=%lld hd=%lld g=%d f16=%d j0=%lld softcap=%g: error %.3g",
                          nib_simd_level_name((nib_simd_level)level), (long long)n, (long long)hd, g, f16,
                          (long long)j0, softcap, worst);
                    n_cases++;
                    free(q), free(k), free(v), free(out), free(sc), free(k16), free(v16), free(ref);
                }
        nib_cpu_set_simd_level(prev);
    }
    printf("      %d attention cases\n", n_cases);
}

/* Several query tokens of one group at once (prompts) against each token
 * alone: the same bits at every SIMD level (the blocked AVX2 form forms each
 * score and output column as the one-token form does), with and without a
 * sliding window, fp16 and f32 caches, groups of 1 to 7 heads (passes of
 * the register blocks), outputs poisoned. */
static void test_attention_tokens(void) {
    rng_seed(17);
    int n_cases = 0;
    for (int level = NIB_SIMD_SCALAR; level <= NIB_SIMD_AVX2; level++) {
        if (level > (int)nib_cpu_detect_simd()) continue;
        nib_simd_level prev = nib_cpu_set_simd_level((nib_simd_level)level);
        static const int64_t firsts[] = {1, 2, 9, 300};
        static const int hds[] = {64, 128, 256};
        for (size_t fi = 0; fi < sizeof firsts / sizeof firsts[0]; fi++)
            for (size_t hi = 0; hi < sizeof hds / sizeof hds[0]; hi++)
                for (int f16 = 0; f16 < 2; f16++)
                    for (int nq = 1; nq <= NIB_ATTN_MAX_TOKENS; nq++) {
                        const int64_t p0 = firsts[fi] - 1, n = p0 + nq, hd = hds[hi], stride = 2 * hd + 8;
                        const int g = 1 + (int)(rng_u64() % 7);
                        const int32_t window = (rng_u64() & 1) ? (int32_t)(1 + rng_u64() % 12) : 0;
                        const int64_t qs = 3 * g * hd; /* tokens' queries and outputs apart, as in a model's rows */
                        float *q = malloc(sizeof(float) * (size_t)(nq * qs)), *k = malloc(sizeof(float) * (size_t)(n * stride)),
                              *v = malloc(sizeof(float) * (size_t)(n * stride));
                        float *o1 = malloc(sizeof(float) * (size_t)(nq * qs)), *o2 = malloc(sizeof(float) * (size_t)(nq * qs));
                        float *sc = malloc(sizeof(float) * (size_t)(nq * g * n));
                        nib_fp16 *k16 = malloc(2 * (size_t)(n * stride)), *v16 = malloc(2 * (size_t)(n * stride));
                        fill(q, nq * qs, 1.0);
                        fill(k, n * stride, 1.0);
                        fill(v, n * stride, 1.0);
                        for (int64_t i = 0; i < n * stride; i++) k16[i] = nib_f32_to_fp16(k[i]), v16[i] = nib_f32_to_fp16(v[i]);
                        for (int64_t i = 0; i < nq * qs; i++) o1[i] = o2[i] = NAN;
                        const int capped = (int)(rng_u64() & 1), sunk = (int)(rng_u64() & 1);
                        const float scale = (capped ? 8.0f : 1.0f) / sqrtf((float)hd);
                        const int64_t j0 = window > 0 && p0 + 1 > window ? p0 + 1 - window : 0;
                        float sinks[8];
                        for (int h = 0; h < g; h++) sinks[h] = (float)(2.0 * rng_uniform() - 0.5);
                        nib_attn_args a = {o2, q, g, f16 ? (void *)k16 : k, f16 ? (void *)v16 : v, stride, stride, f16,
                                           (int32_t)hd, (int32_t)hd, j0, p0 + 1, scale, sc, capped ? 4.0f : 0.0f,
                                           sunk ? sinks : NULL};
                        nib_attention_tokens(&a, nq, qs, qs, window);
                        for (int i = 0; i < nq; i++) { /* each token alone */
                            const int64_t p = p0 + i;
                            nib_attn_args t = a;
                            t.out = o1 + i * qs, t.q = q + i * qs, t.j1 = p + 1;
                            t.j0 = window > 0 && p + 1 > window ? p + 1 - window : 0;
                            nib_attention_group(&t);
                        }
                        int diff = 0, unwritten = 0;
                        for (int i = 0; i < nq; i++)
                            for (int64_t e = 0; e < g * hd; e++) {
                                diff += memcmp(&o1[i * qs + e], &o2[i * qs + e], 4) != 0;
                                unwritten += isnan(o2[i * qs + e]);
                            }
                        CHECK(diff == 0 && unwritten == 0,
                              "%s attention of %d tokens from position %lld, hd %lld, g %d, f16 %d, window %d: %d "
                              "outputs differ from one token at a time, %d unwritten",
                              nib_simd_level_name((nib_simd_level)level), nq, (long long)p0, (long long)hd, g, f16,
                              (int)window, diff, unwritten);
                        n_cases++;
                        free(q), free(k), free(v), free(o1), free(o2), free(sc), free(k16), free(v16);
                    }
        nib_cpu_set_simd_level(prev);
    }
    printf("      %d multi-token attention cases\n", n_cases);
}

/* SiLU and GELU-tanh GLUs against float64, relative to the size of the
 * inputs; the GELU at each SIMD level this CPU has (the AVX2 form has its own
 * tanh), over 515 elements so the AVX2 form's scalar tail runs too, with
 * inputs from 3 N(0,1) (both tanh branches, |x| below and above 0.625, and
 * the saturated ends) plus a sweep of -12..12. */
static void test_activations(void) {
    enum { N = 515 };
    rng_seed(6);
    float g0[N], u[N];
    fill(g0, N, 3.0);
    fill(u, N, 1.0);
    for (int i = 0; i < 96; i++) g0[i] = -12.0f + 0.25f * (float)i;
    for (int i = 96; i < 112; i++) g0[i] = (i % 2 ? -1.0f : 1.0f) * (80.0f + 2.0f * (float)(i - 96)); /* past exp's clamps */
    const nib_simd_level prev = nib_cpu_simd_level();
    for (int level = NIB_SIMD_SCALAR; level <= (int)prev; level++) {
        nib_cpu_set_simd_level((nib_simd_level)level);
        float g[N];
        memcpy(g, g0, sizeof g);
        nib_swiglu(g, u, N);
        double w1 = 0;
        for (int i = 0; i < N; i++) {
            double x = g0[i];
            double silu = x / (1 + exp(-x)) * u[i];
            /* relative to the size of the inputs: for x << 0 both are tiny differences of O(x) terms */
            double e = fabs(g[i] - silu) / ((fabs(x) + 1.0) * fabs(u[i]));
            w1 = isnan(e) ? INFINITY : fmax(w1, e);
        }
        CHECK(w1 < 1e-6, "%s silu error %.3g", nib_simd_level_name((nib_simd_level)level), w1);
        printf("      silu %-12s worst error / size %.2e\n", nib_simd_level_name((nib_simd_level)level), w1);
        float g2[N];
        memcpy(g2, g0, sizeof g2);
        nib_geglu_tanh(g2, u, N);
        double w2 = 0;
        for (int i = 0; i < N; i++) {
            double x = g0[i];
            double gelu = 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))) * u[i];
            double e = fabs(g2[i] - gelu) / ((fabs(x) + 1.0) * fabs(u[i]));
            w2 = isnan(e) ? INFINITY : fmax(w2, e);
        }
        /* a few fp32 roundings of O(size) values, and a tanh within a few ulp */
        CHECK(w2 < 1e-6, "%s gelu error %.3g", nib_simd_level_name((nib_simd_level)level), w2);
        printf("      gelu %-12s worst error / size %.2e\n", nib_simd_level_name((nib_simd_level)level), w2);
    }
    nib_cpu_set_simd_level(prev);
}

/* gpt-oss's SwiGLU against float64 over both clamps (inputs of 3 N(0,1) and a sweep past +-7). */
static void test_swiglu_oai(void) {
    enum { N = 600 };
    float g[N], u[N], gin[N];
    fill(g, N, 3.0);
    fill(u, N, 3.0);
    for (int i = 0; i < 100; i++) g[i] = -12.0f + 0.24f * (float)i, u[i] = 12.0f - 0.24f * (float)i;
    memcpy(gin, g, sizeof g);
    nib_swiglu_oai(g, u, N);
    double worst = 0;
    int clamped = 0;
    for (int i = 0; i < N; i++) {
        double x = fmin(gin[i], 7.0), y = fmax(-7.0, fmin(u[i], 7.0));
        clamped += gin[i] > 7.0f || fabsf(u[i]) > 7.0f;
        double want = x / (1 + exp(-1.702 * x)) * (y + 1);
        worst = fmax(worst, fabs(g[i] - want) / (fabs(want) + 1.0));
    }
    /* expf, a division and three products in fp32: a few 2^-24 of the size */
    CHECK(worst < 1e-6 && clamped > 10, "swiglu_oai error %.3g (%d inputs past a clamp)", worst, clamped);
}

int main(void) {
    RUN(test_rmsnorm);
    RUN(test_rope);
    RUN(test_rope_yarn);
    RUN(test_attention);
    RUN(test_attention_tokens);
    RUN(test_activations);
    RUN(test_swiglu_oai);
    return test_summary();
}
