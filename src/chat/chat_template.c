/* Chat templates: the public entry (nib_chat_render) over the Jinja subset,
 * and the built-in templates for GGUF files that carry none.
 *
 * A render is: lex + parse the template, build the variables transformers'
 * apply_chat_template passes (messages, add_generation_prompt, bos_token,
 * eos_token, tools=None, documents=None) plus its globals (raise_exception,
 * strftime_now) and jinja2's (namespace, range, dict), evaluate, copy the
 * output out of the arena, free the arena. Parsing per render costs tens of
 * microseconds for real templates, far below one decode step, so there is no
 * compiled-template cache to manage. */
#include "chat/chat_template.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat/jinja.h"
#include "core/error.h"

/* ---- built-in templates ---------------------------------------------------- */

/* Each is the model family's published template, verbatim, so that a file
 * without tokenizer.chat_template renders exactly as its upstream tokenizer
 * would. tests/golden/chat/builtin_<name>.jinja holds the same text; the test
 * checks they agree and renders them against jinja2's output. To add one: a
 * row here, the .jinja file, and a line in tools/gen_golden_chat.py. */
static const char tmpl_chatml[] =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
    "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/* google/gemma-3-*-it tokenizer_config.json */
static const char tmpl_gemma[] =
    "{{ bos_token }}\n"
    "{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- if messages[0]['content'] is string -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}\n"
    "    {%- else -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}\n"
    "    {%- endif -%}\n"
    "    {%- set loop_messages = messages[1:] -%}\n"
    "{%- else -%}\n"
    "    {%- set first_user_prefix = \"\" -%}\n"
    "    {%- set loop_messages = messages -%}\n"
    "{%- endif -%}\n"
    "{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    "        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n"
    "    {%- endif -%}\n"
    "    {%- if (message['role'] == 'assistant') -%}\n"
    "        {%- set role = \"model\" -%}\n"
    "    {%- else -%}\n"
    "        {%- set role = message['role'] -%}\n"
    "    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {%- if message['content'] is string -%}\n"
    "        {{ message['content'] | trim }}\n"
    "    {%- elif message['content'] is iterable -%}\n"
    "        {%- for item in message['content'] -%}\n"
    "            {%- if item['type'] == 'image' -%}\n"
    "                {{ '<start_of_image>' }}\n"
    "            {%- elif item['type'] == 'text' -%}\n"
    "                {{ item['text'] | trim }}\n"
    "            {%- endif -%}\n"
    "        {%- endfor -%}\n"
    "    {%- else -%}\n"
    "        {{ raise_exception(\"Invalid content type\") }}\n"
    "    {%- endif -%}\n"
    "    {{ '<end_of_turn>\\n' }}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "    {{'<start_of_turn>model\\n'}}\n"
    "{%- endif -%}\n";

/* meta-llama/Meta-Llama-3-8B-Instruct tokenizer_config.json */
static const char tmpl_llama3[] =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 "
    "%}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

static const struct {
    const char *name;
    const char *text;
} builtins[] = {
    {"chatml", tmpl_chatml},
    {"gemma", tmpl_gemma},
    {"llama3", tmpl_llama3},
};

const char *nib_chat_builtin(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(builtins[i].name, name) == 0) return builtins[i].text;
    return NULL;
}

/* ---- rendering ----------------------------------------------------------------- */

static int set_var(jctx *c, jscope *g, const char *name, jv v) { return jscope_set(c, g, jstr_c(name), v); }

static int build_globals(jctx *c, jscope *g, const nib_chat_message *msgs, int n_msgs, const nib_chat_vars *vars) {
    for (int i = 0; i < jinja_n_global_funcs; i++) {
        jv f = {0};
        f.kind = JV_FUNC;
        f.u.func = &jinja_global_funcs[i];
        if (set_var(c, g, jinja_global_funcs[i].name, f)) return -1;
    }
    jv list;
    if (!jv_list_new(c, &list, (size_t)n_msgs)) return -1;
    for (int i = 0; i < n_msgs; i++) {
        jv m;
        if (jv_dict_new(c, &m)) return -1;
        /* content NULL is None, as for an assistant turn that only calls tools */
        if (jdict_set(c, m.u.dict, jv_cstr("role"), jv_cstr(msgs[i].role)) ||
            jdict_set(c, m.u.dict, jv_cstr("content"), msgs[i].content ? jv_cstr(msgs[i].content) : jv_none()))
            return -1;
        list.u.list->v[list.u.list->n++] = m;
    }
    const char *bos = vars && vars->bos_token ? vars->bos_token : "";
    const char *eos = vars && vars->eos_token ? vars->eos_token : "";
    return set_var(c, g, "messages", list) || set_var(c, g, "add_generation_prompt", jv_bool(vars && vars->add_generation_prompt)) ||
                   set_var(c, g, "bos_token", jv_cstr(bos)) || set_var(c, g, "eos_token", jv_cstr(eos)) ||
                   set_var(c, g, "tools", jv_none()) || set_var(c, g, "documents", jv_none())
               ? -1
               : 0;
}

static nib_status render(const char *tmpl, const nib_chat_message *msgs, int n_msgs, const nib_chat_vars *vars,
                         int64_t now_unix, bool now_is_local, char **out, nib_error *err) {
    if (out) *out = NULL;
    if (!tmpl || !out) return nib_error_set(err, NIB_ERR_ARG, "chat template: NULL template or output");
    if (n_msgs < 0 || (n_msgs > 0 && !msgs)) return nib_error_set(err, NIB_ERR_ARG, "chat template: bad message list");
    for (int i = 0; i < n_msgs; i++)
        if (!msgs[i].role) return nib_error_set(err, NIB_ERR_ARG, "chat template: message %d has no role", i);

    jctx c;
    memset(&c, 0, sizeof c);
    c.arena.limit_bytes = JINJA_ARENA_LIMIT_BYTES;
    c.err = err;
    c.now_unix = now_unix;
    c.now_is_local = now_is_local;

    jtok *toks;
    int n_toks;
    jbody root;
    jbuf buf = {0};
    jscope *globals;
    int rc = jinja_lex(&c, tmpl, strlen(tmpl), &toks, &n_toks);
    if (rc == 0) rc = jinja_parse(&c, toks, n_toks, &root);
    if (rc == 0) rc = (globals = jscope_new(&c, NULL)) ? build_globals(&c, globals, msgs, n_msgs, vars) : -1;
    if (rc == 0) rc = jinja_render(&c, &root, globals, &buf);
    if (rc == 0) {
        char *s = malloc(buf.n + 1);
        if (!s) {
            rc = jerr_nomem(&c);
        } else {
            if (buf.n) memcpy(s, buf.p, buf.n);
            s[buf.n] = 0;
            *out = s;
        }
    }
    jarena_free(&c.arena);
    if (rc == 0) return NIB_OK;
    /* every failure path records its error through jerr; this is a backstop */
    if (!c.failed) return nib_error_set(err, NIB_ERR_FORMAT, "chat template: render failed");
    return c.status;
}

nib_status nib_chat_render(const char *tmpl, const nib_chat_message *msgs, int n_msgs, const nib_chat_vars *vars,
                           char **out, nib_error *err) {
    return render(tmpl, msgs, n_msgs, vars, (int64_t)time(NULL), true, out, err);
}

nib_status nib_chat_render_at(const char *tmpl, const nib_chat_message *msgs, int n_msgs, const nib_chat_vars *vars,
                              int64_t now_unix, char **out, nib_error *err) {
    return render(tmpl, msgs, n_msgs, vars, now_unix, false, out, err);
}
