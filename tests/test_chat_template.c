/* Chat templates: nib's Jinja subset against jinja2 (as transformers
 * configures it), byte for byte, on the real templates of SmolLM2, Qwen2.5,
 * Qwen3, Llama 3.2/3.3, Gemma 3 and nib's built-ins, plus ~100 small
 * feature templates; then error reporting and robustness on malformed and
 * hostile templates. The expected outputs are written by
 * tools/gen_golden_chat.py into tests/golden/chat/ (run from the repo root). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat/chat_template.h"
#include "chat/jinja.h"
#include "test.h"

#define GOLDEN "tests/golden/chat/"

static char *read_file(const char *path, size_t *n_out) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) break;
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        if (got == 0) break;
        n += got;
    }
    fclose(f);
    if (buf) buf[n] = 0;
    if (n_out) *n_out = n;
    return buf;
}

/* GOLDEN + a + b + ext into out; false if it does not fit. */
static bool golden_path(char *out, size_t cap, const char *a, const char *b, const char *ext) {
    int n = snprintf(out, cap, GOLDEN "%s%s%s%s", a, b[0] ? "." : "", b, ext);
    return n > 0 && (size_t)n < cap;
}

/* ---- the length-prefixed record files ("tag LEN\n<bytes>\n") ------------------ */

typedef struct reader {
    const char *p, *end;
} reader;

static void skip_comments(reader *r) {
    while (r->p < r->end && *r->p == '#') {
        const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
        r->p = nl ? nl + 1 : r->end;
    }
}

/* Reads "tag LEN\n" + LEN bytes + "\n"; the body is copied NUL-terminated. */
static int read_record(reader *r, char *tag, size_t tag_cap, char **body, size_t *len) {
    skip_comments(r);
    const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
    if (!nl) return 0;
    const char *sp = memchr(r->p, ' ', (size_t)(nl - r->p));
    if (!sp || (size_t)(sp - r->p) >= tag_cap) return -1;
    memcpy(tag, r->p, (size_t)(sp - r->p));
    tag[sp - r->p] = 0;
    size_t n = strtoull(sp + 1, NULL, 10);
    if ((size_t)(r->end - (nl + 1)) < n + 1) return -1;
    *body = malloc(n + 1);
    if (!*body) return -1;
    memcpy(*body, nl + 1, n);
    (*body)[n] = 0;
    *len = n;
    r->p = nl + 1 + n + 1;
    return 1;
}

/* ---- golden cases -------------------------------------------------------------- */

enum { MAX_MSGS = 16, MAX_CASES = 64, MAX_TEMPLATES = 16 };

typedef struct gcase {
    char name[64];
    bool gp;
    int n;
    nib_chat_message msgs[MAX_MSGS];
} gcase;

static gcase cases[MAX_CASES];
static int n_cases;
static int64_t golden_now;
static char tmpl_names[MAX_TEMPLATES][64], tmpl_bos[MAX_TEMPLATES][64], tmpl_eos[MAX_TEMPLATES][64];
static int n_templates;

static bool load_cases(void) {
    static bool loaded, ok;
    if (loaded) return ok;
    loaded = true;
    char *tt = read_file(GOLDEN "templates.txt", NULL);
    if (!tt) return false;
    for (char *line = strtok(tt, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        char *t1 = strchr(line, '\t');
        if (!t1) continue;
        *t1 = 0;
        if (strcmp(line, "now") == 0) { golden_now = strtoll(t1 + 1, NULL, 10); continue; }
        char *t2 = strchr(t1 + 1, '\t');
        if (!t2 || n_templates == MAX_TEMPLATES) continue;
        *t2 = 0;
        snprintf(tmpl_names[n_templates], 64, "%s", line);
        snprintf(tmpl_bos[n_templates], 64, "%s", t1 + 1);
        snprintf(tmpl_eos[n_templates], 64, "%s", t2 + 1);
        n_templates++;
    }
    free(tt);

    size_t n;
    char *data = read_file(GOLDEN "cases.txt", &n);
    if (!data) return false;
    reader r = {data, data + n};
    for (;;) {
        skip_comments(&r);
        if (r.p >= r.end) break;
        const char *nl = memchr(r.p, '\n', (size_t)(r.end - r.p));
        if (!nl || n_cases == MAX_CASES) { free(data); return false; }
        gcase *gc = &cases[n_cases++];
        int gp;
        if (sscanf(r.p, "case %63s %d %d", gc->name, &gp, &gc->n) != 3 || gc->n > MAX_MSGS) { free(data); return false; }
        gc->gp = gp != 0;
        r.p = nl + 1;
        for (int i = 0; i < gc->n; i++) {
            char tag[16], *role, *content;
            size_t len;
            if (read_record(&r, tag, sizeof tag, &role, &len) != 1 || strcmp(tag, "role")) { free(data); return false; }
            if (read_record(&r, tag, sizeof tag, &content, &len) != 1 || strcmp(tag, "content")) { free(data); return false; }
            gc->msgs[i].role = role;       /* kept for the whole run */
            gc->msgs[i].content = content;
        }
    }
    free(data);
    ok = n_cases > 0 && n_templates > 0;
    return ok;
}

/* Where two renders first differ, for the failure message. */
static void report_diff(const char *what, const char *want, size_t want_n, const char *got, size_t got_n) {
    size_t i = 0;
    while (i < want_n && i < got_n && want[i] == got[i]) i++;
    size_t from = i > 20 ? i - 20 : 0;
    fprintf(stderr, "  %s: first difference at byte %zu (want %zu bytes, got %zu)\n    want: \"", what, i, want_n, got_n);
    for (size_t k = from; k < want_n && k < i + 30; k++) fprintf(stderr, want[k] == '\n' ? "\\n" : "%c", want[k]);
    fprintf(stderr, "\"\n    got:  \"");
    for (size_t k = from; k < got_n && k < i + 30; k++) fprintf(stderr, got[k] == '\n' ? "\\n" : "%c", got[k]);
    fprintf(stderr, "\"\n");
}

static int golden_template_passes[MAX_TEMPLATES], golden_template_total[MAX_TEMPLATES];

static void test_golden_templates(void) {
    CHECK(load_cases(), "cannot read " GOLDEN "templates.txt / cases.txt (run from the repo root)");
    if (!load_cases()) return;
    for (int t = 0; t < n_templates; t++) {
        char path[512];
        CHECK(golden_path(path, sizeof path, tmpl_names[t], "", ".jinja"), "path");
        char *tmpl = read_file(path, NULL);
        CHECK(tmpl, "missing %s", path);
        if (!tmpl) continue;
        nib_chat_vars vars = {tmpl_bos[t], tmpl_eos[t], false};
        for (int k = 0; k < n_cases; k++) {
            const gcase *gc = &cases[k];
            vars.add_generation_prompt = gc->gp;
            size_t want_n;
            CHECK(golden_path(path, sizeof path, tmpl_names[t], gc->name, ".txt"), "path");
            char *want = read_file(path, &want_n);
            CHECK(golden_path(path, sizeof path, tmpl_names[t], gc->name, ".err"), "path");
            char *want_err = want ? NULL : read_file(path, NULL);
            CHECK(want || want_err, "no golden output for %s.%s", tmpl_names[t], gc->name);
            char *got = NULL;
            nib_error err = {0};
            nib_status st = nib_chat_render_at(tmpl, gc->msgs, gc->n, &vars, golden_now, &got, &err);
            golden_template_total[t]++;
            if (want) {
                CHECK(st == NIB_OK, "%s.%s: render failed: %s", tmpl_names[t], gc->name, err.msg);
                if (st == NIB_OK) {
                    bool same = strlen(got) == want_n && memcmp(got, want, want_n) == 0;
                    CHECK(same, "%s.%s: output differs from jinja2", tmpl_names[t], gc->name);
                    if (!same) report_diff(gc->name, want, want_n, got, strlen(got));
                    golden_template_passes[t] += same;
                }
            } else if (want_err) {
                CHECK(st != NIB_OK, "%s.%s: jinja2 fails (%s) but nib rendered", tmpl_names[t], gc->name, want_err);
                CHECK(st == NIB_OK || err.msg[0], "%s.%s: error without a message", tmpl_names[t], gc->name);
                golden_template_passes[t] += st != NIB_OK;
            }
            free(got);
            free(want);
            free(want_err);
        }
        free(tmpl);
    }
    for (int t = 0; t < n_templates; t++)
        printf("      %-16s %2d/%2d cases identical to jinja2\n", tmpl_names[t], golden_template_passes[t],
               golden_template_total[t]);
}

static void test_golden_micro(void) {
    size_t n;
    char *data = read_file(GOLDEN "micro.txt", &n);
    CHECK(data, "cannot read " GOLDEN "micro.txt");
    if (!data) return;
    nib_chat_message msgs[2] = {{"system", "You are a helpful assistant."}, {"user", "What is the capital of France?"}};
    nib_chat_vars vars = {"<s>", "</s>", true};
    CHECK(load_cases(), "cases");
    reader r = {data, data + n};
    int total = 0, same_count = 0;
    for (;;) {
        char tag[16], *tmpl, *want;
        size_t tl, wl;
        int rc = read_record(&r, tag, sizeof tag, &tmpl, &tl);
        if (rc == 0) break;
        CHECK(rc == 1 && strcmp(tag, "tmpl") == 0, "micro.txt: bad record");
        if (rc != 1) break;
        rc = read_record(&r, tag, sizeof tag, &want, &wl);
        CHECK(rc == 1, "micro.txt: bad record after a template");
        if (rc != 1) { free(tmpl); break; }
        total++;
        char *got = NULL;
        nib_error err = {0};
        nib_status st = nib_chat_render_at(tmpl, msgs, 2, &vars, golden_now, &got, &err);
        if (strcmp(tag, "out") == 0) {
            CHECK(st == NIB_OK, "micro %s: failed: %s", tmpl, err.msg);
            if (st == NIB_OK) {
                bool same = strlen(got) == wl && memcmp(got, want, wl) == 0;
                CHECK(same, "micro %s: output differs", tmpl);
                if (!same) report_diff("micro", want, wl, got, strlen(got));
                same_count += same;
            }
        } else {
            CHECK(st != NIB_OK, "micro %s: jinja2 fails (%s) but nib rendered \"%s\"", tmpl, want, got ? got : "");
            CHECK(st == NIB_OK || err.msg[0], "micro %s: error without message", tmpl);
            same_count += st != NIB_OK;
        }
        free(got);
        free(tmpl);
        free(want);
    }
    printf("      micro            %d/%d templates agree with jinja2\n", same_count, total);
    CHECK(total >= 90, "only %d micro cases read", total);
    free(data);
}

/* The built-in templates are the published ones, kept in the golden dir too. */
static void test_builtins_match_files(void) {
    static const char *const names[] = {"chatml", "gemma", "llama3"};
    for (int i = 0; i < 3; i++) {
        char path[128];
        snprintf(path, sizeof path, GOLDEN "builtin_%s.jinja", names[i]);
        char *file = read_file(path, NULL);
        const char *b = nib_chat_builtin(names[i]);
        CHECK(b && file && strcmp(b, file) == 0, "builtin %s differs from %s", names[i], path);
        free(file);
    }
    CHECK(nib_chat_builtin("nope") == NULL, "unknown builtin name");
    CHECK(nib_chat_builtin(NULL) == NULL, "NULL builtin name");
    /* the gemma builtin is Gemma 3's own template */
    char *g3 = read_file(GOLDEN "gemma3.jinja", NULL);
    CHECK(g3 && strcmp(g3, nib_chat_builtin("gemma")) == 0, "builtin gemma != gemma3.jinja");
    free(g3);
}

/* The SmolLM2 golden template is the one in the model file. */
static void test_smollm2_template_from_gguf(void) {
    nib_error err = {0};
    nib_gguf *g = nib_gguf_open("models/SmolLM2-135M-Instruct.Q4_1.gguf", &err);
    if (!g) SKIP("models/SmolLM2-135M-Instruct.Q4_1.gguf not present (tools/fetch_models.sh)");
    nib_str s;
    nib_status st = nib_gguf_get_str(g, "tokenizer.chat_template", &s, &err);
    CHECK(st == NIB_OK, "no tokenizer.chat_template: %s", err.msg);
    char *file = read_file(GOLDEN "smollm2.jinja", NULL);
    CHECK(file && st == NIB_OK && strlen(file) == s.len && memcmp(file, s.ptr, s.len) == 0,
          "smollm2.jinja differs from the GGUF's template");
    free(file);
    nib_gguf_close(g);
}

static void test_tables(void) { CHECK(jinja_builtin_tables_ok(), "filter/test tables unsorted or with a hole"); }

/* ---- errors ------------------------------------------------------------------------ */

static nib_status render_err(const char *tmpl, nib_error *err) {
    nib_chat_message m = {"user", "hi"};
    nib_chat_vars v = {"", "", true};
    char *out = NULL;
    memset(err, 0, sizeof *err);
    nib_status st = nib_chat_render(tmpl, &m, 1, &v, &out, err);
    if (st != NIB_OK) CHECK(out == NULL, "output set on failure");
    free(out);
    return st;
}

static void test_error_messages(void) {
    nib_error err;
    nib_status st;

    st = render_err("ok\n  {{ messages | nosuchfilter }}", &err);
    CHECK(st == NIB_ERR_UNSUPPORTED, "unknown filter: status %d", st);
    CHECK(strstr(err.msg, "unknown filter 'nosuchfilter'") && strstr(err.msg, "2:17"), "unknown filter: %s", err.msg);

    st = render_err("{% if true %}\n{{ raise_exception('Roles must alternate') }}{% endif %}", &err);
    CHECK(st == NIB_ERR_ARG, "raise_exception: status %d", st);
    CHECK(strstr(err.msg, "Roles must alternate") != NULL, "raise_exception: %s", err.msg);

    st = render_err("a\n  {% if messages %}\n  b", &err);
    CHECK(st == NIB_ERR_FORMAT, "unclosed if: status %d", st);
    CHECK(strstr(err.msg, "unclosed 'if'") && strstr(err.msg, "endif") && strstr(err.msg, "2:3"), "unclosed if: %s", err.msg);

    st = render_err("{% endfor %}", &err);
    CHECK(st == NIB_ERR_FORMAT && strstr(err.msg, "'endfor'") && strstr(err.msg, "1:4"), "stray endfor: %s", err.msg);

    st = render_err("x{% frobnicate %}", &err);
    CHECK(st == NIB_ERR_UNSUPPORTED && strstr(err.msg, "unknown tag 'frobnicate'") && strstr(err.msg, "1:5"),
          "unknown tag: %s", err.msg);

    st = render_err("{{ 'a'.frob() }}", &err);
    CHECK(st == NIB_ERR_UNSUPPORTED && strstr(err.msg, "unknown method 'frob'") && strstr(err.msg, "1:8"),
          "unknown method: %s", err.msg);

    st = render_err("{{ 1 is frob }}", &err);
    CHECK(st == NIB_ERR_UNSUPPORTED && strstr(err.msg, "unknown test 'frob'"), "unknown test: %s", err.msg);

    st = render_err("{{ frob(1) }}", &err);
    CHECK(st == NIB_ERR_UNSUPPORTED && strstr(err.msg, "unknown function 'frob'"), "unknown function: %s", err.msg);

    st = render_err("{{ x.y }}", &err);
    CHECK(st == NIB_ERR_FORMAT && strstr(err.msg, "'x' is undefined"), "undefined: %s", err.msg);

    st = render_err("{{ 'abc }}", &err);
    CHECK(st == NIB_ERR_FORMAT && strstr(err.msg, "unterminated string"), "string: %s", err.msg);

    st = render_err("{# never closed", &err);
    CHECK(st == NIB_ERR_FORMAT && strstr(err.msg, "comment"), "comment: %s", err.msg);

    /* a NULL error pointer is allowed: the status still comes back */
    char *out = NULL;
    nib_chat_message m = {"user", "hi"};
    CHECK(nib_chat_render("{% if %}", &m, 1, NULL, &out, NULL) == NIB_ERR_FORMAT && out == NULL, "NULL err");
    CHECK(nib_chat_render(NULL, &m, 1, NULL, &out, &err) == NIB_ERR_ARG, "NULL template");
    nib_chat_message bad = {NULL, "x"};
    CHECK(nib_chat_render("x", &bad, 1, NULL, &out, &err) == NIB_ERR_ARG, "NULL role");
    CHECK(nib_chat_render("x", NULL, 0, NULL, &out, &err) == NIB_OK && out && strcmp(out, "x") == 0, "no messages");
    free(out);
}

/* ---- robustness: limits, not crashes ------------------------------------------------- */

static char *repeat_str(const char *a, int n, const char *mid, const char *b, int nb) {
    size_t la = strlen(a), lb = strlen(b), lm = strlen(mid);
    char *s = malloc(la * (size_t)n + lm + lb * (size_t)nb + 16), *p = s;   /* room for a closing " }}" */
    if (!s) return NULL;
    for (int i = 0; i < n; i++, p += la) memcpy(p, a, la);
    memcpy(p, mid, lm);
    p += lm;
    for (int i = 0; i < nb; i++, p += lb) memcpy(p, b, lb);
    *p = 0;
    return s;
}

static void expect_fails(const char *what, const char *tmpl) {
    nib_error err;
    nib_status st = render_err(tmpl, &err);
    CHECK(st != NIB_OK && err.msg[0], "%s: expected a clean error, got status %d (%s)", what, st, err.msg);
}

static void test_limits(void) {
    char *s;
    s = repeat_str("{{ ", 1, "", "(", 100000);
    strcat(s, "1 }}");   /* only the opening half: the lexer refuses first */
    expect_fails("deep parens", s);
    free(s);
    s = repeat_str("{{ [", 150, "1", "]", 150);   /* brackets within the lexer's limit, too deep for the parser */
    strcat(s, " }}");
    expect_fails("deep brackets", s);
    free(s);
    s = repeat_str("{{ (", 1, "", "(", 5000);
    expect_fails("unclosed parens", s);
    free(s);
    s = repeat_str("{% if true %}", 20000, "x", "{% endif %}", 20000);
    expect_fails("deep ifs", s);
    free(s);
    s = repeat_str("{{ not ", 1, "", "not ", 50000);
    expect_fails("not chain", s);
    free(s);
    s = repeat_str("{{ 1", 1, "", " + 1", 100000);   /* a long flat chain: deep AST, not deep nesting */
    expect_fails("long + chain", s);
    free(s);
    s = repeat_str("{{ -", 1, "", "-", 100000);
    expect_fails("unary chain", s);
    free(s);
    s = repeat_str("{{ x", 1, "", "|trim", 100000);
    {
        /* a long filter chain is iterative in the parser and shallow... but the AST is deep */
        nib_error err;
        strcat(s, " }}");
        render_err(s, &err);   /* must not crash; either result is fine */
    }
    free(s);
    expect_fails("macro recursion", "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}");
    expect_fails("huge range", "{% for i in range(1000000000) %}{% endfor %}");
    expect_fails("loop steps", "{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}");
    expect_fails("string blowup", "{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(64) %}"
                                  "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}");
    expect_fails("repeat blowup", "{{ 'x' * 100000000000 }}");
    expect_fails("int overflow", "{{ 9223372036854775807 + 1 }}");
    expect_fails("nested list print",
                 "{% set ns = namespace(l=[]) %}{% for i in range(5000) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}");
}

/* select/reject with no arguments (truthiness) once did NULL + 0 on the empty
 * argument list, undefined behaviour that fuzzing under UBSan found
 * (tests/corpus/regress/chat/select-without-arguments replays it there). */
static void test_select_without_arguments(void) {
    nib_chat_message msgs[2] = {{"user", "a"}, {"assistant", ""}};
    nib_chat_vars vars = {"<s>", "</s>", false};
    char *out = NULL;
    nib_error err;
    nib_status st = nib_chat_render_at("{{ messages | map(attribute='content') | select | list | length }},"
                                       "{{ [1, 0, 2] | reject | list }}",
                                       msgs, 2, &vars, 0, &out, &err);
    CHECK(st == NIB_OK && out && !strcmp(out, "1,[0]"), "select/reject without arguments: %s",
          st == NIB_OK ? out : err.msg);
    free(out);
}

/* Mutated real templates: every render must end in output or a clean error. */
static void test_fuzz_templates(void) {
    static const char *const names[] = {"qwen3", "llama3.2", "gemma3", "qwen2.5"};
    static const char *const inserts[] = {"{%", "%}", "{{", "}}", "{#", "#}", "-", "(", ")", "[", "]", "'", "\"", "|", ".",
                                          "{% endif %}", "{% for x in y %}", "\\", "\n", " is ", " not ", "[::-1]", ""};
    nib_chat_message msgs[3] = {{"system", "s"}, {"user", "u"}, {"assistant", "a"}};
    nib_chat_vars vars = {"<s>", "</s>", true};
    rng_seed(1234);
    int n_ok = 0, n_err = 0;
    for (size_t t = 0; t < sizeof names / sizeof names[0]; t++) {
        char path[128];
        snprintf(path, sizeof path, GOLDEN "%s.jinja", names[t]);
        size_t n;
        char *base = read_file(path, &n);
        CHECK(base, "missing %s", path);
        if (!base) continue;
        char *buf = malloc(n + 64);
        for (int iter = 0; iter < 400 && buf; iter++) {
            memcpy(buf, base, n + 1);
            size_t len = n;
            int muts = 1 + (int)(rng_u64() % 4);
            for (int m = 0; m < muts; m++) {
                size_t pos = len ? (size_t)(rng_u64() % len) : 0;
                switch (rng_u64() % 4) {
                case 0: buf[pos] = (char)(rng_u64() % 255 + 1); break;          /* flip a byte */
                case 1: len = pos; buf[len] = 0; break;                           /* truncate */
                case 2: memmove(buf + pos, buf + pos + 1, len - pos); len--; break;   /* delete */
                default: {                                                       /* insert a token */
                    const char *ins = inserts[rng_u64() % (sizeof inserts / sizeof inserts[0])];
                    size_t il = strlen(ins);
                    if (len + il + 1 > n + 64) break;
                    memmove(buf + pos + il, buf + pos, len - pos + 1);
                    memcpy(buf + pos, ins, il);
                    len += il;
                }
                }
            }
            char *out = NULL;
            nib_error err = {0};
            nib_status st = nib_chat_render(buf, msgs, 3, &vars, &out, &err);
            if (st == NIB_OK) {
                CHECK(out != NULL, "OK without output");
                n_ok++;
            } else {
                CHECK(out == NULL && err.msg[0], "error without message (status %d)", st);
                n_err++;
            }
            free(out);
        }
        free(buf);
        free(base);
    }
    printf("      fuzz: %d rendered, %d clean errors\n", n_ok, n_err);
}

/* strftime_now on the real clock: Llama 3.2's date line has today's date. */
static void test_strftime_now_real_clock(void) {
    char *tmpl = read_file(GOLDEN "llama3.2.jinja", NULL);
    CHECK(tmpl, "llama3.2.jinja");
    if (!tmpl) return;
    nib_chat_message m = {"user", "hi"};
    nib_chat_vars v = {"<|begin_of_text|>", "<|eot_id|>", true};
    char *out = NULL;
    nib_error err = {0};
    CHECK(nib_chat_render(tmpl, &m, 1, &v, &out, &err) == NIB_OK, "render: %s", err.msg);
    char want[64];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(want, sizeof want, "Today Date: %d %b %Y", &tm);
    CHECK(out && strstr(out, want), "missing \"%s\" in %s", want, out ? out : "(null)");
    free(out);
    free(tmpl);
}

int main(void) {
    RUN(test_tables);
    RUN(test_builtins_match_files);
    RUN(test_smollm2_template_from_gguf);
    RUN(test_golden_templates);
    RUN(test_golden_micro);
    RUN(test_error_messages);
    RUN(test_limits);
    RUN(test_fuzz_templates);
    RUN(test_select_without_arguments);
    RUN(test_strftime_now_real_clock);
    for (int i = 0; i < n_cases; i++)
        for (int k = 0; k < cases[i].n; k++) {
            free((char *)cases[i].msgs[k].role);
            free((char *)cases[i].msgs[k].content);
        }
    return test_summary();
}
