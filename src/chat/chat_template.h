/* Chat templates: the model's tokenizer.chat_template (Jinja), rendered by a
 * Jinja subset big enough for the templates of the models nib supports
 * (SmolLM2, Gemma 3, Qwen2.5/3, Llama 3), plus built-in named templates for
 * files that carry none. An unsupported construct is an error naming it and
 * its position in the template. */
#ifndef NIB_CHAT_TEMPLATE_H
#define NIB_CHAT_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nib.h"

typedef struct nib_chat_message {
    const char *role;     /* "system", "user", "assistant" */
    const char *content;
} nib_chat_message;

typedef struct nib_chat_vars {
    const char *bos_token;         /* text of BOS, "" if none */
    const char *eos_token;         /* text of EOS, "" if none */
    bool add_generation_prompt;
} nib_chat_vars;

/* Render a Jinja template source. *out is malloc'ed, NUL-terminated. */
nib_status nib_chat_render(const char *tmpl, const nib_chat_message *msgs, int n_msgs, const nib_chat_vars *vars,
                           char **out, nib_error *err);

/* As nib_chat_render, but the template's strftime_now() sees the time
 * now_unix (seconds since the epoch, formatted as UTC) instead of the local
 * clock: reproducible prompts for tests and golden files.
 *
 * Both render what transformers' apply_chat_template(tokenize=False) renders
 * with jinja2: variables messages (dicts with role and content; a NULL
 * content is None), add_generation_prompt, bos_token, eos_token, tools=None,
 * documents=None; functions raise_exception, strftime_now, namespace, range,
 * dict. Errors: NIB_ERR_FORMAT for a malformed template or a runtime error
 * (undefined variable use, type error), NIB_ERR_UNSUPPORTED for a construct
 * this subset lacks (the message names it and its line:column),
 * NIB_ERR_ARG when the template rejects the conversation via
 * raise_exception (the message is the template's), NIB_ERR_NOMEM. */
nib_status nib_chat_render_at(const char *tmpl, const nib_chat_message *msgs, int n_msgs, const nib_chat_vars *vars,
                              int64_t now_unix, char **out, nib_error *err);

/* A built-in template by name ("chatml", "gemma", "llama3"), or NULL. */
const char *nib_chat_builtin(const char *name);

#endif
