/* Values of the Jinja subset: the arena they live in, the error recorder, and
 * the Python semantics chat templates rely on: truthiness, ==, <, str(),
 * repr(), json.dumps(), float repr. Each mirrors CPython's rule so that the
 * output is byte-identical to transformers' rendering with jinja2. */
#include "chat/jinja.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors --------------------------------------------------------------- */

int jerr(jctx *c, nib_status st, int line, int col, const char *fmt, ...) {
    if (c->failed) return -1;
    c->failed = true;
    c->status = st;
    if (c->err) {
        char msg[sizeof c->err->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        if (line > 0)
            nib_error_set(c->err, st, "chat template: %s at %d:%d", msg, line, col);
        else
            nib_error_set(c->err, st, "chat template: %s", msg);
    }
    return -1;
}

int jerr_nomem(jctx *c) {
    return jerr(c, NIB_ERR_NOMEM, 0, 0, "out of memory (arena limit %zu MiB)", c->arena.limit_bytes >> 20);
}

/* ---- arena ---------------------------------------------------------------- */

struct jarena_block {
    jarena_block *next;
    size_t used, cap;
    max_align_t data[];   /* aligned for any value we store */
};

enum { JARENA_BLOCK_BYTES = 64 * 1024 };

void *jalloc(jctx *c, size_t n) {
    jarena *a = &c->arena;
    const size_t align = sizeof(max_align_t);
    if (n > SIZE_MAX / 2) { jerr_nomem(c); return NULL; }
    n = (n + align - 1) / align * align;
    if (n == 0) n = align;
    jarena_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > JARENA_BLOCK_BYTES ? n : JARENA_BLOCK_BYTES;
        if (a->used_bytes + cap > a->limit_bytes) { jerr_nomem(c); return NULL; }
        b = malloc(sizeof *b + cap);
        if (!b) { jerr_nomem(c); return NULL; }
        b->used = 0;
        b->cap = cap;
        b->next = a->head;
        a->head = b;
        a->used_bytes += cap;
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

void *jalloc_array(jctx *c, size_t n, size_t size) {
    uint64_t bytes;
    if (!nib_mul_u64(n, size, &bytes) || bytes > SIZE_MAX / 2) { jerr_nomem(c); return NULL; }
    return jalloc(c, (size_t)bytes);
}

void jarena_free(jarena *a) {
    jarena_block *b = a->head;
    while (b) {
        jarena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->used_bytes = 0;
}

char *jstrdup(jctx *c, const char *p, size_t n) {
    char *s = jalloc(c, n + 1);
    if (!s) return NULL;
    if (n) memcpy(s, p, n);
    s[n] = 0;
    return s;
}

int jbuf_put(jctx *c, jbuf *b, const char *p, size_t n) {
    if (n == 0) return 0;
    if (b->cap - b->n < n) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->n < n) {
            if (cap > SIZE_MAX / 4) return jerr_nomem(c);
            cap *= 2;
        }
        char *np = jalloc(c, cap);
        if (!np) return -1;
        if (b->n) memcpy(np, b->p, b->n);
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
    return 0;
}

int jbuf_puts(jctx *c, jbuf *b, const char *s) { return jbuf_put(c, b, s, strlen(s)); }
int jbuf_putc(jctx *c, jbuf *b, char ch) { return jbuf_put(c, b, &ch, 1); }

/* ---- strings -------------------------------------------------------------- */

jv jv_cstr(const char *s) { return jv_strn(s, strlen(s)); }

bool jstr_eq(jstr a, const char *lit) {
    size_t n = strlen(lit);
    return a.n == n && (n == 0 || memcmp(a.p, lit, n) == 0);  /* an empty jstr's p may be NULL */
}

/* Python strings are sequences of code points; nib's are UTF-8 bytes. Invalid
 * UTF-8 (which Python would have refused to decode) counts a byte each. */
size_t utf8_next(const char *p, size_t n, size_t i) {
    unsigned char b = (unsigned char)p[i];
    size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
    if (i + len > n) return i + 1;
    for (size_t k = 1; k < len; k++)
        if (((unsigned char)p[i + k] & 0xC0) != 0x80) return i + 1;
    return i + len;
}

size_t utf8_len(const char *p, size_t n) {
    size_t cnt = 0;
    for (size_t i = 0; i < n; i = utf8_next(p, n, i)) cnt++;
    return cnt;
}

static uint32_t utf8_decode_at(const char *p, size_t n, size_t i, size_t *len) {
    size_t e = utf8_next(p, n, i);
    const unsigned char *u = (const unsigned char *)p + i;
    *len = e - i;
    switch (e - i) {
    case 2: return ((uint32_t)(u[0] & 0x1F) << 6) | (u[1] & 0x3F);
    case 3: return ((uint32_t)(u[0] & 0x0F) << 12) | ((uint32_t)(u[1] & 0x3F) << 6) | (u[2] & 0x3F);
    case 4:
        return ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3F) << 12) | ((uint32_t)(u[2] & 0x3F) << 6) |
               (u[3] & 0x3F);
    default: return u[0] < 0x80 ? u[0] : 0xFFFD;
    }
}

/* str.isspace(): the code points CPython's strip()/split() remove. */
bool py_isspace_at(const char *p, size_t n, size_t i, size_t *len) {
    uint32_t cp = utf8_decode_at(p, n, i, len);
    if (*len == 1 && (unsigned char)p[i] >= 0x80) return false;
    switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D:
    case 0x1C: case 0x1D: case 0x1E: case 0x1F: case 0x20:
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

/* ---- containers ----------------------------------------------------------- */

const char *jv_kind_name(jv_kind k) {
    switch (k) {
    case JV_UNDEF: return "Undefined";
    case JV_NONE: return "NoneType";
    case JV_BOOL: return "bool";
    case JV_INT: return "int";
    case JV_FLOAT: return "float";
    case JV_STR: return "str";
    case JV_LIST: return "list";
    case JV_DICT: return "dict";
    case JV_NS: return "Namespace";
    case JV_LOOP: return "LoopContext";
    case JV_FUNC: return "function";
    case JV_MACRO: return "Macro";
    }
    return "?";
}

jv *jv_list_new(jctx *c, jv *out, size_t cap) {
    jlist *l = jalloc(c, sizeof *l);
    if (!l) return NULL;
    if (cap) {
        l->v = jalloc_array(c, cap, sizeof(jv));
        if (!l->v) return NULL;
        l->cap = cap;
    }
    out->kind = JV_LIST;
    out->u.list = l;
    return out;
}

int jlist_push(jctx *c, jlist *l, jv v) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        jv *nv = jalloc_array(c, cap, sizeof(jv));
        if (!nv) return -1;
        if (l->n) memcpy(nv, l->v, l->n * sizeof(jv));
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
    return 0;
}

int jv_dict_new(jctx *c, jv *out) {
    jdict *d = jalloc(c, sizeof *d);
    if (!d) return -1;
    out->kind = JV_DICT;
    out->u.dict = d;
    return 0;
}

/* Linear search: chat messages have a handful of keys, and a hash table
 * would cost more than it saves at that size. */
static bool jdict_find(const jdict *d, jv key, size_t *at) {
    for (size_t i = 0; i < d->n; i++)
        if (jv_equal(d->keys[i], key)) { *at = i; return true; }
    return false;
}

int jdict_set(jctx *c, jdict *d, jv key, jv val) {
    size_t at;
    if (jdict_find(d, key, &at)) { d->vals[at] = val; return 0; }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        jv *nk = jalloc_array(c, cap, sizeof(jv)), *nv = jalloc_array(c, cap, sizeof(jv));
        if (!nk || !nv) return -1;
        if (d->n) {
            memcpy(nk, d->keys, d->n * sizeof(jv));
            memcpy(nv, d->vals, d->n * sizeof(jv));
        }
        d->keys = nk;
        d->vals = nv;
        d->cap = cap;
    }
    d->keys[d->n] = key;
    d->vals[d->n] = val;
    d->n++;
    return 0;
}

bool jdict_get(const jdict *d, jv key, jv *out) {
    size_t at;
    if (!jdict_find(d, key, &at)) return false;
    *out = d->vals[at];
    return true;
}

bool jdict_get_str(const jdict *d, const char *key, size_t n, jv *out) {
    return jdict_get(d, jv_strn(key, n), out);
}

/* ---- truth, equality, order ------------------------------------------------ */

bool jv_truthy(jv v) {
    switch (v.kind) {
    case JV_UNDEF:
    case JV_NONE: return false;
    case JV_BOOL: return v.u.b;
    case JV_INT: return v.u.i != 0;
    case JV_FLOAT: return v.u.f != 0.0;
    case JV_STR: return v.u.s.n != 0;
    case JV_LIST: return v.u.list->n != 0;
    case JV_DICT: return v.u.dict->n != 0;
    default: return true;
    }
}

bool jv_is_number(jv v) { return v.kind == JV_BOOL || v.kind == JV_INT || v.kind == JV_FLOAT; }

double jv_as_double(jv v) {
    return v.kind == JV_FLOAT ? v.u.f : v.kind == JV_INT ? (double)v.u.i : v.kind == JV_BOOL ? (double)v.u.b : 0.0;
}

static int64_t jv_as_int(jv v) { return v.kind == JV_BOOL ? (int64_t)v.u.b : v.u.i; }

/* Recursion here is bounded by the nesting of the values, which templates
 * can build deeper than the AST (a namespace list wrapped once per loop
 * iteration); past JINJA_MAX_DEPTH two values compare unequal. */
static bool jv_equal_d(jv a, jv b, int depth) {
    if (depth > JINJA_MAX_DEPTH) return false;
    if (jv_is_number(a) && jv_is_number(b)) {
        if (a.kind == JV_FLOAT || b.kind == JV_FLOAT) return jv_as_double(a) == jv_as_double(b);
        return jv_as_int(a) == jv_as_int(b);
    }
    if (a.kind != b.kind) return false;
    switch (a.kind) {
    case JV_UNDEF:
    case JV_NONE: return true;
    case JV_STR: return a.u.s.n == b.u.s.n && (a.u.s.n == 0 || memcmp(a.u.s.p, b.u.s.p, a.u.s.n) == 0);
    case JV_LIST:
        if (a.u.list->is_tuple != b.u.list->is_tuple || a.u.list->n != b.u.list->n) return false;
        for (size_t i = 0; i < a.u.list->n; i++)
            if (!jv_equal_d(a.u.list->v[i], b.u.list->v[i], depth + 1)) return false;
        return true;
    case JV_DICT:
        if (a.u.dict->n != b.u.dict->n) return false;
        for (size_t i = 0; i < a.u.dict->n; i++) {
            jv bv;
            if (!jdict_get(b.u.dict, a.u.dict->keys[i], &bv) || !jv_equal_d(a.u.dict->vals[i], bv, depth + 1))
                return false;
        }
        return true;
    case JV_NS: return a.u.dict == b.u.dict;
    case JV_LOOP: return a.u.loop == b.u.loop;
    case JV_FUNC: return a.u.func == b.u.func;
    case JV_MACRO: return a.u.macro == b.u.macro;
    default: return false;
    }
}

bool jv_equal(jv a, jv b) { return jv_equal_d(a, b, 0); }

static int jv_compare_d(jctx *c, int line, int col, jv a, jv b, int *out, int depth) {
    if (depth > JINJA_MAX_DEPTH) return jerr(c, NIB_ERR_FORMAT, line, col, "values nested too deeply to compare");
    if (jv_is_number(a) && jv_is_number(b)) {
        if (a.kind == JV_FLOAT || b.kind == JV_FLOAT) {
            double x = jv_as_double(a), y = jv_as_double(b);
            *out = x < y ? -1 : x > y ? 1 : 0;
        } else {
            int64_t x = jv_as_int(a), y = jv_as_int(b);
            *out = x < y ? -1 : x > y ? 1 : 0;
        }
        return 0;
    }
    if (a.kind == JV_STR && b.kind == JV_STR) {
        /* byte order of UTF-8 is code point order, which is Python's order */
        size_t n = a.u.s.n < b.u.s.n ? a.u.s.n : b.u.s.n;
        int r = n ? memcmp(a.u.s.p, b.u.s.p, n) : 0;
        if (r == 0) r = a.u.s.n < b.u.s.n ? -1 : a.u.s.n > b.u.s.n ? 1 : 0;
        *out = r < 0 ? -1 : r > 0;
        return 0;
    }
    if (a.kind == JV_LIST && b.kind == JV_LIST && a.u.list->is_tuple == b.u.list->is_tuple) {
        size_t n = a.u.list->n < b.u.list->n ? a.u.list->n : b.u.list->n;
        for (size_t i = 0; i < n; i++) {
            if (jv_equal(a.u.list->v[i], b.u.list->v[i])) continue;
            return jv_compare_d(c, line, col, a.u.list->v[i], b.u.list->v[i], out, depth + 1);
        }
        *out = a.u.list->n < b.u.list->n ? -1 : a.u.list->n > b.u.list->n ? 1 : 0;
        return 0;
    }
    if (a.kind == JV_UNDEF || b.kind == JV_UNDEF) {
        jstr nm = a.kind == JV_UNDEF ? a.u.s : b.u.s;
        return jerr(c, NIB_ERR_FORMAT, line, col, "'%.*s' is undefined", (int)nm.n, nm.p);
    }
    return jerr(c, NIB_ERR_FORMAT, line, col, "'<' not supported between instances of '%s' and '%s'",
                jv_kind_name(a.kind), jv_kind_name(b.kind));
}

int jv_compare(jctx *c, int line, int col, jv a, jv b, int *out) { return jv_compare_d(c, line, col, a, b, out, 0); }

/* ---- formatting ------------------------------------------------------------ */

/* repr(float): the shortest digits that read back to the same double, in
 * fixed notation when the decimal exponent is in [-4, 16), else scientific
 * with a signed two-digit-minimum exponent (CPython's float_repr_style
 * 'short'). */
void jfmt_float(double d, char out[40]) {
    if (isnan(d)) { strcpy(out, "nan"); return; }
    if (isinf(d)) { strcpy(out, d < 0 ? "-inf" : "inf"); return; }
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
        if (strtod(tmp, NULL) == d) break;
    }
    /* tmp: [-]D[.DDD]e[+-]XX */
    char digits[24];
    int nd = 0, exp10 = 0;
    bool neg = false;
    const char *p = tmp;
    if (*p == '-') { neg = true; p++; }
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && nd < 20) digits[nd++] = *p;
    if (*p == 'e') exp10 = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;   /* %e pads with zeros */
    digits[nd] = 0;
    char *o = out;
    if (neg) *o++ = '-';
    if (exp10 >= -4 && exp10 < 16) {
        int decpt = exp10 + 1;
        if (decpt <= 0) {
            *o++ = '0';
            *o++ = '.';
            for (int k = 0; k < -decpt; k++) *o++ = '0';
            for (int k = 0; k < nd; k++) *o++ = digits[k];
        } else if (decpt >= nd) {
            for (int k = 0; k < nd; k++) *o++ = digits[k];
            for (int k = nd; k < decpt; k++) *o++ = '0';
            *o++ = '.';
            *o++ = '0';
        } else {
            for (int k = 0; k < decpt; k++) *o++ = digits[k];
            *o++ = '.';
            for (int k = decpt; k < nd; k++) *o++ = digits[k];
        }
        *o = 0;
    } else {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            for (int k = 1; k < nd; k++) *o++ = digits[k];
        }
        int ax = exp10 < 0 ? -exp10 : exp10;   /* |exp10| <= 324 for doubles */
        snprintf(o, 16, "e%c%02d", exp10 < 0 ? '-' : '+', ax % 1000);
    }
}

/* repr(str): single quotes unless the text has ' and no ", escapes for the
 * quote, backslash, and non-printable characters (ASCII controls, DEL and the
 * Latin-1 controls/NBSP/soft hyphen, which CPython also escapes). */
static int write_py_repr_str(jctx *c, jbuf *b, jstr s) {
    bool has_sq = memchr(s.p, '\'', s.n) != NULL, has_dq = memchr(s.p, '"', s.n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    if (jbuf_putc(c, b, q)) return -1;
    size_t i = 0;
    while (i < s.n) {
        size_t len;
        uint32_t cp = utf8_decode_at(s.p, s.n, i, &len);
        char esc[12];
        const char *e = NULL;
        if (cp == (uint32_t)q) e = q == '\'' ? "\\'" : "\\\"";
        else if (cp == '\\') e = "\\\\";
        else if (cp == '\n') e = "\\n";
        else if (cp == '\r') e = "\\r";
        else if (cp == '\t') e = "\\t";
        else if (len == 1 && (unsigned char)s.p[i] >= 0x80) {
            snprintf(esc, sizeof esc, "\\x%02x", (unsigned char)s.p[i]);   /* invalid UTF-8 byte */
            e = esc;
        } else if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) {
            snprintf(esc, sizeof esc, "\\x%02x", (unsigned)cp);
            e = esc;
        }
        if (e ? jbuf_puts(c, b, e) : jbuf_put(c, b, s.p + i, len)) return -1;
        i += len;
    }
    return jbuf_putc(c, b, q);
}

static int write_repr_d(jctx *c, jbuf *b, jv v, int line, int col, int depth, bool top_str);

static int write_str_d(jctx *c, jbuf *b, jv v, int line, int col, int depth) {
    return write_repr_d(c, b, v, line, col, depth, true);
}

/* str() and repr() differ only for strings at the top level: str('a') is a,
 * repr('a') and str(['a']) quote it. */
static int write_repr_d(jctx *c, jbuf *b, jv v, int line, int col, int depth, bool top_str) {
    if (depth > JINJA_MAX_DEPTH) return jerr(c, NIB_ERR_FORMAT, line, col, "values nested too deeply to print");
    char num[80];
    switch (v.kind) {
    case JV_UNDEF: return 0;
    case JV_NONE: return jbuf_puts(c, b, "None");
    case JV_BOOL: return jbuf_puts(c, b, v.u.b ? "True" : "False");
    case JV_INT:
        snprintf(num, sizeof num, "%lld", (long long)v.u.i);
        return jbuf_puts(c, b, num);
    case JV_FLOAT:
        jfmt_float(v.u.f, num);
        return jbuf_puts(c, b, num);
    case JV_STR: return top_str ? jbuf_put(c, b, v.u.s.p, v.u.s.n) : write_py_repr_str(c, b, v.u.s);
    case JV_LIST: {
        const jlist *l = v.u.list;
        if (l->is_range) {
            if (l->range_step == 1)
                snprintf(num, sizeof num, "range(%lld, %lld", (long long)l->range_start, (long long)l->range_stop);
            else
                snprintf(num, sizeof num, "range(%lld, %lld, %lld", (long long)l->range_start, (long long)l->range_stop,
                         (long long)l->range_step);
            return jbuf_puts(c, b, num) || jbuf_putc(c, b, ')') ? -1 : 0;
        }
        if (jbuf_putc(c, b, l->is_tuple ? '(' : '[')) return -1;
        for (size_t i = 0; i < l->n; i++) {
            if (i && jbuf_puts(c, b, ", ")) return -1;
            if (write_repr_d(c, b, l->v[i], line, col, depth + 1, false)) return -1;
        }
        if (l->is_tuple && l->n == 1 && jbuf_putc(c, b, ',')) return -1;
        return jbuf_putc(c, b, l->is_tuple ? ')' : ']');
    }
    case JV_NS:
    case JV_DICT: {
        /* a namespace prints its attributes like a dict, inside <Namespace ...> */
        if (v.kind == JV_NS && jbuf_puts(c, b, "<Namespace ")) return -1;
        const jdict *d = v.u.dict;
        if (jbuf_putc(c, b, '{')) return -1;
        for (size_t i = 0; i < d->n; i++) {
            if (i && jbuf_puts(c, b, ", ")) return -1;
            if (write_repr_d(c, b, d->keys[i], line, col, depth + 1, false)) return -1;
            if (jbuf_puts(c, b, ": ")) return -1;
            if (write_repr_d(c, b, d->vals[i], line, col, depth + 1, false)) return -1;
        }
        if (jbuf_putc(c, b, '}')) return -1;
        return v.kind == JV_NS ? jbuf_putc(c, b, '>') : 0;
    }
    case JV_LOOP: return jbuf_puts(c, b, "<LoopContext>");
    case JV_FUNC:
        return jbuf_puts(c, b, "<function ") || jbuf_puts(c, b, v.u.func->name) || jbuf_putc(c, b, '>') ? -1 : 0;
    case JV_MACRO:
        return jbuf_puts(c, b, "<Macro '") || jbuf_put(c, b, v.u.macro->def->targets[0].p, v.u.macro->def->targets[0].n) ||
                       jbuf_puts(c, b, "'>")
                   ? -1
                   : 0;
    }
    return 0;
}

int jv_write_str(jctx *c, jbuf *b, jv v, int line, int col) { return write_str_d(c, b, v, line, col, 0); }

int jv_to_str(jctx *c, jv v, int line, int col, jv *out) {
    if (v.kind == JV_STR) { *out = v; return 0; }
    jbuf b = {0};
    if (jv_write_str(c, &b, v, line, col)) return -1;
    *out = jv_strn(b.p ? b.p : "", b.n);
    return 0;
}

/* json.dumps string: escape ", \, and control characters; with
 * ensure_ascii=False everything else, DEL and non-ASCII included, is kept. */
static int write_json_str(jctx *c, jbuf *b, jstr s) {
    if (jbuf_putc(c, b, '"')) return -1;
    size_t start = 0;
    for (size_t i = 0; i < s.n; i++) {
        unsigned char ch = (unsigned char)s.p[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\') continue;
        if (jbuf_put(c, b, s.p + start, i - start)) return -1;
        char esc[8];
        switch (ch) {
        case '"': strcpy(esc, "\\\""); break;
        case '\\': strcpy(esc, "\\\\"); break;
        case '\n': strcpy(esc, "\\n"); break;
        case '\r': strcpy(esc, "\\r"); break;
        case '\t': strcpy(esc, "\\t"); break;
        case '\b': strcpy(esc, "\\b"); break;
        case '\f': strcpy(esc, "\\f"); break;
        default: snprintf(esc, sizeof esc, "\\u%04x", ch); break;
        }
        if (jbuf_puts(c, b, esc)) return -1;
        start = i + 1;
    }
    if (jbuf_put(c, b, s.p + start, s.n - start)) return -1;
    return jbuf_putc(c, b, '"');
}

static int json_newline(jctx *c, jbuf *b, int indent, int level) {
    if (jbuf_putc(c, b, '\n')) return -1;
    for (int k = 0; k < indent * level; k++)
        if (jbuf_putc(c, b, ' ')) return -1;
    return 0;
}

static int write_json_d(jctx *c, jbuf *b, jv v, int indent, int line, int col, int depth) {
    if (depth > JINJA_MAX_DEPTH) return jerr(c, NIB_ERR_FORMAT, line, col, "values nested too deeply for tojson");
    char num[40];
    /* json.dumps separators: (', ', ': ') without indent, (',', ': ') with */
    const char *item_sep = indent >= 0 ? "," : ", ";
    switch (v.kind) {
    case JV_NONE: return jbuf_puts(c, b, "null");
    case JV_BOOL: return jbuf_puts(c, b, v.u.b ? "true" : "false");
    case JV_INT:
        snprintf(num, sizeof num, "%lld", (long long)v.u.i);
        return jbuf_puts(c, b, num);
    case JV_FLOAT:
        if (isnan(v.u.f)) return jbuf_puts(c, b, "NaN");
        if (isinf(v.u.f)) return jbuf_puts(c, b, v.u.f < 0 ? "-Infinity" : "Infinity");
        jfmt_float(v.u.f, num);
        return jbuf_puts(c, b, num);
    case JV_STR: return write_json_str(c, b, v.u.s);
    case JV_LIST: {
        const jlist *l = v.u.list;
        if (l->is_range) return jerr(c, NIB_ERR_FORMAT, line, col, "tojson: Object of type range is not JSON serializable");
        if (l->n == 0) return jbuf_puts(c, b, "[]");
        if (jbuf_putc(c, b, '[')) return -1;
        for (size_t i = 0; i < l->n; i++) {
            if (i && jbuf_puts(c, b, item_sep)) return -1;
            if (indent >= 0 && json_newline(c, b, indent, depth + 1)) return -1;
            if (write_json_d(c, b, l->v[i], indent, line, col, depth + 1)) return -1;
        }
        if (indent >= 0 && json_newline(c, b, indent, depth)) return -1;
        return jbuf_putc(c, b, ']');
    }
    case JV_DICT: {
        const jdict *d = v.u.dict;
        if (d->n == 0) return jbuf_puts(c, b, "{}");
        if (jbuf_putc(c, b, '{')) return -1;
        for (size_t i = 0; i < d->n; i++) {
            if (i && jbuf_puts(c, b, item_sep)) return -1;
            if (indent >= 0 && json_newline(c, b, indent, depth + 1)) return -1;
            jv k = d->keys[i];
            /* json.dumps turns numeric, bool and None keys into strings */
            if (k.kind == JV_STR) {
                if (write_json_str(c, b, k.u.s)) return -1;
            } else if (k.kind == JV_INT || k.kind == JV_FLOAT || k.kind == JV_BOOL || k.kind == JV_NONE) {
                if (jbuf_putc(c, b, '"') || write_json_d(c, b, k, -1, line, col, depth + 1) || jbuf_putc(c, b, '"'))
                    return -1;
            } else {
                return jerr(c, NIB_ERR_FORMAT, line, col, "tojson: keys must be str, int, float, bool or None, not %s",
                            jv_kind_name(k.kind));
            }
            if (jbuf_puts(c, b, ": ")) return -1;
            if (write_json_d(c, b, d->vals[i], indent, line, col, depth + 1)) return -1;
        }
        if (indent >= 0 && json_newline(c, b, indent, depth)) return -1;
        return jbuf_putc(c, b, '}');
    }
    default:
        return jerr(c, NIB_ERR_FORMAT, line, col, "tojson: Object of type %s is not JSON serializable",
                    jv_kind_name(v.kind));
    }
}

int jv_write_json(jctx *c, jbuf *b, jv v, int indent, int line, int col) {
    return write_json_d(c, b, v, indent, line, col, 0);
}
