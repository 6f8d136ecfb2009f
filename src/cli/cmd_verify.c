/* nib verify MODEL [-p PROMPT] [-n N]: the GPU step against the CPU step.
 *
 * Both contexts take the same prompt (the GPU in prompt-sized batches, so its
 * prompt path is checked too), then decode greedily for N steps. Each step
 * feeds the CPU's pick to both, so after a divergence the two keep seeing the
 * same tokens and every step's logits stay comparable. Per step: the two
 * picks and the largest |logit difference|. A divergence counts as a
 * near-tie when the CPU's own margin between the two picks is within that
 * step's largest logit difference (numeric noise can flip it); any other
 * divergence fails the run (exit 1). So does a mean KL divergence of the
 * logits above VERIFY_KL_MAX: with logits far apart every step's largest
 * difference is large, every divergence then looks like a near-tie, and only
 * the distance between the two distributions shows that the GPU is wrong.
 *
 * Then SAMPLE_STEPS steps sampled on the device (the given sampling options
 * when the device chain takes them, else llama.cpp's defaults): each pick
 * must equal the host sampler's on the GPU's own logits with the same
 * uniform (the chain's exp and sums differ only in the last bits, so a
 * disagreement is a wiring bug or a knife-edge draw; one is allowed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/common.h"

/* Mean KL(cpu || gpu) per step above which the logits disagree (nats). The
 * GPU's int8 activations and summation order give 5e-4 to 4e-3 on healthy
 * runs (SmolLM2 Q4_1 2.5e-3, Gemma 3 270M Q4_K_M 3.9e-3, synth models
 * 5e-4 - 8e-4); an attention that read stale queries gave 0.25. */
#define VERIFY_KL_MAX 0.02

/* Long enough (a few hundred tokens) that the GPU's batched prompt path runs
 * several attention splits' worth of keys. */
static const char default_prompt[] =
    "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg, a goldsmith "
    "from Mainz, combined several existing technologies into a system for producing books in quantity. Movable "
    "type had been known in East Asia for centuries, and screw presses were used across Europe to make wine and "
    "olive oil, but Gutenberg's contribution was a practical way to cast uniform metal letters, an oil-based ink "
    "that adhered to them, and a press that could apply even pressure across a whole page. Within fifty years, "
    "printing shops had spread to more than two hundred cities, and millions of volumes were in circulation. The "
    "consequences were enormous. Scholars could compare identical copies of a text, errors could be corrected in "
    "later editions, and ideas travelled faster than any scribe could copy them. Religious reformers used "
    "pamphlets to reach ordinary readers, scientists published their observations and argued about them in print, "
    "and governments began to worry about what could be said and who could say it. Literacy rose slowly at first, "
    "then quickly, as cheap books and newspapers created new reasons to read. Historians still debate how much of "
    "the modern world can be traced to this single invention, but few doubt that it changed how knowledge was "
    "stored, shared and challenged. In the centuries that followed, steam power, rotary presses and eventually "
    "digital typesetting made printing faster and cheaper again, and each step raised the same questions about "
    "authority, accuracy and access that the first printers faced. Summarise the main effects of the printing "
    "press in three sentences:";

#define SAMPLE_STEPS 24

/* Device sampling against the host sampler on the same logits and uniform;
 * returns the disagreements (-1 on an error). Feeds the GPU its own picks. */
static int check_device_sampling(nib_ctx *gpu, const nib_sampler_params *given, int32_t n_vocab, float *lg) {
    nib_sampler_params p = nib_sampler_default_params();
    if (given->temp > 0.0f) p = *given;
    p.repeat_penalty = 1.0f;
    p.seed = given->seed;
    nib_error err;
    nib_sampler *smp = nib_sampler_new(&p, n_vocab, &err);
    if (!smp || !nib_sampler_device_ok(smp, NULL)) {
        printf("device sampling: not checked (%s)\n", smp ? "the chain does not run on the device" : err.msg);
        nib_sampler_free(smp);
        return smp ? 0 : -1;
    }
    int bad = 0, steps = 0;
    int32_t tok = nib_ctx_argmax(gpu);
    for (; steps < SAMPLE_STEPS && nib_ctx_pos(gpu) < nib_ctx_n_ctx(gpu); steps++) {
        const double u = nib_sampler_next_uniform(smp);
        if (!nib_ctx_sample_next(gpu, p.temp, p.top_k, p.top_p, p.min_p, u) ||
            nib_ctx_decode(gpu, &tok, 1, NULL, &err) != NIB_OK) {
            printf("device sampling: step %d: %s\n", steps, err.msg);
            nib_sampler_free(smp);
            return -1;
        }
        memcpy(lg, nib_ctx_logits(gpu), (size_t)n_vocab * 4);
        const int32_t dev = nib_ctx_sampled(gpu), host = nib_sampler_sample_u(smp, lg, u);
        if (dev != host) printf("device sampling: step %d: device picked %d, the host sampler %d (u %.17g)\n", steps,
                                dev, host, u), bad++;
        tok = dev;
    }
    printf("device sampling (temp %g, top-k %d, top-p %g, min-p %g): %d of %d picks equal the host sampler's on "
           "the GPU's logits\n", (double)p.temp, p.top_k, (double)p.top_p, (double)p.min_p, steps - bad, steps);
    nib_sampler_free(smp);
    return bad;
}

static void usage(FILE *f) {
    fprintf(f, "usage: nib verify MODEL.gguf [-p PROMPT | -f FILE] [-n STEPS] [options]\n\n"
               "Greedy decoding on the CPU and on the GPU side by side: the first divergence, the logit gap\n"
               "there, and the largest logit difference per step. Exit 0 when the tokens match or differ\n"
               "only at near-ties, 1 otherwise. Then %d steps sampled on the GPU (the sampling options when\n"
               "the GPU's chain takes them: temperature > 0, top-k 1..1024, no repetition penalty; else\n"
               "llama.cpp's defaults), each checked against the host sampler on the GPU's own logits.\n\n"
               "options:\n", SAMPLE_STEPS);
    cli_print_flags(f, CLI_F_PROMPT | CLI_F_SAMPLING | CLI_F_CONTEXT);
}

static double max_abs_diff(const float *a, const float *b, int32_t n, double *max_abs) {
    double d = 0.0, m = 0.0;
    for (int32_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - (double)b[i]);
        if (!(e <= d)) d = e; /* NaN propagates */
        if (fabs((double)a[i]) > m) m = fabs((double)a[i]);
    }
    if (max_abs) *max_abs = m;
    return d;
}

/* KL(softmax(p) || softmax(q)) in nats: how far the GPU's next-token
 * distribution is from the CPU's, a scale-free measure of the noise. */
static double kl_div(const float *p, const float *q, int32_t n) {
    double mp = -INFINITY, mq = -INFINITY, zp = 0.0, zq = 0.0, kl = 0.0;
    for (int32_t i = 0; i < n; i++) mp = fmax(mp, p[i]), mq = fmax(mq, q[i]);
    for (int32_t i = 0; i < n; i++) zp += exp(p[i] - mp), zq += exp(q[i] - mq);
    for (int32_t i = 0; i < n; i++) {
        double lp = p[i] - mp - log(zp), lq = q[i] - mq - log(zq);
        kl += exp(lp) * (lp - lq);
    }
    return kl;
}

int cmd_verify(int argc, char **argv) {
    cli_opts o;
    cli_opts_init(&o);
    o.n_predict = 64;
    int rc = cli_parse(&o, argc, argv, CLI_F_PROMPT | CLI_F_SAMPLING | CLI_F_CONTEXT, usage);
    if (rc) return rc == 1 ? 0 : 2;
    if (o.n_predict < 0) {
        fprintf(stderr, "nib verify: -n -1 has no end to compare; give the number of greedy steps\n");
        return 2;
    }
    char *prompt = (o.prompt || o.prompt_file) ? cli_read_prompt(&o) : strdup(default_prompt);
    if (!prompt) return 1;
    cli_session s;
    if (cli_session_open(&s, &o, false)) {
        free(prompt);
        return 1;
    }
    nib_error err;
    nib_ctx *cpu = NULL, *gpu = NULL;
    int32_t *ids = NULL;
    int64_t n_ids = 0;
    float *lc = NULL, *lg = NULL;
    rc = 1;
    const int32_t V = s.model->hp.n_vocab;
    nib_ctx_params cp = {cli_ctx_size(&o, s.model), o.n_batch, o.n_threads, false, NIB_DEVICE_CPU};
    if (!(cpu = nib_ctx_new(s.model, &cp, &err))) {
        fprintf(stderr, "nib verify: CPU context: %s\n", err.msg);
        goto done;
    }
    cp.device = NIB_DEVICE_CUDA;
    if (!(gpu = nib_ctx_new(s.model, &cp, &err))) {
        fprintf(stderr, "nib verify: GPU context: %s\n", err.msg);
        goto done;
    }
    if (nib_tokenize(s.tok, prompt, strlen(prompt), true, true, &ids, &n_ids, &err) != NIB_OK) {
        fprintf(stderr, "nib verify: %s\n", err.msg);
        goto done;
    }
    if (n_ids < 1 || n_ids + o.n_predict + SAMPLE_STEPS > nib_ctx_n_ctx(cpu)) {
        fprintf(stderr, "nib verify: %lld prompt tokens + %d + %d steps do not fit the context of %d (use -c)\n",
                (long long)n_ids, o.n_predict, SAMPLE_STEPS, nib_ctx_n_ctx(cpu));
        goto done;
    }
    if (!(lc = malloc((size_t)V * 4)) || !(lg = malloc((size_t)V * 4))) {
        fprintf(stderr, "nib verify: out of memory\n");
        goto done;
    }
    printf("nib verify: %s: prompt %lld tokens, %d greedy steps, CPU (%d threads) vs CUDA\n", o.model,
           (long long)n_ids, o.n_predict, nib_ctx_n_threads(cpu));
    if (nib_ctx_decode(cpu, ids, n_ids, NULL, &err) || nib_ctx_decode(gpu, ids, n_ids, NULL, &err)) {
        fprintf(stderr, "nib verify: prompt: %s\n", err.msg);
        goto done;
    }
    int same = 0, ties = 0, real = 0, first = -1, n_steps = 1;
    double worst = 0.0, sum = 0.0, kl_sum = 0.0, kl_max = 0.0;
    printf("%5s %8s %8s %10s %10s %10s  %s\n", "step", "cpu", "gpu", "max|diff|", "max|logit|", "KL", "note");
    for (int step = 0; step <= o.n_predict; step++) {
        memcpy(lc, nib_ctx_logits(cpu), (size_t)V * 4);
        memcpy(lg, nib_ctx_logits(gpu), (size_t)V * 4);
        double mabs = 0.0, d = max_abs_diff(lc, lg, V, &mabs), kl = kl_div(lc, lg, V);
        kl_sum += kl;
        if (!(kl <= kl_max)) kl_max = kl;
        int32_t tc = nib_argmax(lc, V), tg = nib_ctx_argmax(gpu), tg_host = nib_argmax(lg, V);
        if (!(d <= worst)) worst = d;
        sum += d;
        char note[160] = "";
        if (tg != tg_host) snprintf(note, sizeof note, "GPU argmax %d disagrees with its own logits' %d", tg, tg_host), real++;
        else if (tc == tg) same++;
        else {
            double gap = (double)lc[tc] - (double)lc[tg];
            bool tie = gap <= d;
            tie ? ties++ : real++;
            if (first < 0) first = step;
            snprintf(note, sizeof note, "differ: CPU margin %.5f %s max|diff| %.5f: %s", gap, tie ? "<=" : ">", d,
                     tie ? "near-tie" : "REAL DIVERGENCE");
        }
        printf("%5d %8d %8d %10.5f %10.3f %10.2e  %s%s\n", step, tc, tg, d, mabs, kl,
               step == 0 ? "(after the prompt) " : "", note);
        if (step == o.n_predict || nib_tokenizer_is_eog(s.tok, tc)) {
            if (step < o.n_predict) printf("(end of generation token)\n");
            n_steps = step + 1;
            char first_s[32] = "none";
            if (first >= 0) snprintf(first_s, sizeof first_s, "step %d", first);
            printf("greedy picks identical at %d of %d steps; near-ties %d; real divergences %d; first divergence %s\n",
                   same, step + 1, ties, real, first_s);
            printf("max |logit diff| %.5f, mean over steps %.5f; KL(cpu || gpu) mean %.2e, max %.2e nats\n", worst,
                   sum / (step + 1), kl_sum / (step + 1), kl_max);
            break;
        }
        if (nib_ctx_decode(cpu, &tc, 1, NULL, &err) || nib_ctx_decode(gpu, &tc, 1, NULL, &err)) {
            fprintf(stderr, "nib verify: step %d: %s\n", step, err.msg);
            goto done;
        }
    }
    const int smp_bad = check_device_sampling(gpu, &o.sp, V, lg);
    const double kl_mean = kl_sum / n_steps;
    const bool kl_bad = !(kl_mean <= VERIFY_KL_MAX);
    if (kl_bad)
        printf("logits disagree: mean KL %.2e nats > %.2e (near-ties above are not to be trusted)\n", kl_mean,
               VERIFY_KL_MAX);
    rc = real || kl_bad || smp_bad < 0 || smp_bad > 1 ? 1 : 0;
    printf("verdict: %s\n", rc ? "FAIL" : "PASS");
done:
    free(lc), free(lg), free(ids), free(prompt);
    nib_ctx_free(cpu);
    nib_ctx_free(gpu);
    cli_session_close(&s);
    return rc;
}
