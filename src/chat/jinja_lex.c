/* Lexer: template source -> tokens. Text between tags becomes JT_TEXT with
 * the whitespace control already applied, exactly as jinja2's lexer does it
 * under transformers' settings (trim_blocks=True, lstrip_blocks=True):
 *
 *   {%- / {{- / {#-   strip all whitespace before the tag
 *   -%} / -}} / -#}   strip all whitespace after the tag
 *   lstrip_blocks     a {% or {# tag (not {{, not {%+) alone on its line
 *                     after spaces/tabs: those spaces/tabs are dropped
 *   trim_blocks       the first newline after %} or #} (not +%}) is dropped
 *
 * Before lexing, newlines are normalised to \n and one trailing newline is
 * removed (jinja2's keep_trailing_newline=False). Inside a tag the end
 * delimiter only counts when brackets are balanced, so {{ {'a': {}} }} works
 * (jinja2's balancing stack). */
#include "chat/jinja.h"

#include <stdlib.h>
#include <string.h>

typedef struct lexer {
    jctx *c;
    const char *s;
    size_t n, pos;
    int line, col;          /* of s[pos] */
    jtok *toks;
    int n_toks, cap;
} lexer;

static void lx_advance(lexer *L, size_t to) {
    for (; L->pos < to; L->pos++) {
        if (L->s[L->pos] == '\n') { L->line++; L->col = 1; }
        else if (((unsigned char)L->s[L->pos] & 0xC0) != 0x80) L->col++;   /* columns count code points */
    }
}

static jtok *lx_push(lexer *L, jtok_kind kind, int line, int col) {
    if (L->n_toks == L->cap) {
        int cap = L->cap ? L->cap * 2 : 256;
        jtok *nt = jalloc_array(L->c, (size_t)cap, sizeof(jtok));
        if (!nt) return NULL;
        if (L->n_toks) memcpy(nt, L->toks, (size_t)L->n_toks * sizeof(jtok));
        L->toks = nt;
        L->cap = cap;
    }
    jtok *t = &L->toks[L->n_toks++];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->line = line;
    t->col = col;
    return t;
}

/* Python's \s on str: ASCII whitespace plus \x1c-\x1f (newlines are already \n). */
static bool is_ws(char ch) {
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f' ||
           (ch >= 0x1c && ch <= 0x1f);
}

static size_t skip_ws(const char *s, size_t n, size_t i) {
    while (i < n && is_ws(s[i])) i++;
    return i;
}

static int lx_text(lexer *L, size_t start, size_t end, int line, int col) {
    if (end <= start) return 0;
    jtok *t = lx_push(L, JT_TEXT, line, col);
    if (!t) return -1;
    t->s.p = L->s + start;
    t->s.n = end - start;
    return 0;
}

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

static int put_utf8(jctx *c, jbuf *b, uint32_t cp) {
    char u[4];
    size_t n;
    if (cp < 0x80) { u[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { u[0] = (char)(0xC0 | (cp >> 6)); u[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12)); u[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18)); u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return jbuf_put(c, b, u, n);
}

/* A string literal's body, decoded like jinja2 does (Python "unicode-escape"):
 * \n \t \r \\ \' \" \a \b \f \v, octal \ooo, \xhh, \uhhhh, \Uhhhhhhhh, a
 * backslash-newline disappears, and an unknown escape keeps its backslash. */
static int lx_string(lexer *L, jtok *t, size_t body, size_t end) {
    jctx *c = L->c;
    jbuf b = {0};
    const char *s = L->s;
    size_t i = body;
    while (i < end) {
        size_t run = i;
        while (run < end && s[run] != '\\') run++;
        if (jbuf_put(c, &b, s + i, run - i)) return -1;
        i = run;
        if (i >= end) break;
        char e = s[i + 1];   /* i + 1 < end: the scanner never ends a string on a backslash */
        i += 2;
        switch (e) {
        case '\n': break;
        case '\\': if (jbuf_putc(c, &b, '\\')) return -1; break;
        case '\'': if (jbuf_putc(c, &b, '\'')) return -1; break;
        case '"': if (jbuf_putc(c, &b, '"')) return -1; break;
        case 'a': if (jbuf_putc(c, &b, '\a')) return -1; break;
        case 'b': if (jbuf_putc(c, &b, '\b')) return -1; break;
        case 'f': if (jbuf_putc(c, &b, '\f')) return -1; break;
        case 'n': if (jbuf_putc(c, &b, '\n')) return -1; break;
        case 'r': if (jbuf_putc(c, &b, '\r')) return -1; break;
        case 't': if (jbuf_putc(c, &b, '\t')) return -1; break;
        case 'v': if (jbuf_putc(c, &b, '\v')) return -1; break;
        case 'x': case 'u': case 'U': {
            int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int k = 0; k < digits; k++) {
                int h = i + (size_t)k < end ? hexval(s[i + (size_t)k]) : -1;
                if (h < 0)
                    return jerr(c, NIB_ERR_FORMAT, t->line, t->col, "truncated \\%c escape in string literal", e);
                cp = cp * 16 + (uint32_t)h;
            }
            if (cp > 0x10FFFF)
                return jerr(c, NIB_ERR_FORMAT, t->line, t->col, "\\U escape out of range in string literal");
            i += (size_t)digits;
            if (put_utf8(c, &b, cp)) return -1;
            break;
        }
        default:
            if (e >= '0' && e <= '7') {
                uint32_t cp = (uint32_t)(e - '0');
                for (int k = 0; k < 2 && i < end && s[i] >= '0' && s[i] <= '7'; k++) cp = cp * 8 + (uint32_t)(s[i++] - '0');
                if (put_utf8(c, &b, cp)) return -1;
            } else {
                if (jbuf_putc(c, &b, '\\') || jbuf_putc(c, &b, e)) return -1;
            }
        }
    }
    t->s.p = b.p ? b.p : "";
    t->s.n = b.n;
    return 0;
}

static bool is_name_start(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_'; }
static bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }

/* digits with single underscores between them, as Python/jinja2 allow */
static size_t scan_digits(const char *s, size_t n, size_t i) {
    while (i < n && (is_digit(s[i]) || (s[i] == '_' && i + 1 < n && is_digit(s[i + 1]) && i > 0 && is_digit(s[i - 1])))) i++;
    return i;
}

static int lx_number(lexer *L, bool after_dot) {
    const char *s = L->s;
    size_t start = L->pos, i = scan_digits(s, L->n, start);
    bool is_float = false;
    if (!after_dot) {
        if (i + 1 < L->n && s[i] == '.' && is_digit(s[i + 1])) { is_float = true; i = scan_digits(s, L->n, i + 1); }
        if (i < L->n && (s[i] == 'e' || s[i] == 'E')) {
            size_t j = i + 1;
            if (j < L->n && (s[j] == '+' || s[j] == '-')) j++;
            if (j < L->n && is_digit(s[j])) { is_float = true; i = scan_digits(s, L->n, j); }
        }
    }
    char buf[64];
    size_t k = 0;
    for (size_t p = start; p < i; p++)
        if (s[p] != '_') {
            if (k + 1 >= sizeof buf)
                return jerr(L->c, NIB_ERR_FORMAT, L->line, L->col, "number literal too long");
            buf[k++] = s[p];
        }
    buf[k] = 0;
    jtok *t = lx_push(L, is_float ? JT_FLOAT : JT_INT, L->line, L->col);
    if (!t) return -1;
    t->s.p = s + start;
    t->s.n = i - start;
    if (is_float) {
        t->f = strtod(buf, NULL);
    } else {
        int64_t v = 0;
        for (size_t p = 0; p < k; p++) {
            int d = buf[p] - '0';
            if (v > (INT64_MAX - d) / 10)
                return jerr(L->c, NIB_ERR_UNSUPPORTED, t->line, t->col, "integer literal does not fit in 64 bits");
            v = v * 10 + d;
        }
        t->i = v;
    }
    lx_advance(L, i);
    return 0;
}

/* Operators: the two-character ones first (longest match), then single
 * characters. Returns the length, 0 if s does not start with one. */
static size_t lx_op_len(const char *s, size_t rem) {
    static const char two[][2] = {{'/', '/'}, {'*', '*'}, {'=', '='}, {'!', '='}, {'<', '='}, {'>', '='}};
    if (rem >= 2)
        for (size_t k = 0; k < sizeof two / sizeof two[0]; k++)
            if (s[0] == two[k][0] && s[1] == two[k][1]) return 2;
    return s[0] && strchr("+-*/%~<>=()[]{},.:|;", s[0]) ? 1 : 0;
}

/* Tokens of one {{ }} or {% %} tag, from L->pos (just after the opener) to
 * its end delimiter. Returns the position after the delimiter in *after and
 * whether it asked to strip the following whitespace. */
static int lx_tag(lexer *L, bool is_block, int open_line, int open_col, bool *strip_after, bool *trim_newline) {
    const char *s = L->s;
    int depth = 0;
    char stack[JINJA_MAX_DEPTH];
    for (;;) {
        lx_advance(L, skip_ws(s, L->n, L->pos));
        if (L->pos >= L->n)
            return jerr(L->c, NIB_ERR_FORMAT, open_line, open_col, "unclosed '%s' tag (no matching '%s')",
                        is_block ? "{%" : "{{", is_block ? "%}" : "}}");
        size_t p = L->pos, rem = L->n - p;
        if (depth == 0) {
            const char *end = is_block ? "%}" : "}}";
            int k = -1;   /* length of the sign before the delimiter */
            if (rem >= 3 && s[p] == '-' && memcmp(s + p + 1, end, 2) == 0) k = 1;
            else if (is_block && rem >= 3 && s[p] == '+' && memcmp(s + p + 1, end, 2) == 0) k = 1;
            else if (rem >= 2 && memcmp(s + p, end, 2) == 0) k = 0;
            if (k >= 0) {
                jtok *t = lx_push(L, is_block ? JT_BLOCK_END : JT_VAR_END, L->line, L->col);
                if (!t) return -1;
                *strip_after = k == 1 && s[p] == '-';
                *trim_newline = is_block && k == 0;
                lx_advance(L, p + (size_t)k + 2);
                return 0;
            }
        }
        char ch = s[p];
        if (is_name_start(ch)) {
            size_t i = p;
            while (i < L->n && (is_name_start(s[i]) || is_digit(s[i]))) i++;
            jtok *t = lx_push(L, JT_NAME, L->line, L->col);
            if (!t) return -1;
            t->s.p = s + p;
            t->s.n = i - p;
            lx_advance(L, i);
            continue;
        }
        if (is_digit(ch)) {
            bool after_dot = L->n_toks > 0 && L->toks[L->n_toks - 1].kind == JT_OP && jstr_eq(L->toks[L->n_toks - 1].s, ".");
            if (lx_number(L, after_dot)) return -1;
            continue;
        }
        if (ch == '\'' || ch == '"') {
            size_t i = p + 1;
            while (i < L->n && s[i] != ch) i += (s[i] == '\\' && i + 1 < L->n) ? 2 : 1;
            if (i >= L->n) return jerr(L->c, NIB_ERR_FORMAT, L->line, L->col, "unterminated string literal");
            jtok *t = lx_push(L, JT_STRING, L->line, L->col);
            if (!t || lx_string(L, t, p + 1, i)) return -1;
            lx_advance(L, i + 1);
            continue;
        }
        size_t len = lx_op_len(s + p, rem);
        if (!len) {
            if ((unsigned char)ch >= 0x20 && (unsigned char)ch < 0x7f)
                return jerr(L->c, NIB_ERR_FORMAT, L->line, L->col, "unexpected character '%c'", ch);
            return jerr(L->c, NIB_ERR_FORMAT, L->line, L->col, "unexpected byte 0x%02x", (unsigned char)ch);
        }
        if (len == 1 && (ch == '(' || ch == '[' || ch == '{')) {
            if (depth >= JINJA_MAX_DEPTH) return jerr(L->c, NIB_ERR_FORMAT, L->line, L->col, "brackets nested too deeply");
            stack[depth++] = ch == '(' ? ')' : ch == '[' ? ']' : '}';
        } else if (len == 1 && (ch == ')' || ch == ']' || ch == '}')) {
            if (depth == 0 || stack[depth - 1] != ch)
                return jerr(L->c, NIB_ERR_FORMAT, L->line, L->col, "unexpected '%c'", ch);
            depth--;
        }
        jtok *t = lx_push(L, JT_OP, L->line, L->col);
        if (!t) return -1;
        t->s.p = s + p;
        t->s.n = len;
        lx_advance(L, p + len);
    }
}

/* Python's str.rstrip() on template text (ASCII whitespace suffices: the
 * exotic Unicode spaces never sit next to a tag in real templates). */
static size_t rstrip_end(const char *s, size_t start, size_t end) {
    while (end > start && is_ws(s[end - 1])) end--;
    return end;
}

/* At L->pos (after "{%" and its sign): "raw" then "%}" or "-%}"? If so,
 * consume through the delimiter. jinja2 applies no trim_blocks here. */
static bool lx_is_raw(lexer *L, bool *strip_after) {
    size_t i = skip_ws(L->s, L->n, L->pos);
    if (L->n - i < 3 || memcmp(L->s + i, "raw", 3) != 0) return false;
    i = skip_ws(L->s, L->n, i + 3);
    if (L->n - i >= 3 && memcmp(L->s + i, "-%}", 3) == 0) {
        *strip_after = true;
        lx_advance(L, i + 3);
        return true;
    }
    if (L->n - i >= 2 && memcmp(L->s + i, "%}", 2) == 0) {
        *strip_after = false;
        lx_advance(L, i + 2);
        return true;
    }
    return false;
}

/* The body of {% raw %}...{% endraw %}: literal text, with the usual
 * whitespace control on both delimiters. */
static int lx_raw(lexer *L, int line, int col, bool *strip_after, bool *trim_newline) {
    if (*strip_after) lx_advance(L, skip_ws(L->s, L->n, L->pos));
    size_t body = L->pos;
    int body_line = L->line, body_col = L->col;
    for (size_t open = body; open + 1 < L->n; open++) {
        if (L->s[open] != '{' || L->s[open + 1] != '%') continue;
        size_t i = open + 2;
        char sign = i < L->n && (L->s[i] == '-' || L->s[i] == '+') ? L->s[i] : 0;
        if (sign) i++;
        i = skip_ws(L->s, L->n, i);
        if (L->n - i < 6 || memcmp(L->s + i, "endraw", 6) != 0) continue;
        i = skip_ws(L->s, L->n, i + 6);
        char esign = i < L->n && (L->s[i] == '-' || L->s[i] == '+') ? L->s[i] : 0;
        size_t d = i + (esign ? 1 : 0);
        if (L->n - d < 2 || memcmp(L->s + d, "%}", 2) != 0) continue;
        size_t text_end = open;
        if (sign == '-') {
            text_end = rstrip_end(L->s, body, open);
        } else if (sign != '+') {
            size_t l_pos = open;
            while (l_pos > body && L->s[l_pos - 1] != '\n') l_pos--;
            bool only_ws = l_pos < open && l_pos > body;
            for (size_t k = l_pos; k < open && only_ws; k++) only_ws = is_ws(L->s[k]);
            if (only_ws) text_end = l_pos;
        }
        if (lx_text(L, body, text_end, body_line, body_col)) return -1;
        *strip_after = esign == '-';
        *trim_newline = esign == 0;
        lx_advance(L, d + 2);
        return 0;
    }
    return jerr(L->c, NIB_ERR_FORMAT, line, col, "unclosed 'raw' block (no matching endraw)");
}

static int normalise(jctx *c, const char *src, size_t n, char **out, size_t *n_out) {
    char *d = jalloc(c, n + 1);
    if (!d) return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (src[i] == '\r') {
            d[k++] = '\n';
            if (i + 1 < n && src[i + 1] == '\n') i++;
        } else {
            d[k++] = src[i];
        }
    }
    if (k > 0 && d[k - 1] == '\n') k--;
    d[k] = 0;
    *out = d;
    *n_out = k;
    return 0;
}

int jinja_lex(jctx *c, const char *src, size_t n, jtok **out, int *n_out) {
    lexer L = {0};
    L.c = c;
    char *norm;
    if (normalise(c, src, n, &norm, &L.n)) return -1;
    L.s = norm;
    L.line = 1;
    L.col = 1;
    bool line_starting = true;   /* jinja2: the previous token ended a line */
    for (;;) {
        size_t text_start = L.pos;
        int text_line = L.line, text_col = L.col;
        /* the next tag opener */
        size_t open = L.pos;
        char kind = 0;
        while (open + 1 < L.n) {
            const char *b = memchr(L.s + open, '{', L.n - open - 1);
            if (!b) break;
            open = (size_t)(b - L.s);
            if (L.s[open + 1] == '{' || L.s[open + 1] == '%' || L.s[open + 1] == '#') {
                kind = L.s[open + 1];
                break;
            }
            open++;
        }
        if (!kind) {
            if (lx_text(&L, text_start, L.n, text_line, text_col)) return -1;
            lx_advance(&L, L.n);
            break;
        }
        char sign = open + 2 < L.n && (L.s[open + 2] == '-' || L.s[open + 2] == '+') ? L.s[open + 2] : 0;
        size_t text_end = open;
        if (sign == '-') {
            text_end = rstrip_end(L.s, text_start, open);
        } else if (sign != '+' && kind != '{') {
            /* lstrip_blocks: drop the spaces between the line start and the tag */
            size_t l_pos = open;
            while (l_pos > text_start && L.s[l_pos - 1] != '\n') l_pos--;
            bool at_line_start = l_pos > text_start || line_starting;
            bool only_ws = l_pos < open;
            for (size_t i = l_pos; i < open && only_ws; i++) only_ws = is_ws(L.s[i]);
            if (at_line_start && only_ws) text_end = l_pos;
        }
        if (lx_text(&L, text_start, text_end, text_line, text_col)) return -1;
        lx_advance(&L, open);
        int tag_line = L.line, tag_col = L.col;
        lx_advance(&L, open + 2 + (sign ? 1 : 0));
        bool strip_after = false, trim_newline = false;
        if (kind == '#') {
            size_t e = L.pos;
            while (e + 1 < L.n && !(L.s[e] == '#' && L.s[e + 1] == '}')) e++;
            if (e + 1 >= L.n) return jerr(c, NIB_ERR_FORMAT, tag_line, tag_col, "unclosed comment (no matching '#}')");
            /* jinja2 matches "-#}" and "+#}" as the closer; a sign right after
             * "{#" cannot also end it */
            char before = e > L.pos ? L.s[e - 1] : 0;
            strip_after = before == '-';
            trim_newline = before != '-' && before != '+';
            lx_advance(&L, e + 2);
        } else if (kind == '%' && lx_is_raw(&L, &strip_after)) {
            if (lx_raw(&L, tag_line, tag_col, &strip_after, &trim_newline)) return -1;
        } else {
            jtok *t = lx_push(&L, kind == '%' ? JT_BLOCK_BEGIN : JT_VAR_BEGIN, tag_line, tag_col);
            if (!t) return -1;
            if (lx_tag(&L, kind == '%', tag_line, tag_col, &strip_after, &trim_newline)) return -1;
        }
        if (strip_after) lx_advance(&L, skip_ws(L.s, L.n, L.pos));
        else if (trim_newline && L.pos < L.n && L.s[L.pos] == '\n') lx_advance(&L, L.pos + 1);
        line_starting = L.pos > 0 && L.s[L.pos - 1] == '\n';
    }
    jtok *t = lx_push(&L, JT_EOF, L.line, L.col);
    if (!t) return -1;
    *out = L.toks;
    *n_out = L.n_toks;
    return 0;
}
