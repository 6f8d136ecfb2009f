/* nib run MODEL -p PROMPT: generate a continuation and stream it to stdout;
 * speeds go to stderr at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/generate.h"

static void usage(FILE *f) {
    fprintf(f, "usage: nib run MODEL.gguf [-p PROMPT | -f FILE] [options]\n\noptions:\n");
    cli_print_flags(f, CLI_F_PROMPT | CLI_F_SAMPLING | CLI_F_CONTEXT);
}

int cmd_run(int argc, char **argv) {
    cli_opts o;
    cli_opts_init(&o);
    int rc = cli_parse(&o, argc, argv, CLI_F_PROMPT | CLI_F_SAMPLING | CLI_F_CONTEXT, usage);
    if (rc) return rc == 1 ? 0 : 2;
    char *prompt = cli_read_prompt(&o);
    if (!prompt) return 1;
    cli_session s;
    if (cli_session_open(&s, &o, true)) {
        free(prompt);
        return 1;
    }
    nib_error err;
    int32_t *ids = NULL;
    int64_t n_ids = 0;
    rc = 1;
    if (nib_tokenize(s.tok, prompt, strlen(prompt), true, true, &ids, &n_ids, &err) != NIB_OK) {
        fprintf(stderr, "nib run: %s\n", err.msg);
        goto done;
    }
    int32_t n_ctx = nib_ctx_n_ctx(s.ctx);
    if (n_ids >= n_ctx) {
        if (!o.truncate) {
            fprintf(stderr,
                    "nib run: the prompt is %lld tokens but the context holds %d (leave room to generate): "
                    "use -c to enlarge the context or --truncate to keep the prompt's end\n",
                    (long long)n_ids, n_ctx);
            goto done;
        }
        int64_t keep = n_ctx / 2;
        fprintf(stderr, "nib run: prompt of %lld tokens truncated to its last %lld\n", (long long)n_ids,
                (long long)keep);
        memmove(ids, ids + (n_ids - keep), (size_t)keep * sizeof *ids);
        n_ids = keep;
    }
    if (n_ids == 0) {
        fprintf(stderr, "nib run: the prompt is empty and the model adds no BOS token: nothing to start from\n");
        goto done;
    }
    nib_sampler *smp = nib_sampler_new(&o.sp, s.model->hp.n_vocab, &err);
    if (!smp) {
        fprintf(stderr, "nib run: %s\n", err.msg);
        goto done;
    }
    if (o.sp.temp > 0.0f) fprintf(stderr, "nib: sampling with seed %llu\n", (unsigned long long)o.sp.seed);
    if (o.echo) {
        fputs(prompt, stdout);
        fflush(stdout);
    }
    gen_result r;
    cli_generate(&s, &o, smp, ids, n_ids, stdout, &r);
    putchar('\n');
    cli_print_speed(&r);
    rc = r.stop == GEN_STOP_ERROR ? 1 : 0;
    free(r.text);
    nib_sampler_free(smp);
done:
    free(ids);
    free(prompt);
    cli_session_close(&s);
    return rc;
}
