/* Parser: tokens -> AST (jbody of jstmt, expressions as jexpr trees).
 *
 * The expression grammar follows jinja2's parser (jinja2/parser.py) level by
 * level, because precedence decides output: `'a' + x | trim` trims x alone,
 * `not a in b` is `not (a in b)`, `-x | abs` is `(-x) | abs`.
 *
 *   expr     := or ['if' or ['else' expr]]
 *   or       := and ('or' and)*
 *   and      := not ('and' not)*
 *   not      := 'not' not | compare
 *   compare  := math1 (('=='|'!='|'<'|'<='|'>'|'>='|'in'|'not' 'in') math1)*
 *   math1    := concat (('+'|'-') concat)*
 *   concat   := math2 ('~' math2)*
 *   math2    := pow (('*'|'/'|'//'|'%') pow)*
 *   pow      := unary ('**' unary)*
 *   unary    := ('-'|'+') unary | primary postfix* (filter | test | call)*
 *
 * Filters and tests are looked up here, so an unknown one is an error at
 * parse time naming it and its position, as jinja2 reports it at compile
 * time. Methods depend on the value's type and are looked up when called. */
#include "chat/jinja.h"

#include <string.h>

typedef struct parser {
    jctx *c;
    const jtok *t;
    int n, i;
    int loop_depth;     /* break/continue are only valid inside a for */
    /* Unknown filters and tests. jinja2 reports them at compile time,
     * except inside an {% if %} (test and branches) or a conditional
     * expression, where they only fail if evaluated; templates rely on that
     * for branches a model never takes. So each is listed, marked soft when
     * inside such a construct, and the first hard one fails the parse. */
    int soft_depth;
    jexpr **unknown;
    int n_unknown, cap_unknown;
} parser;

static const jtok *cur(parser *P) { return &P->t[P->i]; }
static const jtok *peek(parser *P, int k) { return &P->t[P->i + k < P->n ? P->i + k : P->n - 1]; }
static void next(parser *P) { if (P->i < P->n - 1) P->i++; }

/* First-character checks up front: the parser asks these constantly. */
static bool is_op(const jtok *t, const char *op) { return t->kind == JT_OP && t->s.p[0] == op[0] && jstr_eq(t->s, op); }
static bool is_name(const jtok *t, const char *nm) { return t->kind == JT_NAME && t->s.p[0] == nm[0] && jstr_eq(t->s, nm); }

static const char *tok_desc(const jtok *t, char buf[64]) {
    switch (t->kind) {
    case JT_EOF: return "end of template";
    case JT_TEXT: return "template text";
    case JT_VAR_BEGIN: return "'{{'";
    case JT_VAR_END: return "'}}'";
    case JT_BLOCK_BEGIN: return "'{%'";
    case JT_BLOCK_END: return "'%}'";
    case JT_STRING: return "string literal";
    case JT_INT: return "integer";
    case JT_FLOAT: return "float";
    default: break;
    }
    size_t n = t->s.n < 40 ? t->s.n : 40;
    memcpy(buf, "'", 1);
    memcpy(buf + 1, t->s.p, n);
    memcpy(buf + 1 + n, "'", 2);
    return buf;
}

static int fail_at(parser *P, const jtok *t, const char *what) {
    char buf[64];
    return jerr(P->c, NIB_ERR_FORMAT, t->line, t->col, "expected %s, got %s", what, tok_desc(t, buf));
}

static int expect_op(parser *P, const char *op) {
    if (!is_op(cur(P), op)) {
        char what[16];
        what[0] = '\'';
        strcpy(what + 1, op);
        strcat(what, "'");
        return fail_at(P, cur(P), what);
    }
    next(P);
    return 0;
}

static int expect_block_end(parser *P) {
    if (cur(P)->kind != JT_BLOCK_END) return fail_at(P, cur(P), "end of statement '%}'");
    next(P);
    return 0;
}

static jexpr *new_expr(parser *P, jx_kind kind, const jtok *at) {
    jexpr *e = jalloc(P->c, sizeof *e);
    if (!e) return NULL;
    e->kind = kind;
    e->line = at->line;
    e->col = at->col;
    return e;
}

/* Growable array of expression pointers in the arena. */
typedef struct exprvec {
    jexpr **v;
    int n, cap;
} exprvec;

static int ev_push(parser *P, exprvec *v, jexpr *e) {
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 4;
        jexpr **nv = jalloc_array(P->c, (size_t)cap, sizeof *nv);
        if (!nv) return -1;
        if (v->n) memcpy(nv, v->v, (size_t)v->n * sizeof *nv);
        v->v = nv;
        v->cap = cap;
    }
    v->v[v->n++] = e;
    return 0;
}

static jexpr *parse_expr(parser *P, bool with_cond);
static jexpr *parse_unary(parser *P, bool with_filter);
static jexpr *parse_primary(parser *P);
static jexpr *parse_postfix(parser *P, jexpr *e);

/* Recursion guard: every nested expression level passes through here. */
static bool enter(parser *P, const jtok *at) {
    if (++P->c->depth > JINJA_MAX_DEPTH) {
        jerr(P->c, NIB_ERR_FORMAT, at->line, at->col, "template nested too deeply (limit %d)", JINJA_MAX_DEPTH);
        return false;
    }
    return true;
}
static void leave(parser *P) { P->c->depth--; }

/* (args...) of a call, filter or test: positional then keyword arguments. */
static int parse_call_args(parser *P, jexpr *e) {
    if (expect_op(P, "(")) return -1;
    exprvec pos = {0}, kwv = {0};
    jstr *kwn = NULL;
    int kw_cap = 0;
    while (!is_op(cur(P), ")")) {
        if (pos.n + kwv.n > 0 && expect_op(P, ",")) return -1;
        if (is_op(cur(P), ")")) break;   /* trailing comma */
        if (cur(P)->kind == JT_OP && (jstr_eq(cur(P)->s, "*") || jstr_eq(cur(P)->s, "**")))
            return jerr(P->c, NIB_ERR_UNSUPPORTED, cur(P)->line, cur(P)->col, "unsupported: *args/**kwargs in calls");
        if (cur(P)->kind == JT_NAME && is_op(peek(P, 1), "=")) {
            if (kwv.n == kw_cap) {
                int cap = kw_cap ? kw_cap * 2 : 4;
                jstr *nk = jalloc_array(P->c, (size_t)cap, sizeof *nk);
                if (!nk) return -1;
                if (kwv.n) memcpy(nk, kwn, (size_t)kwv.n * sizeof *nk);
                kwn = nk;
                kw_cap = cap;
            }
            kwn[kwv.n] = cur(P)->s;
            next(P);
            next(P);
            jexpr *v = parse_expr(P, true);
            if (!v || ev_push(P, &kwv, v)) return -1;
        } else {
            if (kwv.n) return jerr(P->c, NIB_ERR_FORMAT, cur(P)->line, cur(P)->col, "positional argument after keyword argument");
            jexpr *v = parse_expr(P, true);
            if (!v || ev_push(P, &pos, v)) return -1;
        }
        if (cur(P)->kind == JT_EOF) return fail_at(P, cur(P), "')'");
    }
    next(P);
    e->items = pos.v;
    e->n_items = pos.n;
    e->kw_names = kwn;
    e->kw_vals = kwv.v;
    e->n_kw = kwv.n;
    return 0;
}

/* A dotted name after '|' or 'is' (jinja2 allows `|a.b` for namespaced filters). */
static int parse_dotted_name(parser *P, jstr *out) {
    if (cur(P)->kind != JT_NAME) return fail_at(P, cur(P), "a name");
    const jtok *first = cur(P);
    const char *end = first->s.p + first->s.n;
    next(P);
    while (is_op(cur(P), ".") && peek(P, 1)->kind == JT_NAME) {
        next(P);
        end = cur(P)->s.p + cur(P)->s.n;
        next(P);
    }
    out->p = first->s.p;
    out->n = (size_t)(end - first->s.p);
    return 0;
}

static int note_unknown(parser *P, jexpr *e) {
    if (P->n_unknown == P->cap_unknown) {
        int cap = P->cap_unknown ? P->cap_unknown * 2 : 8;
        jexpr **nv = jalloc_array(P->c, (size_t)cap, sizeof *nv);
        if (!nv) return -1;
        if (P->n_unknown) memcpy(nv, P->unknown, (size_t)P->n_unknown * sizeof *nv);
        P->unknown = nv;
        P->cap_unknown = cap;
    }
    e->soft = P->soft_depth > 0;
    P->unknown[P->n_unknown++] = e;
    return 0;
}

static jexpr *parse_filter(parser *P, jexpr *arg) {
    const jtok *at = cur(P);   /* the filter name */
    jexpr *e = new_expr(P, JX_FILTER, at);
    if (!e || parse_dotted_name(P, &e->name)) return NULL;
    e->filter = jinja_filter_find(e->name);
    if (!e->filter && note_unknown(P, e)) return NULL;
    e->a = arg;
    if (is_op(cur(P), "(") && parse_call_args(P, e)) return NULL;
    return e;
}

static jexpr *parse_test(parser *P, jexpr *arg) {
    jexpr *e = new_expr(P, JX_TEST, cur(P));
    if (!e) return NULL;
    next(P);   /* 'is' */
    if (is_name(cur(P), "not")) { e->negate = true; next(P); }
    const jtok *at = cur(P);
    if (parse_dotted_name(P, &e->name)) return NULL;
    e->line = at->line;   /* errors about the test point at its name */
    e->col = at->col;
    e->test = jinja_test_find(e->name);
    if (!e->test && note_unknown(P, e)) return NULL;
    e->a = arg;
    const jtok *t = cur(P);
    if (is_op(t, "(")) {
        if (parse_call_args(P, e)) return NULL;
    } else if ((t->kind == JT_NAME || t->kind == JT_STRING || t->kind == JT_INT || t->kind == JT_FLOAT ||
                is_op(t, "[") || is_op(t, "{")) &&
               !is_name(t, "else") && !is_name(t, "or") && !is_name(t, "and")) {
        /* jinja2: `x is divisibleby 3`, one argument without parentheses */
        if (is_name(t, "is")) {
            jerr(P->c, NIB_ERR_FORMAT, t->line, t->col, "you cannot chain multiple tests with 'is'");
            return NULL;
        }
        jexpr *a1 = parse_primary(P);
        if (!a1) return NULL;
        a1 = parse_postfix(P, a1);
        if (!a1) return NULL;
        e->items = jalloc(P->c, sizeof *e->items);
        if (!e->items) return NULL;
        e->items[0] = a1;
        e->n_items = 1;
    }
    return e;
}

/* Subscript after '[': an index or a slice [start:stop:step]. */
static jexpr *parse_subscript(parser *P, jexpr *obj, const jtok *at) {
    jexpr *parts[3] = {NULL, NULL, NULL};
    int n_colons = 0;
    if (!is_op(cur(P), ":")) {
        parts[0] = parse_expr(P, true);
        if (!parts[0]) return NULL;
    }
    while (is_op(cur(P), ":") && n_colons < 2) {
        next(P);
        n_colons++;
        if (!is_op(cur(P), ":") && !is_op(cur(P), "]")) {
            parts[n_colons] = parse_expr(P, true);
            if (!parts[n_colons]) return NULL;
        }
    }
    if (expect_op(P, "]")) return NULL;
    jexpr *e = new_expr(P, n_colons ? JX_SLICE : JX_ITEM, at);
    if (!e) return NULL;
    e->a = obj;
    e->b = parts[0];
    if (n_colons) {
        e->items = jalloc_array(P->c, 2, sizeof *e->items);
        if (!e->items) return NULL;
        e->items[0] = parts[1];
        e->items[1] = parts[2];
    }
    return e;
}

static jexpr *parse_postfix(parser *P, jexpr *e) {
    for (;;) {
        const jtok *t = cur(P);
        if (is_op(t, ".")) {
            next(P);
            const jtok *nt = cur(P);
            if (nt->kind == JT_NAME) {
                jexpr *a = new_expr(P, JX_ATTR, nt);
                if (!a) return NULL;
                a->a = e;
                a->name = nt->s;
                next(P);
                e = a;
            } else if (nt->kind == JT_INT) {
                /* x.0 is x[0] in jinja2 */
                jexpr *a = new_expr(P, JX_ITEM, nt);
                jexpr *k = new_expr(P, JX_LIT, nt);
                if (!a || !k) return NULL;
                k->lit = jv_int(nt->i);
                a->a = e;
                a->b = k;
                next(P);
                e = a;
            } else {
                fail_at(P, nt, "an attribute name");
                return NULL;
            }
        } else if (is_op(t, "[")) {
            next(P);
            e = parse_subscript(P, e, t);
            if (!e) return NULL;
        } else if (is_op(t, "(")) {
            jexpr *call = new_expr(P, JX_CALL, t);
            if (!call) return NULL;
            call->a = e;
            if (parse_call_args(P, call)) return NULL;
            e = call;
        } else {
            return e;
        }
    }
}

/* Parenthesised expression or tuple; [list]; {dict}. */
static jexpr *parse_seq(parser *P, const jtok *open, const char *close, jx_kind kind) {
    exprvec items = {0};
    bool had_comma = false;
    while (!is_op(cur(P), close)) {
        if (items.n > 0) {
            if (expect_op(P, ",")) return NULL;
            had_comma = true;
            if (is_op(cur(P), close)) break;
        }
        jexpr *k = parse_expr(P, true);
        if (!k || ev_push(P, &items, k)) return NULL;
        if (kind == JX_DICT) {
            if (expect_op(P, ":")) return NULL;
            jexpr *v = parse_expr(P, true);
            if (!v || ev_push(P, &items, v)) return NULL;
        }
        if (cur(P)->kind == JT_EOF) { fail_at(P, cur(P), close); return NULL; }
    }
    next(P);
    if (kind == JX_TUPLE && items.n == 1 && !had_comma) return items.v[0];   /* (x) is x */
    jexpr *e = new_expr(P, kind, open);
    if (!e) return NULL;
    e->items = items.v;
    e->n_items = items.n;
    return e;
}

static jexpr *parse_primary(parser *P) {
    const jtok *t = cur(P);
    jexpr *e;
    switch (t->kind) {
    case JT_NAME:
        e = new_expr(P, JX_LIT, t);
        if (!e) return NULL;
        if (jstr_eq(t->s, "true") || jstr_eq(t->s, "True")) e->lit = jv_bool(true);
        else if (jstr_eq(t->s, "false") || jstr_eq(t->s, "False")) e->lit = jv_bool(false);
        else if (jstr_eq(t->s, "none") || jstr_eq(t->s, "None")) e->lit = jv_none();
        else {
            e->kind = JX_NAME;
            e->name = t->s;
        }
        next(P);
        return e;
    case JT_STRING: {
        e = new_expr(P, JX_LIT, t);
        if (!e) return NULL;
        e->lit = jv_strn(t->s.p, t->s.n);
        next(P);
        /* adjacent literals concatenate: 'a' "b" is 'ab' */
        if (cur(P)->kind == JT_STRING) {
            jbuf b = {0};
            if (jbuf_put(P->c, &b, t->s.p, t->s.n)) return NULL;
            while (cur(P)->kind == JT_STRING) {
                if (jbuf_put(P->c, &b, cur(P)->s.p, cur(P)->s.n)) return NULL;
                next(P);
            }
            e->lit = jv_strn(b.p ? b.p : "", b.n);
        }
        return e;
    }
    case JT_INT:
    case JT_FLOAT:
        e = new_expr(P, JX_LIT, t);
        if (!e) return NULL;
        e->lit = t->kind == JT_INT ? jv_int(t->i) : jv_float(t->f);
        next(P);
        return e;
    case JT_OP:
        if (is_op(t, "(")) { next(P); return parse_seq(P, t, ")", JX_TUPLE); }
        if (is_op(t, "[")) { next(P); return parse_seq(P, t, "]", JX_LIST); }
        if (is_op(t, "{")) { next(P); return parse_seq(P, t, "}", JX_DICT); }
        break;
    default: break;
    }
    fail_at(P, t, "an expression");
    return NULL;
}

static jexpr *parse_unary(parser *P, bool with_filter) {
    const jtok *t = cur(P);
    if (!enter(P, t)) return NULL;
    jexpr *e;
    if (is_op(t, "-") || is_op(t, "+")) {
        next(P);
        jexpr *operand = parse_unary(P, false);
        if (!operand) return NULL;
        e = new_expr(P, is_op(t, "-") ? JX_NEG : JX_POS, t);
        if (!e) return NULL;
        e->a = operand;
    } else {
        e = parse_primary(P);
        if (!e) return NULL;
    }
    e = parse_postfix(P, e);
    if (!e) return NULL;
    while (with_filter) {
        if (is_op(cur(P), "|")) {
            next(P);
            e = parse_filter(P, e);
        } else if (is_name(cur(P), "is")) {
            e = parse_test(P, e);
        } else if (is_op(cur(P), "(")) {
            jexpr *call = new_expr(P, JX_CALL, cur(P));
            if (!call) return NULL;
            call->a = e;
            if (parse_call_args(P, call)) return NULL;
            e = call;
        } else {
            break;
        }
        if (!e) return NULL;
    }
    leave(P);
    return e;
}

static jexpr *new_bin(parser *P, jx_kind kind, jop op, const jtok *at, jexpr *l, jexpr *r) {
    jexpr *e = new_expr(P, kind, at);
    if (!e) return NULL;
    e->op = op;
    e->a = l;
    e->b = r;
    return e;
}

static jexpr *parse_pow(parser *P) {
    jexpr *l = parse_unary(P, true);
    while (l && is_op(cur(P), "**")) {
        const jtok *at = cur(P);
        next(P);
        jexpr *r = parse_unary(P, true);
        if (!r) return NULL;
        l = new_bin(P, JX_BIN, JOP_POW, at, l, r);
    }
    return l;
}

static jexpr *parse_math2(parser *P) {
    jexpr *l = parse_pow(P);
    for (;;) {
        if (!l) return NULL;
        const jtok *at = cur(P);
        jop op;
        if (is_op(at, "*")) op = JOP_MUL;
        else if (is_op(at, "/")) op = JOP_DIV;
        else if (is_op(at, "//")) op = JOP_FLOORDIV;
        else if (is_op(at, "%")) op = JOP_MOD;
        else return l;
        next(P);
        jexpr *r = parse_pow(P);
        if (!r) return NULL;
        l = new_bin(P, JX_BIN, op, at, l, r);
    }
}

static jexpr *parse_concat(parser *P) {
    jexpr *l = parse_math2(P);
    while (l && is_op(cur(P), "~")) {
        const jtok *at = cur(P);
        next(P);
        jexpr *r = parse_math2(P);
        if (!r) return NULL;
        l = new_bin(P, JX_BIN, JOP_CONCAT, at, l, r);
    }
    return l;
}

static jexpr *parse_math1(parser *P) {
    jexpr *l = parse_concat(P);
    for (;;) {
        if (!l) return NULL;
        const jtok *at = cur(P);
        jop op;
        if (is_op(at, "+")) op = JOP_ADD;
        else if (is_op(at, "-")) op = JOP_SUB;
        else return l;
        next(P);
        jexpr *r = parse_concat(P);
        if (!r) return NULL;
        l = new_bin(P, JX_BIN, op, at, l, r);
    }
}

/* Chained comparisons (a < b < c) become (a < b) and (b < c); operands are
 * side-effect free, so evaluating b twice is invisible. */
static jexpr *parse_compare(parser *P) {
    jexpr *l = parse_math1(P);
    if (!l) return NULL;
    jexpr *result = NULL, *prev = l;
    for (;;) {
        const jtok *at = cur(P);
        jop op;
        int skip = 1;
        if (is_op(at, "==")) op = JOP_EQ;
        else if (is_op(at, "!=")) op = JOP_NE;
        else if (is_op(at, "<")) op = JOP_LT;
        else if (is_op(at, "<=")) op = JOP_LE;
        else if (is_op(at, ">")) op = JOP_GT;
        else if (is_op(at, ">=")) op = JOP_GE;
        else if (is_name(at, "in")) op = JOP_IN;
        else if (is_name(at, "not") && is_name(peek(P, 1), "in")) { op = JOP_NOTIN; skip = 2; }
        else break;
        for (int k = 0; k < skip; k++) next(P);
        jexpr *r = parse_math1(P);
        if (!r) return NULL;
        jexpr *cmp = new_bin(P, JX_BIN, op, at, prev, r);
        if (!cmp) return NULL;
        result = result ? new_bin(P, JX_AND, JOP_EQ, at, result, cmp) : cmp;
        if (!result) return NULL;
        prev = r;
    }
    return result ? result : l;
}

static jexpr *parse_not(parser *P) {
    const jtok *t = cur(P);
    if (is_name(t, "not")) {
        if (!enter(P, t)) return NULL;
        next(P);
        jexpr *operand = parse_not(P);
        if (!operand) return NULL;
        leave(P);
        jexpr *e = new_expr(P, JX_NOT, t);
        if (!e) return NULL;
        e->a = operand;
        return e;
    }
    return parse_compare(P);
}

static jexpr *parse_and(parser *P) {
    jexpr *l = parse_not(P);
    while (l && is_name(cur(P), "and")) {
        const jtok *at = cur(P);
        next(P);
        jexpr *r = parse_not(P);
        if (!r) return NULL;
        l = new_bin(P, JX_AND, JOP_EQ, at, l, r);
    }
    return l;
}

static jexpr *parse_or(parser *P) {
    jexpr *l = parse_and(P);
    while (l && is_name(cur(P), "or")) {
        const jtok *at = cur(P);
        next(P);
        jexpr *r = parse_and(P);
        if (!r) return NULL;
        l = new_bin(P, JX_OR, JOP_EQ, at, l, r);
    }
    return l;
}

/* with_cond=false where a trailing `if` belongs to the statement
 * (`for x in xs if cond`). */
static jexpr *parse_expr(parser *P, bool with_cond) {
    const jtok *start = cur(P);
    if (!enter(P, start)) return NULL;
    int first_unknown = P->n_unknown;
    jexpr *e = parse_or(P);
    while (e && with_cond && is_name(cur(P), "if")) {
        const jtok *at = cur(P);
        /* a conditional expression is soft as a whole, the value before `if` included */
        for (int k = first_unknown; k < P->n_unknown; k++) P->unknown[k]->soft = true;
        P->soft_depth++;
        next(P);
        jexpr *cond = parse_or(P);
        if (!cond) return NULL;
        jexpr *other = NULL;
        if (is_name(cur(P), "else")) {
            next(P);
            other = parse_expr(P, true);
            if (!other) return NULL;
        }
        jexpr *ce = new_expr(P, JX_COND, at);
        if (!ce) return NULL;
        ce->a = cond;
        ce->b = e;
        ce->c = other;
        e = ce;
        P->soft_depth--;
    }
    if (!e) return NULL;
    leave(P);
    return e;
}

/* An expression, or an unparenthesised tuple `a, b` where statements allow it. */
static jexpr *parse_tuple(parser *P, bool with_cond) {
    const jtok *at = cur(P);
    jexpr *first = parse_expr(P, with_cond);
    if (!first || !is_op(cur(P), ",")) return first;
    exprvec items = {0};
    if (ev_push(P, &items, first)) return NULL;
    while (is_op(cur(P), ",")) {
        next(P);
        if (cur(P)->kind == JT_BLOCK_END || cur(P)->kind == JT_VAR_END) break;
        jexpr *e = parse_expr(P, with_cond);
        if (!e || ev_push(P, &items, e)) return NULL;
    }
    jexpr *t = new_expr(P, JX_TUPLE, at);
    if (!t) return NULL;
    t->items = items.v;
    t->n_items = items.n;
    return t;
}

/* ---- statements ----------------------------------------------------------- */

static jstmt *new_stmt(parser *P, js_kind kind, const jtok *at) {
    jstmt *s = jalloc(P->c, sizeof *s);
    if (!s) return NULL;
    s->kind = kind;
    s->line = at->line;
    s->col = at->col;
    return s;
}

static int body_push(parser *P, jbody *b, jstmt *s) {
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 8;
        jstmt **nv = jalloc_array(P->c, (size_t)cap, sizeof *nv);
        if (!nv) return -1;
        if (b->n) memcpy(nv, b->v, (size_t)b->n * sizeof *nv);
        b->v = nv;
        b->cap = cap;
    }
    b->v[b->n++] = s;
    return 0;
}

/* Target names: `x`, `a, b`, `(a, b)`. */
static int parse_targets(parser *P, jstmt *s) {
    bool paren = is_op(cur(P), "(");
    if (paren) next(P);
    int cap = 0;
    for (;;) {
        if (cur(P)->kind != JT_NAME) return fail_at(P, cur(P), "a variable name");
        if (s->n_targets == cap) {
            cap = cap ? cap * 2 : 2;
            jstr *nt = jalloc_array(P->c, (size_t)cap, sizeof *nt);
            if (!nt) return -1;
            if (s->n_targets) memcpy(nt, s->targets, (size_t)s->n_targets * sizeof *nt);
            s->targets = nt;
        }
        s->targets[s->n_targets++] = cur(P)->s;
        next(P);
        if (!is_op(cur(P), ",")) break;
        next(P);
    }
    if (paren && expect_op(P, ")")) return -1;
    return 0;
}

static int parse_body(parser *P, jbody *out, const char *const *ends, const jtok *opener, const char *opener_name);

/* The name of the tag at a JT_BLOCK_BEGIN: the token after it. */
static const jtok *tag_name(parser *P) { return peek(P, 1); }

static int parse_if(parser *P, jstmt *s) {
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    const jtok *opener = &P->t[P->i - 1];   /* the {% of this tag, for "unclosed" errors */
    exprvec conds = {0};
    int cap = 0;
    next(P);   /* 'if' */
    P->soft_depth++;
    for (;;) {
        /* jinja2: the test of an if takes no `a if b else c` of its own */
        jexpr *cond = parse_tuple(P, false);
        if (!cond || ev_push(P, &conds, cond) || expect_block_end(P)) return -1;
        if (conds.n > cap) {
            cap = cap ? cap * 2 : 2;
            jbody *nb = jalloc_array(P->c, (size_t)cap, sizeof *nb);
            if (!nb) return -1;
            if (conds.n > 1) memcpy(nb, s->bodies, (size_t)(conds.n - 1) * sizeof *nb);
            s->bodies = nb;
        }
        if (parse_body(P, &s->bodies[conds.n - 1], ends, opener, "if")) return -1;
        /* at {% elif/else/endif */
        const jtok *tn = tag_name(P);
        next(P);
        next(P);
        if (jstr_eq(tn->s, "elif")) continue;
        if (jstr_eq(tn->s, "else")) {
            static const char *const ends2[] = {"endif", NULL};
            if (expect_block_end(P) || parse_body(P, &s->else_body, ends2, opener, "if")) return -1;
            next(P);
            next(P);
        }
        break;
    }
    s->conds = conds.v;
    s->n_branches = conds.n;
    P->soft_depth--;
    return expect_block_end(P);
}

static int parse_for(parser *P, jstmt *s) {
    static const char *const ends[] = {"else", "endfor", NULL};
    const jtok *opener = &P->t[P->i - 1];   /* the {% of this tag, for "unclosed" errors */
    next(P);   /* 'for' */
    if (parse_targets(P, s)) return -1;
    if (!is_name(cur(P), "in")) return fail_at(P, cur(P), "'in'");
    next(P);
    s->expr = parse_tuple(P, false);
    if (!s->expr) return -1;
    /* jinja2 compiles the loop body, its filter and its else body each in a
     * new frame, which is not soft even inside an if */
    int soft = P->soft_depth;
    P->soft_depth = 0;
    if (is_name(cur(P), "if")) {
        next(P);
        s->filter = parse_expr(P, true);
        if (!s->filter) return -1;
    }
    if (is_name(cur(P), "recursive"))
        return jerr(P->c, NIB_ERR_UNSUPPORTED, cur(P)->line, cur(P)->col, "unsupported: recursive for loops");
    if (expect_block_end(P)) return -1;
    P->loop_depth++;
    if (parse_body(P, &s->body, ends, opener, "for")) return -1;
    P->loop_depth--;
    const jtok *tn = tag_name(P);
    next(P);
    next(P);
    if (jstr_eq(tn->s, "else")) {
        static const char *const ends2[] = {"endfor", NULL};
        /* break/continue in the else body refer to an outer loop */
        if (expect_block_end(P) || parse_body(P, &s->else_body, ends2, opener, "for")) return -1;
        next(P);
        next(P);
    }
    P->soft_depth = soft;
    return expect_block_end(P);
}

static int parse_set(parser *P, jstmt *s) {
    const jtok *opener = &P->t[P->i - 1];   /* the {% of this tag, for "unclosed" errors */
    next(P);   /* 'set' */
    if (cur(P)->kind == JT_NAME && is_op(peek(P, 1), ".") && peek(P, 2)->kind == JT_NAME) {
        /* {% set ns.attr = value %} */
        s->targets = jalloc(P->c, sizeof *s->targets);
        if (!s->targets) return -1;
        s->targets[0] = cur(P)->s;
        s->n_targets = 1;
        s->attr = peek(P, 2)->s;
        s->is_attr = true;
        next(P);
        next(P);
        next(P);
    } else if (parse_targets(P, s)) {
        return -1;
    }
    if (cur(P)->kind == JT_BLOCK_END && s->n_targets == 1 && !s->is_attr) {
        /* {% set x %}...{% endset %} captures its rendered body */
        static const char *const ends[] = {"endset", NULL};
        s->kind = JS_SET_BLOCK;
        next(P);
        int soft = P->soft_depth;   /* a new frame in jinja2: not soft */
        P->soft_depth = 0;
        if (parse_body(P, &s->body, ends, opener, "set")) return -1;
        P->soft_depth = soft;
        next(P);
        next(P);
        return expect_block_end(P);
    }
    if (is_op(cur(P), "|"))
        return jerr(P->c, NIB_ERR_UNSUPPORTED, cur(P)->line, cur(P)->col, "unsupported: filtered block set");
    if (expect_op(P, "=")) return -1;
    s->expr = parse_tuple(P, true);
    if (!s->expr) return -1;
    return expect_block_end(P);
}

static int parse_macro(parser *P, jstmt *s) {
    static const char *const ends[] = {"endmacro", NULL};
    const jtok *opener = &P->t[P->i - 1];   /* the {% of this tag, for "unclosed" errors */
    next(P);   /* 'macro' */
    if (cur(P)->kind != JT_NAME) return fail_at(P, cur(P), "a macro name");
    s->targets = jalloc(P->c, sizeof *s->targets);
    if (!s->targets) return -1;
    s->targets[0] = cur(P)->s;
    s->n_targets = 1;
    next(P);
    if (expect_op(P, "(")) return -1;
    int cap = 0;
    while (!is_op(cur(P), ")")) {
        if (s->n_params > 0 && expect_op(P, ",")) return -1;
        if (cur(P)->kind != JT_NAME) return fail_at(P, cur(P), "a parameter name");
        if (s->n_params == cap) {
            cap = cap ? cap * 2 : 4;
            jstr *np = jalloc_array(P->c, (size_t)cap, sizeof *np);
            jexpr **nd = jalloc_array(P->c, (size_t)cap, sizeof *nd);
            if (!np || !nd) return -1;
            if (s->n_params) {
                memcpy(np, s->params, (size_t)s->n_params * sizeof *np);
                memcpy(nd, s->defaults, (size_t)s->n_params * sizeof *nd);
            }
            s->params = np;
            s->defaults = nd;
        }
        s->params[s->n_params] = cur(P)->s;
        s->defaults[s->n_params] = NULL;
        next(P);
        if (is_op(cur(P), "=")) {
            next(P);
            s->defaults[s->n_params] = parse_expr(P, true);
            if (!s->defaults[s->n_params]) return -1;
        }
        s->n_params++;
        if (cur(P)->kind == JT_EOF || cur(P)->kind == JT_BLOCK_END) return fail_at(P, cur(P), "')'");
    }
    next(P);
    if (expect_block_end(P)) return -1;
    int saved = P->loop_depth, soft = P->soft_depth;
    P->loop_depth = 0;   /* a macro body is not inside the caller's loop */
    P->soft_depth = 0;   /* nor in a soft (conditional) frame */
    if (parse_body(P, &s->body, ends, opener, "macro")) return -1;
    P->loop_depth = saved;
    P->soft_depth = soft;
    next(P);
    next(P);
    if (cur(P)->kind == JT_NAME) next(P);   /* {% endmacro name %} */
    return expect_block_end(P);
}

/* One {% ... %} statement, at its JT_BLOCK_BEGIN. */
static int parse_statement(parser *P, jbody *out) {
    const jtok *begin = cur(P);
    const jtok *tn = tag_name(P);
    if (tn->kind != JT_NAME) return fail_at(P, tn, "a statement name");
    next(P);   /* now at the tag name */
    jstmt *s;
    if (jstr_eq(tn->s, "if")) {
        if (!(s = new_stmt(P, JS_IF, begin)) || parse_if(P, s)) return -1;
    } else if (jstr_eq(tn->s, "for")) {
        if (!(s = new_stmt(P, JS_FOR, begin)) || parse_for(P, s)) return -1;
    } else if (jstr_eq(tn->s, "set")) {
        if (!(s = new_stmt(P, JS_SET, begin)) || parse_set(P, s)) return -1;
    } else if (jstr_eq(tn->s, "macro")) {
        if (!(s = new_stmt(P, JS_MACRO, begin)) || parse_macro(P, s)) return -1;
    } else if (jstr_eq(tn->s, "break") || jstr_eq(tn->s, "continue")) {
        if (P->loop_depth == 0)
            return jerr(P->c, NIB_ERR_FORMAT, tn->line, tn->col, "'%.*s' outside of a loop", (int)tn->s.n, tn->s.p);
        if (!(s = new_stmt(P, jstr_eq(tn->s, "break") ? JS_BREAK : JS_CONTINUE, begin))) return -1;
        next(P);
        if (expect_block_end(P)) return -1;
    } else if (jstr_eq(tn->s, "generation")) {
        /* transformers' AssistantTracker: marks assistant text, renders it as is */
        static const char *const ends[] = {"endgeneration", NULL};
        if (!(s = new_stmt(P, JS_BLOCK, begin))) return -1;
        next(P);
        int soft = P->soft_depth;   /* a call block: a new, not soft, frame */
        P->soft_depth = 0;
        if (expect_block_end(P) || parse_body(P, &s->body, ends, begin, "generation")) return -1;
        P->soft_depth = soft;
        next(P);
        next(P);
        if (expect_block_end(P)) return -1;
    } else {
        static const char *const known_ends[] = {"endif", "endfor", "elif", "else", "endset", "endmacro",
                                                 "endgeneration", NULL};
        for (int k = 0; known_ends[k]; k++)
            if (jstr_eq(tn->s, known_ends[k]))
                return jerr(P->c, NIB_ERR_FORMAT, tn->line, tn->col, "unexpected '%.*s' (no open block it closes)",
                            (int)tn->s.n, tn->s.p);
        return jerr(P->c, NIB_ERR_UNSUPPORTED, tn->line, tn->col, "unknown tag '%.*s'", (int)tn->s.n, tn->s.p);
    }
    return body_push(P, out, s);
}

/* Statements until a {% tag %} named in ends (left unconsumed, at its
 * JT_BLOCK_BEGIN) or the end of the template (an error when ends is set). */
static int parse_body(parser *P, jbody *out, const char *const *ends, const jtok *opener, const char *opener_name) {
    if (!enter(P, cur(P))) return -1;
    for (;;) {
        const jtok *t = cur(P);
        if (t->kind == JT_EOF) {
            if (ends) {
                int last = 0;   /* the closing tag is listed last: elif, else, endif */
                while (ends[last + 1]) last++;
                return jerr(P->c, NIB_ERR_FORMAT, opener->line, opener->col,
                            "unclosed '%s' (no '%s' before the end of the template)", opener_name, ends[last]);
            }
            break;
        }
        if (t->kind == JT_TEXT) {
            jstmt *s = new_stmt(P, JS_TEXT, t);
            if (!s) return -1;
            s->text = t->s;
            if (body_push(P, out, s)) return -1;
            next(P);
        } else if (t->kind == JT_VAR_BEGIN) {
            jstmt *s = new_stmt(P, JS_OUTPUT, t);
            if (!s) return -1;
            next(P);
            s->expr = parse_tuple(P, true);
            if (!s->expr) return -1;
            if (cur(P)->kind != JT_VAR_END) return fail_at(P, cur(P), "end of print statement '}}'");
            next(P);
            if (body_push(P, out, s)) return -1;
        } else if (t->kind == JT_BLOCK_BEGIN) {
            const jtok *tn = tag_name(P);
            if (ends && tn->kind == JT_NAME)
                for (int k = 0; ends[k]; k++)
                    if (jstr_eq(tn->s, ends[k])) goto done;
            if (parse_statement(P, out)) return -1;
        } else {
            return fail_at(P, t, "template text or a tag");
        }
    }
done:
    leave(P);
    return 0;
}

int jinja_parse(jctx *c, const jtok *toks, int n_toks, jbody *out) {
    parser P = {0};
    P.c = c;
    P.t = toks;
    P.n = n_toks;
    memset(out, 0, sizeof *out);
    if (parse_body(&P, out, NULL, NULL, NULL)) return -1;
    for (int k = 0; k < P.n_unknown; k++) {
        const jexpr *e = P.unknown[k];
        if (!e->soft)
            return jerr(c, NIB_ERR_UNSUPPORTED, e->line, e->col, "unknown %s '%.*s'", e->kind == JX_FILTER ? "filter" : "test",
                        (int)e->name.n, e->name.p);
    }
    return 0;
}
