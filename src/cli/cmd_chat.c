/* nib chat MODEL: an interactive multi-turn chat.
 *
 * Each turn renders the whole conversation with the chat template, tokenizes
 * it, and decodes only what the KV cache does not already hold (the common
 * prefix of the new and the cached token sequences is kept). When the
 * conversation no longer fits the context with room for a reply (-n), the
 * oldest exchanges are left out, the system message kept, and it says so.
 * Lines are read from stdin; an empty line or EOF ends the chat, "/reset"
 * starts over. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "chat/chat_template.h"
#include "cli/cli.h"
#include "cli/generate.h"

static void usage(FILE *f) {
    fprintf(f, "usage: nib chat MODEL.gguf [--system TEXT] [--chat-template NAME|FILE] [options]\n\noptions:\n");
    cli_print_flags(f, CLI_F_CHAT | CLI_F_SAMPLING | CLI_F_CONTEXT);
}

#define MAX_TURNS 256

/* The template: --chat-template (a built-in name or a file), else the model's
 * own, else a built-in for its architecture. Returns malloc'ed text or NULL. */
static char *choose_template(const cli_opts *o, const nib_model *m) {
    if (o->chat_template) {
        const char *b = nib_chat_builtin(o->chat_template);
        if (b) return strdup(b);
        /* fopen succeeds on a directory; only a regular file can be a template */
        struct stat st;
        FILE *f = stat(o->chat_template, &st) == 0 && S_ISREG(st.st_mode) ? fopen(o->chat_template, "rb") : NULL;
        if (!f) {
            fprintf(stderr, "nib chat: --chat-template '%s' is neither a built-in (chatml, gemma, llama3) nor a readable file\n",
                    o->chat_template);
            return NULL;
        }
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        char *t = n >= 0 ? malloc((size_t)n + 1) : NULL;
        if (t && fread(t, 1, (size_t)n, f) == (size_t)n) t[n] = 0;
        else {
            fprintf(stderr, "nib chat: cannot read --chat-template '%s'%s\n", o->chat_template, t ? "" : ": out of memory");
            free(t);
            t = NULL;
        }
        fclose(f);
        return t;
    }
    nib_str s;
    if (nib_gguf_get_str(m->gguf, "tokenizer.chat_template", &s, NULL) == NIB_OK) {
        char *t = malloc(s.len + 1);
        if (t) {
            memcpy(t, s.ptr, s.len);
            t[s.len] = 0;
        }
        return t;
    }
    const char *name = !strcmp(m->hp.arch_name, "gemma3") ? "gemma" : "chatml";
    fprintf(stderr, "nib chat: the model has no chat template; using the built-in '%s'\n", name);
    return strdup(nib_chat_builtin(name));
}

/* The conversation rendered and tokenized (malloc'ed ids); nonzero on error (printed). */
static int render_ids(const char *tmpl, const nib_chat_message *msgs, int n_msgs, const nib_chat_vars *vars,
                      const nib_tokenizer *tok, int32_t **ids, int64_t *n_ids) {
    nib_error err;
    char *text = NULL;
    if (nib_chat_render(tmpl, msgs, n_msgs, vars, &text, &err) != NIB_OK) {
        fprintf(stderr, "nib chat: %s\n", err.msg); /* the message starts "chat template: " */
        return 1;
    }
    /* the rendered text carries BOS itself when the template writes it */
    nib_status st = nib_tokenize(tok, text, strlen(text), false, true, ids, n_ids, &err);
    free(text);
    if (st != NIB_OK) {
        fprintf(stderr, "nib chat: %s\n", err.msg);
        return 1;
    }
    return 0;
}

static char *token_text(const nib_tokenizer *tok, int32_t id) {
    char buf[256];
    size_t n = id >= 0 ? nib_token_to_piece(tok, id, true, buf, sizeof buf - 1) : 0;
    buf[n < sizeof buf ? n : sizeof buf - 1] = 0;
    return strdup(buf);
}

int cmd_chat(int argc, char **argv) {
    cli_opts o;
    cli_opts_init(&o);
    int rc = cli_parse(&o, argc, argv, CLI_F_CHAT | CLI_F_SAMPLING | CLI_F_CONTEXT, usage);
    if (rc) return rc == 1 ? 0 : 2;
    cli_session s;
    if (cli_session_open(&s, &o, true)) return 1;
    char *tmpl = choose_template(&o, s.model);
    char *bos = token_text(s.tok, nib_tokenizer_bos(s.tok)), *eos = token_text(s.tok, nib_tokenizer_eos(s.tok));
    nib_error err;
    nib_sampler *smp = nib_sampler_new(&o.sp, s.model->hp.n_vocab, &err);
    nib_chat_message msgs[2 * MAX_TURNS + 1];
    char *owned[2 * MAX_TURNS + 1];
    int n_msgs = 0, n_owned = 0;
    int32_t *cached = NULL;  /* tokens the KV cache holds */
    int64_t n_cached = 0;
    rc = 1;
    if (!tmpl || !bos || !eos || !smp) {
        if (!smp) fprintf(stderr, "nib chat: %s\n", err.msg);
        goto done;
    }
    if (o.sp.temp > 0.0f) fprintf(stderr, "nib: sampling with seed %llu\n", (unsigned long long)o.sp.seed);
    if (o.system) msgs[n_msgs++] = (nib_chat_message){"system", o.system};
    fprintf(stderr, "nib chat: type a message; an empty line ends, /reset starts over\n");
    char line[16384];
    for (;;) {
        fprintf(stderr, "\n> ");
        if (!fgets(line, sizeof line, stdin)) break;
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0]) break;
        if (!strcmp(line, "/reset")) {
            n_msgs = o.system ? 1 : 0;
            for (int i = 0; i < n_owned; i++) free(owned[i]);
            n_owned = 0;
            nib_ctx_truncate(s.ctx, 0);
            n_cached = 0;
            continue;
        }
        if (n_msgs + 2 > 2 * MAX_TURNS) {
            fprintf(stderr, "nib chat: %d turns is the most one chat holds; /reset to start over\n", MAX_TURNS);
            continue;
        }
        owned[n_owned] = strdup(line);
        msgs[n_msgs++] = (nib_chat_message){"user", owned[n_owned++]};
        nib_chat_vars vars = {bos, eos, true};
        int32_t *ids = NULL;
        int64_t n_ids = 0;
        if (render_ids(tmpl, msgs, n_msgs, &vars, s.tok, &ids, &n_ids)) goto done;
        /* too long with room for a reply: leave out the oldest exchanges
         * (owned[0..1]: the first user message and its reply) */
        const int first = o.system ? 1 : 0, n_ctx = nib_ctx_n_ctx(s.ctx);
        /* -n -1 (a reply until its end of turn): keep a quarter of the context for it */
        const int room = o.n_predict < 0 ? n_ctx / 4 : o.n_predict;
        int dropped = 0;
        while (n_ids + room > n_ctx && n_owned >= 3) {
            free(ids), ids = NULL;
            free(owned[0]), free(owned[1]);
            memmove(owned, owned + 2, (size_t)(n_owned - 2) * sizeof *owned);
            memmove(msgs + first, msgs + first + 2, (size_t)(n_msgs - first - 2) * sizeof *msgs);
            n_owned -= 2, n_msgs -= 2, dropped++;
            if (render_ids(tmpl, msgs, n_msgs, &vars, s.tok, &ids, &n_ids)) goto done;
        }
        if (dropped)
            fprintf(stderr, "nib chat: %d oldest exchange%s left out to fit the context of %d\n", dropped,
                    dropped > 1 ? "s" : "", n_ctx);
        if (n_ids + room > n_ctx) {
            fprintf(stderr, "nib chat: the message (%lld tokens with the template%s) does not fit the context of %d "
                    "with room for a reply of %d (-n%s); raise -c or lower -n\n", (long long)n_ids,
                    o.system ? " and the system message" : "", n_ctx, room, o.n_predict < 0 ? " -1: a quarter" : "");
            free(ids);
            n_msgs--;
            free(owned[--n_owned]);
            continue;
        }
        int64_t keep = 0;
        while (keep < n_cached && keep < n_ids - 1 && cached[keep] == ids[keep]) keep++;
        nib_ctx_truncate(s.ctx, (int32_t)keep);
        gen_result r;
        cli_generate(&s, &o, smp, ids + keep, n_ids - keep, stdout, &r);
        putchar('\n');
        /* the cache now holds the prompt and the reply; remember the prompt part (reply tokens are re-derived) */
        free(cached);
        cached = ids;
        n_cached = n_ids;
        if (r.stop == GEN_STOP_ERROR) {
            free(r.text);
            goto done;
        }
        owned[n_owned] = r.text;
        msgs[n_msgs++] = (nib_chat_message){"assistant", owned[n_owned++]};
    }
    rc = 0;
done:
    for (int i = 0; i < n_owned; i++) free(owned[i]);
    free(cached), free(tmpl), free(bos), free(eos);
    nib_sampler_free(smp);
    cli_session_close(&s);
    return rc;
}
