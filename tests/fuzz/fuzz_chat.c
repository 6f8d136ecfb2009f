/* Fuzz harness: the chat-template renderer (nib_chat_render_at), the Jinja
 * subset's lexer, parser and evaluator on hostile templates and messages.
 *
 * Input: a flags byte, the template (up to the first NUL), then messages
 * separated by \x01, each a role byte and its content. Flags bits 0-2 are the
 * number of messages used (0..7), bit 3 add_generation_prompt, bit 4 gives the
 * first message a NULL content (None in the template). A render either
 * succeeds with a NUL-terminated string or fails with a message; the engine's
 * limits (loop steps, nesting, arena bytes) keep every input to a bounded
 * time and memory. Seeds: every template of tests/golden/chat and small ones
 * (gen_hostile seeds). */
#include "fuzz.h"

#include "chat/chat_template.h"

#define MAX_MSGS 7

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t flags = data[0];
    /* one NUL-terminated copy of the rest; the template is its first string */
    char *buf = malloc(size + 1);
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = 0;
    const char *tmpl = buf;
    size_t tlen = strlen(buf);

    static const char *const roles[] = {"system", "user", "assistant", "tool", ""};
    nib_chat_message msgs[MAX_MSGS];
    int n_msgs = 0, want = flags & 7;
    char *p = tlen < size - 1 ? buf + tlen + 1 : NULL;  /* after the template's NUL */
    char *end = buf + size - 1;
    while (p && p <= end && n_msgs < want) {
        char *sep = memchr(p, 1, (size_t)(end - p));
        if (sep) *sep = 0;
        const char *role = roles[p < end ? (uint8_t)p[0] % 5 : 1];
        msgs[n_msgs++] = (nib_chat_message){role, p < end ? p + 1 : p};
        p = sep ? sep + 1 : NULL;
    }
    for (; n_msgs < want; n_msgs++) msgs[n_msgs] = (nib_chat_message){roles[n_msgs % 3], "hi"};
    if (n_msgs && (flags & 16)) msgs[0].content = NULL;

    nib_chat_vars vars = {"<s>", "</s>", (flags & 8) != 0};
    char *out = (char *)1;
    nib_error err = {0};
    nib_status s = nib_chat_render_at(tmpl, msgs, n_msgs, &vars, 1700000000, &out, &err);
    if (s == NIB_OK) {
        FUZZ_CHECK(out != NULL, "success without output");
        volatile size_t n = strlen(out);
        (void)n;
        free(out);
    } else {
        FUZZ_CHECK(out == NULL, "failure left *out set");
        fuzz_check_error(&err, "nib_chat_render_at");
    }
    /* the same messages through a built-in template (they must always render or refuse) */
    static const char *const builtins[] = {"chatml", "gemma", "llama3"};
    const char *b = nib_chat_builtin(builtins[flags >> 6 < 3 ? flags >> 6 : 0]);
    FUZZ_CHECK(b != NULL, "built-in template missing");
    if (n_msgs && msgs[0].content == NULL) msgs[0].content = "";  /* chatml concatenates content: None is a TypeError */
    if (nib_chat_render_at(b, msgs, n_msgs, &vars, 0, &out, &err) == NIB_OK) free(out);
    else fuzz_check_error(&err, "built-in template");
    free(buf);
    return 0;
}
