/* Evaluator: walks the AST, writing template text and printed expressions to
 * an output buffer.
 *
 * Scoping follows jinja2: each for-loop iteration and each macro call gets a
 * fresh scope whose parent is the enclosing one, so a `{% set %}` inside a
 * loop is gone at the next iteration and after the loop (which is why
 * templates carry state across iterations in a namespace()). `if` blocks do
 * not open a scope.
 *
 * Undefined follows jinja2's default Undefined: it prints as "", is false,
 * iterates as empty and has length 0, but attribute/item access on it, or
 * arithmetic with it, is an error naming the missing variable. */
#include "chat/jinja.h"

#include <math.h>
#include <string.h>

enum { FLOW_BREAK = 1, FLOW_CONTINUE = 2 };

/* Expression evaluation recurses once per AST level; a long left-leaning
 * chain (a + b + c + ...) is deep without being nested, so it has its own,
 * larger bound than parse nesting. */
enum { JINJA_MAX_EVAL_DEPTH = 500 };

/* ---- scopes ---------------------------------------------------------------- */

jscope *jscope_new(jctx *c, jscope *parent) {
    jscope *s = jalloc(c, sizeof *s);
    if (s) s->parent = parent;
    return s;
}

static bool name_eq(jstr a, jstr b) { return a.n == b.n && memcmp(a.p, b.p, a.n) == 0; }

int jscope_set(jctx *c, jscope *s, jstr name, jv v) {
    for (size_t i = 0; i < s->n; i++)
        if (name_eq(s->names[i], name)) { s->vals[i] = v; return 0; }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        jstr *nn = jalloc_array(c, cap, sizeof *nn);
        jv *nv = jalloc_array(c, cap, sizeof *nv);
        if (!nn || !nv) return -1;
        if (s->n) {
            memcpy(nn, s->names, s->n * sizeof *nn);
            memcpy(nv, s->vals, s->n * sizeof *nv);
        }
        s->names = nn;
        s->vals = nv;
        s->cap = cap;
    }
    s->names[s->n] = name;
    s->vals[s->n] = v;
    s->n++;
    return 0;
}

bool jscope_get(const jscope *s, jstr name, jv *out) {
    for (; s; s = s->parent)
        for (size_t i = s->n; i-- > 0;)
            if (name_eq(s->names[i], name)) { *out = s->vals[i]; return true; }
    return false;
}

/* ---- arguments ------------------------------------------------------------- */

bool jargs_get(const jargs *a, int i, const char *name, jv *out) {
    if (i >= 0 && i < a->n_pos) { *out = a->pos[i]; return true; }
    if (name)
        for (int k = 0; k < a->n_kw; k++)
            if (jstr_eq(a->kw_names[k], name)) { *out = a->kw[k]; return true; }
    return false;
}

int jargs_check(jctx *c, const jexpr *at, const char *what, const jargs *a, int max_pos, const char *const *kw) {
    if (a->n_pos > max_pos)
        return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "%s takes at most %d positional argument%s (%d given)", what,
                    max_pos, max_pos == 1 ? "" : "s", a->n_pos);
    for (int k = 0; k < a->n_kw; k++) {
        bool known = false;
        for (int j = 0; kw && kw[j] && !known; j++) known = jstr_eq(a->kw_names[k], kw[j]);
        if (!known)
            return jerr(c, NIB_ERR_UNSUPPORTED, at->line, at->col, "%s: unsupported keyword argument '%.*s'", what,
                        (int)a->kw_names[k].n, a->kw_names[k].p);
    }
    return 0;
}

/* ---- helpers ---------------------------------------------------------------- */

static int undefined_error(jctx *c, const jexpr *at, jv v) {
    if (v.u.s.n) return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "'%.*s' is undefined", (int)v.u.s.n, v.u.s.p);
    return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "value is undefined");
}

static int eval(jctx *c, const jexpr *e, jscope *s, jv *out);
static int render_body(jctx *c, const jbody *b, jscope *s, jbuf *out);

static int eval_args(jctx *c, const jexpr *e, jscope *s, jargs *a) {
    memset(a, 0, sizeof *a);
    if (e->n_items) {
        a->pos = jalloc_array(c, (size_t)e->n_items, sizeof(jv));
        if (!a->pos) return -1;
        for (int i = 0; i < e->n_items; i++)
            if (eval(c, e->items[i], s, &a->pos[i])) return -1;
        a->n_pos = e->n_items;
    }
    if (e->n_kw) {
        a->kw = jalloc_array(c, (size_t)e->n_kw, sizeof(jv));
        if (!a->kw) return -1;
        for (int i = 0; i < e->n_kw; i++)
            if (eval(c, e->kw_vals[i], s, &a->kw[i])) return -1;
        a->kw_names = e->kw_names;
        a->n_kw = e->n_kw;
    }
    return 0;
}

/* The loop object's attributes (jinja2's LoopContext). */
static bool loop_attr(const jloop *L, jstr name, jv *out) {
    if (jstr_eq(name, "index")) *out = jv_int(L->index0 + 1);
    else if (jstr_eq(name, "index0")) *out = jv_int(L->index0);
    else if (jstr_eq(name, "revindex")) *out = jv_int(L->length - L->index0);
    else if (jstr_eq(name, "revindex0")) *out = jv_int(L->length - L->index0 - 1);
    else if (jstr_eq(name, "first")) *out = jv_bool(L->index0 == 0);
    else if (jstr_eq(name, "last")) *out = jv_bool(L->index0 == L->length - 1);
    else if (jstr_eq(name, "length")) *out = jv_int(L->length);
    else if (jstr_eq(name, "depth")) *out = jv_int(L->depth0 + 1);
    else if (jstr_eq(name, "depth0")) *out = jv_int(L->depth0);
    else if (jstr_eq(name, "previtem")) *out = L->prev;
    else if (jstr_eq(name, "nextitem")) *out = L->next;
    else return false;
    return true;
}

/* obj.name: jinja2 tries the attribute, then the item. Dicts' attributes are
 * their methods, which only make sense called (see eval_call), so here a
 * dict gives its item. */
static int get_attr(jctx *c, const jexpr *at, jv obj, jstr name, jv *out) {
    switch (obj.kind) {
    case JV_UNDEF: return undefined_error(c, at, obj);
    case JV_DICT:
    case JV_NS:
        if (!jdict_get_str(obj.u.dict, name.p, name.n, out)) *out = jv_undef_named(name);
        return 0;
    case JV_LOOP:
        if (!loop_attr(obj.u.loop, name, out)) *out = jv_undef_named(name);
        return 0;
    default:
        *out = jv_undef_named(name);
        return 0;
    }
}

/* Python's index normalisation: negative counts from the end. */
static bool norm_index(int64_t i, size_t n, size_t *out) {
    if (i < 0) i += (int64_t)n;
    if (i < 0 || (uint64_t)i >= n) return false;
    *out = (size_t)i;
    return true;
}

/* Byte offset of code point k in a UTF-8 string. */
static size_t cp_offset(jstr s, size_t k) {
    size_t i = 0;
    while (k-- > 0 && i < s.n) i = utf8_next(s.p, s.n, i);
    return i;
}

static int get_item(jctx *c, const jexpr *at, jv obj, jv key, jv *out) {
    if (obj.kind == JV_UNDEF) return undefined_error(c, at, obj);
    bool int_key = key.kind == JV_INT || key.kind == JV_BOOL;
    int64_t ik = key.kind == JV_BOOL ? key.u.b : key.u.i;
    size_t idx;
    switch (obj.kind) {
    case JV_LIST:
        if (int_key && norm_index(ik, obj.u.list->n, &idx)) { *out = obj.u.list->v[idx]; return 0; }
        break;
    case JV_STR:
        if (int_key) {
            size_t n = utf8_len(obj.u.s.p, obj.u.s.n);
            if (norm_index(ik, n, &idx)) {
                size_t b = cp_offset(obj.u.s, idx);
                *out = jv_strn(obj.u.s.p + b, utf8_next(obj.u.s.p, obj.u.s.n, b) - b);
                return 0;
            }
        }
        break;
    case JV_DICT:
    case JV_NS:
        if (jdict_get(obj.u.dict, key, out)) return 0;
        break;
    case JV_LOOP:
        if (key.kind == JV_STR && loop_attr(obj.u.loop, key.u.s, out)) return 0;
        break;
    default: break;
    }
    *out = key.kind == JV_STR ? jv_undef_named(key.u.s) : jv_undef();
    return 0;
}

/* Python's slice.indices(): clamp start/stop for the step's direction. */
static int slice_indices(jctx *c, const jexpr *at, jv vs[3], int64_t n, int64_t *start, int64_t *stop, int64_t *step) {
    for (int k = 0; k < 3; k++)
        if (vs[k].kind != JV_NONE && vs[k].kind != JV_UNDEF && vs[k].kind != JV_INT && vs[k].kind != JV_BOOL)
            return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "slice indices must be integers or None");
    *step = vs[2].kind == JV_INT ? vs[2].u.i : vs[2].kind == JV_BOOL ? vs[2].u.b : 1;
    if (*step == 0) return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "slice step cannot be zero");
    bool neg = *step < 0;
    int64_t lo = neg ? -1 : 0, hi = neg ? n - 1 : n;
    for (int k = 0; k < 2; k++) {
        int64_t *dst = k == 0 ? start : stop;
        if (vs[k].kind != JV_INT && vs[k].kind != JV_BOOL) {
            *dst = (k == 0) == neg ? hi : lo;
            continue;
        }
        int64_t v = vs[k].kind == JV_BOOL ? vs[k].u.b : vs[k].u.i;
        if (v < 0) {
            v += n;
            if (v < lo) v = lo;
        } else if (v > hi) {
            v = hi;
        }
        *dst = v;
    }
    return 0;
}

static int get_slice(jctx *c, const jexpr *at, jv obj, jv vs[3], jv *out) {
    if (obj.kind == JV_UNDEF) return undefined_error(c, at, obj);
    /* jinja2 compiles x[a:b] to a plain Python subscript, so unlike x[i]
     * a wrong type is an error, not Undefined */
    if (obj.kind == JV_DICT || obj.kind == JV_NS)
        return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "unhashable type: 'slice'");
    if (obj.kind != JV_LIST && obj.kind != JV_STR)
        return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "'%s' object is not subscriptable", jv_kind_name(obj.kind));
    int64_t start, stop, step;
    if (obj.kind == JV_LIST) {
        const jlist *l = obj.u.list;
        if (slice_indices(c, at, vs, (int64_t)l->n, &start, &stop, &step)) return -1;
        if (!jv_list_new(c, out, 0)) return -1;
        out->u.list->is_tuple = l->is_tuple;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
            if (jlist_push(c, out->u.list, l->v[i])) return -1;
        return 0;
    }
    /* strings slice by code point: index the code points first */
    jstr s = obj.u.s;
    size_t n = utf8_len(s.p, s.n);
    size_t *offs = jalloc_array(c, n + 1, sizeof *offs);
    if (!offs) return -1;
    for (size_t i = 0, k = 0; k <= n; k++) {
        offs[k] = i;
        if (i < s.n) i = utf8_next(s.p, s.n, i);
    }
    if (slice_indices(c, at, vs, (int64_t)n, &start, &stop, &step)) return -1;
    if (step == 1) {
        *out = start < stop ? jv_strn(s.p + offs[start], offs[stop] - offs[start]) : jv_strn("", 0);
        return 0;
    }
    jbuf b = {0};
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
        if (jbuf_put(c, &b, s.p + offs[i], offs[i + 1] - offs[i])) return -1;
    *out = jv_strn(b.p ? b.p : "", b.n);
    return 0;
}

/* ---- operators ---------------------------------------------------------------- */

static int type_error(jctx *c, const jexpr *at, const char *op, jv a, jv b) {
    if (a.kind == JV_UNDEF) return undefined_error(c, at, a);
    if (b.kind == JV_UNDEF) return undefined_error(c, at, b);
    return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "unsupported operand type(s) for %s: '%s' and '%s'", op,
                jv_kind_name(a.kind), jv_kind_name(b.kind));
}

static bool is_intlike(jv v) { return v.kind == JV_INT || v.kind == JV_BOOL; }
static int64_t as_int(jv v) { return v.kind == JV_BOOL ? (int64_t)v.u.b : v.u.i; }

/* seq * n for strings and lists, as Python repeats them. */
static int repeat(jctx *c, const jexpr *at, jv seq, int64_t times, jv *out) {
    if (times < 0) times = 0;
    size_t unit = seq.kind == JV_STR ? seq.u.s.n : seq.u.list->n * sizeof(jv);
    if (times > 0 && unit > 0 && (uint64_t)times > JINJA_ARENA_LIMIT_BYTES / unit)
        return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "repetition result too large");
    if (seq.kind == JV_STR) {
        jbuf b = {0};
        for (int64_t k = 0; k < times; k++)
            if (jbuf_put(c, &b, seq.u.s.p, seq.u.s.n)) return -1;
        *out = jv_strn(b.p ? b.p : "", b.n);
        return 0;
    }
    if (!jv_list_new(c, out, 0)) return -1;
    out->u.list->is_tuple = seq.u.list->is_tuple;
    for (int64_t k = 0; k < times; k++)
        for (size_t i = 0; i < seq.u.list->n; i++)
            if (jlist_push(c, out->u.list, seq.u.list->v[i])) return -1;
    return 0;
}

static int arith(jctx *c, const jexpr *at, jop op, jv a, jv b, jv *out) {
    static const char *const names[] = {"+", "-", "*", "/", "//", "%", "**"};
    const char *opname = op <= JOP_POW ? names[op] : "?";
    bool nums = jv_is_number(a) && jv_is_number(b);
    if (nums && is_intlike(a) && is_intlike(b)) {
        int64_t x = as_int(a), y = as_int(b), r;
        switch (op) {
        case JOP_ADD: if (__builtin_add_overflow(x, y, &r)) goto overflow; *out = jv_int(r); return 0;
        case JOP_SUB: if (__builtin_sub_overflow(x, y, &r)) goto overflow; *out = jv_int(r); return 0;
        case JOP_MUL: if (__builtin_mul_overflow(x, y, &r)) goto overflow; *out = jv_int(r); return 0;
        case JOP_DIV:
            if (y == 0) return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "division by zero");
            *out = jv_float((double)x / (double)y);
            return 0;
        case JOP_FLOORDIV:
        case JOP_MOD: {
            if (y == 0) return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "integer division or modulo by zero");
            if (x == INT64_MIN && y == -1) goto overflow;
            int64_t q = x / y, m = x % y;
            if (m != 0 && ((m < 0) != (y < 0))) { q--; m += y; }   /* Python floors */
            *out = jv_int(op == JOP_FLOORDIV ? q : m);
            return 0;
        }
        case JOP_POW:
            if (y >= 0) {
                /* square-and-multiply; once base*base overflows, so would the result */
                int64_t acc = 1, base = x, k = y;
                while (k > 0) {
                    if ((k & 1) && __builtin_mul_overflow(acc, base, &acc)) goto overflow;
                    k >>= 1;
                    if (k > 0 && __builtin_mul_overflow(base, base, &base)) goto overflow;
                }
                *out = jv_int(acc);
                return 0;
            }
            *out = jv_float(pow((double)x, (double)y));
            return 0;
        default: break;
        }
    }
    if (nums) {
        double x = jv_as_double(a), y = jv_as_double(b);
        switch (op) {
        case JOP_ADD: *out = jv_float(x + y); return 0;
        case JOP_SUB: *out = jv_float(x - y); return 0;
        case JOP_MUL: *out = jv_float(x * y); return 0;
        case JOP_DIV:
            if (y == 0) return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "float division by zero");
            *out = jv_float(x / y);
            return 0;
        case JOP_FLOORDIV:
        case JOP_MOD: {
            /* CPython's float_divmod, so signs and rounding match */
            if (y == 0) return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "float division by zero");
            double mod = fmod(x, y), div = (x - mod) / y, fl;
            if (mod != 0) {
                if ((y < 0) != (mod < 0)) { mod += y; div -= 1.0; }
            } else {
                mod = copysign(0.0, y);
            }
            if (div != 0) {
                fl = floor(div);
                if (div - fl > 0.5) fl += 1.0;
            } else {
                fl = copysign(0.0, x / y);
            }
            *out = jv_float(op == JOP_MOD ? mod : fl);
            return 0;
        }
        case JOP_POW: *out = jv_float(pow(x, y)); return 0;
        default: break;
        }
    }
    if (op == JOP_ADD && a.kind == JV_STR && b.kind == JV_STR) {
        jbuf buf = {0};
        if (jbuf_put(c, &buf, a.u.s.p, a.u.s.n) || jbuf_put(c, &buf, b.u.s.p, b.u.s.n)) return -1;
        *out = jv_strn(buf.p ? buf.p : "", buf.n);
        return 0;
    }
    if (op == JOP_ADD && a.kind == JV_LIST && b.kind == JV_LIST && a.u.list->is_tuple == b.u.list->is_tuple) {
        if (!jv_list_new(c, out, a.u.list->n + b.u.list->n)) return -1;
        out->u.list->is_tuple = a.u.list->is_tuple;
        for (size_t i = 0; i < a.u.list->n; i++) out->u.list->v[out->u.list->n++] = a.u.list->v[i];
        for (size_t i = 0; i < b.u.list->n; i++) out->u.list->v[out->u.list->n++] = b.u.list->v[i];
        return 0;
    }
    if (op == JOP_MUL && (a.kind == JV_STR || a.kind == JV_LIST) && is_intlike(b)) return repeat(c, at, a, as_int(b), out);
    if (op == JOP_MUL && (b.kind == JV_STR || b.kind == JV_LIST) && is_intlike(a)) return repeat(c, at, b, as_int(a), out);
    if (op == JOP_MOD && a.kind == JV_STR)
        return jerr(c, NIB_ERR_UNSUPPORTED, at->line, at->col, "unsupported: printf-style string formatting ('%%')");
    if (op == JOP_ADD && a.kind == JV_STR && b.kind != JV_UNDEF)
        return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "can only concatenate str (not \"%s\") to str", jv_kind_name(b.kind));
    return type_error(c, at, opname, a, b);
overflow:
    return jerr(c, NIB_ERR_UNSUPPORTED, at->line, at->col, "integer result of '%s' does not fit in 64 bits", opname);
}

/* `needle in hay` */
static int contains(jctx *c, const jexpr *at, jv hay, jv needle, bool *out) {
    switch (hay.kind) {
    case JV_UNDEF: *out = false; return 0;   /* Undefined iterates as empty */
    case JV_STR:
        if (needle.kind != JV_STR) {
            if (needle.kind == JV_UNDEF) return undefined_error(c, at, needle);
            return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "'in <string>' requires string as left operand, not %s",
                        jv_kind_name(needle.kind));
        }
        if (needle.u.s.n == 0) { *out = true; return 0; }
        *out = false;
        for (size_t i = 0; i + needle.u.s.n <= hay.u.s.n && !*out; i++)
            *out = memcmp(hay.u.s.p + i, needle.u.s.p, needle.u.s.n) == 0;
        return 0;
    case JV_LIST:
        *out = false;
        for (size_t i = 0; i < hay.u.list->n && !*out; i++) *out = jv_equal(hay.u.list->v[i], needle);
        return 0;
    case JV_DICT: {
        jv tmp;
        *out = jdict_get(hay.u.dict, needle, &tmp);
        return 0;
    }
    default:
        return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "argument of type '%s' is not iterable", jv_kind_name(hay.kind));
    }
}

static int binop(jctx *c, const jexpr *e, jv a, jv b, jv *out) {
    int cmp;
    bool r = false;
    switch (e->op) {
    case JOP_EQ: *out = jv_bool(jv_equal(a, b)); return 0;
    case JOP_NE: *out = jv_bool(!jv_equal(a, b)); return 0;
    case JOP_LT: case JOP_LE: case JOP_GT: case JOP_GE:
        if (jv_compare(c, e->line, e->col, a, b, &cmp)) return -1;
        r = e->op == JOP_LT ? cmp < 0 : e->op == JOP_LE ? cmp <= 0 : e->op == JOP_GT ? cmp > 0 : cmp >= 0;
        *out = jv_bool(r);
        return 0;
    case JOP_IN: case JOP_NOTIN:
        if (contains(c, e, b, a, &r)) return -1;
        *out = jv_bool(e->op == JOP_IN ? r : !r);
        return 0;
    case JOP_CONCAT: {
        jbuf buf = {0};
        if (jv_write_str(c, &buf, a, e->line, e->col) || jv_write_str(c, &buf, b, e->line, e->col)) return -1;
        *out = jv_strn(buf.p ? buf.p : "", buf.n);
        return 0;
    }
    default: return arith(c, e, e->op, a, b, out);
    }
}

/* ---- calls -------------------------------------------------------------------- */

static int call_macro(jctx *c, const jexpr *at, const jmacro *m, const jargs *a, jv *out) {
    const jstmt *d = m->def;
    if (c->call_depth >= JINJA_MAX_CALL_DEPTH)
        return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "macro calls nested too deeply (limit %d)", JINJA_MAX_CALL_DEPTH);
    if (a->n_pos > d->n_params)
        return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "macro '%.*s' takes not more than %d argument(s)",
                    (int)d->targets[0].n, d->targets[0].p, d->n_params);
    jscope *s = jscope_new(c, m->scope);
    if (!s) return -1;
    for (int k = 0; k < a->n_kw; k++) {
        bool known = false;
        for (int p = 0; p < d->n_params && !known; p++) known = name_eq(d->params[p], a->kw_names[k]);
        if (!known)
            return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "macro '%.*s' has no parameter '%.*s'", (int)d->targets[0].n,
                        d->targets[0].p, (int)a->kw_names[k].n, a->kw_names[k].p);
    }
    for (int p = 0; p < d->n_params; p++) {
        jv v;
        bool given = p < a->n_pos ? (v = a->pos[p], true) : false;
        for (int k = 0; k < a->n_kw && !given; k++)
            if (name_eq(d->params[p], a->kw_names[k])) { v = a->kw[k]; given = true; }
        if (!given) {
            if (d->defaults[p]) {
                if (eval(c, d->defaults[p], s, &v)) return -1;
            } else {
                v = jv_undef_named(d->params[p]);
            }
        }
        if (jscope_set(c, s, d->params[p], v)) return -1;
    }
    c->call_depth++;
    jbuf b = {0};
    int rc = render_body(c, &d->body, s, &b);
    c->call_depth--;
    if (rc < 0) return -1;
    *out = jv_strn(b.p ? b.p : "", b.n);
    return 0;
}

int jinja_call_value(jctx *c, const jexpr *at, jv fn, const jargs *a, jv *out) {
    if (fn.kind == JV_FUNC) return fn.u.func->fn(c, at, a, out);
    if (fn.kind == JV_MACRO) return call_macro(c, at, fn.u.macro, a, out);
    if (fn.kind == JV_UNDEF) return undefined_error(c, at, fn);
    return jerr(c, NIB_ERR_FORMAT, at->line, at->col, "'%s' object is not callable", jv_kind_name(fn.kind));
}

static int eval_call(jctx *c, const jexpr *e, jscope *s, jv *out) {
    jargs a;
    if (e->a->kind == JX_ATTR) {
        /* obj.method(...): a method of the value's type (str.strip, dict.get,
         * loop.cycle, ...) or a callable stored under that key */
        const jexpr *attr = e->a;
        jv obj;
        if (eval(c, attr->a, s, &obj)) return -1;
        if (obj.kind == JV_UNDEF) return undefined_error(c, attr, obj);
        const jmethod_def *m = jinja_method_find(obj.kind, attr->name);
        if (m) {
            if (eval_args(c, e, s, &a)) return -1;
            return m->fn(c, attr, obj, &a, out);
        }
        jv fn;
        if (get_attr(c, attr, obj, attr->name, &fn)) return -1;
        if (fn.kind == JV_FUNC || fn.kind == JV_MACRO) {
            if (eval_args(c, e, s, &a)) return -1;
            return jinja_call_value(c, e, fn, &a, out);
        }
        return jerr(c, NIB_ERR_UNSUPPORTED, attr->line, attr->col, "unknown method '%.*s' of %s", (int)attr->name.n,
                    attr->name.p, jv_kind_name(obj.kind));
    }
    jv fn;
    if (eval(c, e->a, s, &fn)) return -1;
    if (fn.kind == JV_UNDEF && e->a->kind == JX_NAME)
        return jerr(c, NIB_ERR_UNSUPPORTED, e->a->line, e->a->col, "unknown function '%.*s'", (int)e->a->name.n, e->a->name.p);
    if (eval_args(c, e, s, &a)) return -1;
    return jinja_call_value(c, e, fn, &a, out);
}

/* ---- expressions ----------------------------------------------------------------- */

static int eval_inner(jctx *c, const jexpr *e, jscope *s, jv *out) {
    jv a, b;
    switch (e->kind) {
    case JX_LIT: *out = e->lit; return 0;
    case JX_NAME:
        if (!jscope_get(s, e->name, out)) *out = jv_undef_named(e->name);
        return 0;
    case JX_LIST:
    case JX_TUPLE:
        if (!jv_list_new(c, out, (size_t)e->n_items)) return -1;
        out->u.list->is_tuple = e->kind == JX_TUPLE;
        for (int i = 0; i < e->n_items; i++) {
            if (eval(c, e->items[i], s, &a)) return -1;
            out->u.list->v[out->u.list->n++] = a;
        }
        return 0;
    case JX_DICT:
        if (jv_dict_new(c, out)) return -1;
        for (int i = 0; i + 1 < e->n_items; i += 2) {
            if (eval(c, e->items[i], s, &a) || eval(c, e->items[i + 1], s, &b)) return -1;
            if (a.kind == JV_LIST && !a.u.list->is_tuple)
                return jerr(c, NIB_ERR_FORMAT, e->line, e->col, "unhashable type: 'list'");
            if (a.kind == JV_DICT) return jerr(c, NIB_ERR_FORMAT, e->line, e->col, "unhashable type: 'dict'");
            if (jdict_set(c, out->u.dict, a, b)) return -1;
        }
        return 0;
    case JX_ATTR:
        if (eval(c, e->a, s, &a)) return -1;
        return get_attr(c, e, a, e->name, out);
    case JX_ITEM:
        if (eval(c, e->a, s, &a) || eval(c, e->b, s, &b)) return -1;
        return get_item(c, e, a, b, out);
    case JX_SLICE: {
        jv vs[3] = {jv_none(), jv_none(), jv_none()};
        if (eval(c, e->a, s, &a)) return -1;
        if (e->b && eval(c, e->b, s, &vs[0])) return -1;
        if (e->items[0] && eval(c, e->items[0], s, &vs[1])) return -1;
        if (e->items[1] && eval(c, e->items[1], s, &vs[2])) return -1;
        return get_slice(c, e, a, vs, out);
    }
    case JX_CALL: return eval_call(c, e, s, out);
    case JX_FILTER: {
        jargs args;
        if (!e->filter)
            return jerr(c, NIB_ERR_UNSUPPORTED, e->line, e->col, "unknown filter '%.*s'", (int)e->name.n, e->name.p);
        if (eval(c, e->a, s, &a) || eval_args(c, e, s, &args)) return -1;
        return e->filter->fn(c, e, a, &args, out);
    }
    case JX_TEST: {
        jargs args;
        bool r;
        if (!e->test)
            return jerr(c, NIB_ERR_UNSUPPORTED, e->line, e->col, "unknown test '%.*s'", (int)e->name.n, e->name.p);
        if (e->n_items + e->n_kw != e->test->n_args)
            return jerr(c, NIB_ERR_FORMAT, e->line, e->col, "test '%s' takes %d argument%s, %d given", e->test->name,
                        e->test->n_args, e->test->n_args == 1 ? "" : "s", e->n_items + e->n_kw);
        if (eval(c, e->a, s, &a) || eval_args(c, e, s, &args)) return -1;
        if (e->test->fn(c, e, a, &args, &r)) return -1;
        *out = jv_bool(e->negate ? !r : r);
        return 0;
    }
    case JX_NOT:
        if (eval(c, e->a, s, &a)) return -1;
        *out = jv_bool(!jv_truthy(a));
        return 0;
    case JX_NEG:
    case JX_POS:
        if (eval(c, e->a, s, &a)) return -1;
        if (a.kind == JV_UNDEF) return undefined_error(c, e, a);
        if (!jv_is_number(a))
            return jerr(c, NIB_ERR_FORMAT, e->line, e->col, "bad operand type for unary %s: '%s'",
                        e->kind == JX_NEG ? "-" : "+", jv_kind_name(a.kind));
        if (e->kind == JX_POS) *out = a.kind == JV_BOOL ? jv_int(a.u.b) : a;
        else if (a.kind == JV_FLOAT) *out = jv_float(-a.u.f);
        else if (as_int(a) == INT64_MIN) return jerr(c, NIB_ERR_UNSUPPORTED, e->line, e->col, "integer overflow");
        else *out = jv_int(-as_int(a));
        return 0;
    case JX_AND:
    case JX_OR:
        /* Python's and/or return an operand, not a bool */
        if (eval(c, e->a, s, &a)) return -1;
        if (jv_truthy(a) == (e->kind == JX_OR)) { *out = a; return 0; }
        return eval(c, e->b, s, out);
    case JX_COND:
        if (eval(c, e->a, s, &a)) return -1;
        if (jv_truthy(a)) return eval(c, e->b, s, out);
        if (e->c) return eval(c, e->c, s, out);
        *out = jv_undef();
        return 0;
    case JX_BIN:
        if (eval(c, e->a, s, &a) || eval(c, e->b, s, &b)) return -1;
        return binop(c, e, a, b, out);
    }
    return jerr(c, NIB_ERR_FORMAT, e->line, e->col, "internal: unknown expression kind %d", (int)e->kind);
}

static int eval(jctx *c, const jexpr *e, jscope *s, jv *out) {
    if (++c->depth > JINJA_MAX_EVAL_DEPTH) {
        c->depth--;
        return jerr(c, NIB_ERR_FORMAT, e->line, e->col, "expression nested too deeply (limit %d)", JINJA_MAX_EVAL_DEPTH);
    }
    int rc = eval_inner(c, e, s, out);
    c->depth--;
    return rc;
}

/* ---- statements -------------------------------------------------------------------- */

/* The elements a for loop (or a filter) walks: list items, dict keys, string
 * characters; Undefined is empty. */
int jinja_iterate(jctx *c, int line, int col, jv v, jlist **out) {
    jv lv;
    switch (v.kind) {
    case JV_LIST: *out = v.u.list; return 0;
    case JV_UNDEF:
        if (!jv_list_new(c, &lv, 0)) return -1;
        *out = lv.u.list;
        return 0;
    case JV_DICT:
        if (!jv_list_new(c, &lv, v.u.dict->n)) return -1;
        for (size_t i = 0; i < v.u.dict->n; i++) lv.u.list->v[lv.u.list->n++] = v.u.dict->keys[i];
        *out = lv.u.list;
        return 0;
    case JV_STR: {
        if (!jv_list_new(c, &lv, 0)) return -1;
        for (size_t i = 0; i < v.u.s.n;) {
            size_t e = utf8_next(v.u.s.p, v.u.s.n, i);
            if (jlist_push(c, lv.u.list, jv_strn(v.u.s.p + i, e - i))) return -1;
            i = e;
        }
        *out = lv.u.list;
        return 0;
    }
    default:
        return jerr(c, NIB_ERR_FORMAT, line, col, "'%s' object is not iterable", jv_kind_name(v.kind));
    }
}

/* Bind loop or set targets: one name takes the value, several unpack it. */
static int bind_targets(jctx *c, const jstmt *st, jscope *s, jv v) {
    if (st->n_targets == 1) return jscope_set(c, s, st->targets[0], v);
    jlist *items;
    if (v.kind == JV_LIST) items = v.u.list;
    else if (jinja_iterate(c, st->line, st->col, v, &items)) return -1;
    if (items->n != (size_t)st->n_targets)
        return jerr(c, NIB_ERR_FORMAT, st->line, st->col, "cannot unpack %zu values into %d names", items->n, st->n_targets);
    for (int k = 0; k < st->n_targets; k++)
        if (jscope_set(c, s, st->targets[k], items->v[k])) return -1;
    return 0;
}

static int exec_for(jctx *c, const jstmt *st, jscope *s, jbuf *out) {
    jv iterv;
    jlist *items;
    if (eval(c, st->expr, s, &iterv) || jinja_iterate(c, st->expr->line, st->expr->col, iterv, &items)) return -1;
    if (st->filter) {
        /* `for x in xs if cond`: jinja2 filters first, so loop.length and
         * loop.index count only the kept items */
        jv kept;
        if (!jv_list_new(c, &kept, 0)) return -1;
        jscope *fs = jscope_new(c, s);
        if (!fs) return -1;
        for (size_t i = 0; i < items->n; i++) {
            jv cond;
            fs->n = 0;   /* expressions cannot capture a scope: reuse it */
            if (bind_targets(c, st, fs, items->v[i]) || eval(c, st->filter, fs, &cond)) return -1;
            if (jv_truthy(cond) && jlist_push(c, kept.u.list, items->v[i])) return -1;
        }
        items = kept.u.list;
    }
    if (items->n == 0) {
        jscope *es = jscope_new(c, s);
        if (!es) return -1;
        int rc = render_body(c, &st->else_body, es, out);
        return rc < 0 ? -1 : rc;
    }
    jloop *L = jalloc(c, sizeof *L);
    if (!L) return -1;
    L->depth0 = 0;   /* loop.depth counts recursive-loop levels, and loops here are not recursive */
    L->length = (int64_t)items->n;
    jv loopv = {0};
    loopv.kind = JV_LOOP;
    loopv.u.loop = L;
    jscope *is = NULL;
    for (size_t i = 0; i < items->n; i++) {
        if (++c->steps > JINJA_MAX_STEPS)
            return jerr(c, NIB_ERR_FORMAT, st->line, st->col, "too many loop iterations (limit %llu)",
                        (unsigned long long)JINJA_MAX_STEPS);
        L->index0 = (int64_t)i;
        L->prev = i > 0 ? items->v[i - 1] : jv_undef();
        L->next = i + 1 < items->n ? items->v[i + 1] : jv_undef();
        /* Each iteration starts from an empty scope. The previous one is
         * reused (emptied) unless a macro defined in it captured it, so a long
         * loop does not fill the arena with dead scopes. */
        if (!is) is = jscope_new(c, s);
        if (!is) return -1;
        is->n = 0;
        if (bind_targets(c, st, is, items->v[i]) || jscope_set(c, is, jstr_c("loop"), loopv)) return -1;
        int rc = render_body(c, &st->body, is, out);
        if (rc < 0) return -1;
        for (size_t k = 0; k < is->n; k++)
            if (is->vals[k].kind == JV_MACRO) { is = NULL; break; }
        if (rc == FLOW_BREAK) break;
    }
    return 0;
}

static int exec_set(jctx *c, const jstmt *st, jscope *s) {
    jv v;
    if (eval(c, st->expr, s, &v)) return -1;
    if (!st->is_attr) return bind_targets(c, st, s, v);
    jv ns;
    if (!jscope_get(s, st->targets[0], &ns) || ns.kind != JV_NS)
        return jerr(c, NIB_ERR_FORMAT, st->line, st->col, "cannot assign attribute on non-namespace object '%.*s'",
                    (int)st->targets[0].n, st->targets[0].p);
    return jdict_set(c, ns.u.dict, jv_strn(st->attr.p, st->attr.n), v);
}

/* Returns 0, -1 on error, or FLOW_BREAK / FLOW_CONTINUE to the enclosing loop. */
static int exec_stmt(jctx *c, const jstmt *st, jscope *s, jbuf *out) {
    jv v;
    switch (st->kind) {
    case JS_TEXT: return jbuf_put(c, out, st->text.p, st->text.n);
    case JS_OUTPUT:
        if (eval(c, st->expr, s, &v)) return -1;
        return jv_write_str(c, out, v, st->expr->line, st->expr->col);
    case JS_IF:
        for (int k = 0; k < st->n_branches; k++) {
            if (eval(c, st->conds[k], s, &v)) return -1;
            if (jv_truthy(v)) return render_body(c, &st->bodies[k], s, out);
        }
        return render_body(c, &st->else_body, s, out);
    case JS_FOR: return exec_for(c, st, s, out);
    case JS_SET: return exec_set(c, st, s);
    case JS_SET_BLOCK: {
        jbuf b = {0};
        jscope *bs = jscope_new(c, s);
        if (!bs || render_body(c, &st->body, bs, &b) < 0) return -1;
        return jscope_set(c, s, st->targets[0], jv_strn(b.p ? b.p : "", b.n));
    }
    case JS_MACRO: {
        jmacro *m = jalloc(c, sizeof *m);
        if (!m) return -1;
        m->def = st;
        m->scope = s;
        v.kind = JV_MACRO;
        v.u.macro = m;
        return jscope_set(c, s, st->targets[0], v);
    }
    case JS_BREAK: return FLOW_BREAK;
    case JS_CONTINUE: return FLOW_CONTINUE;
    case JS_BLOCK: {
        /* transformers renders {% generation %} as a call block: its own scope */
        jscope *bs = jscope_new(c, s);
        return bs ? render_body(c, &st->body, bs, out) : -1;
    }
    }
    return jerr(c, NIB_ERR_FORMAT, st->line, st->col, "internal: unknown statement kind %d", (int)st->kind);
}

static int render_body(jctx *c, const jbody *b, jscope *s, jbuf *out) {
    for (int i = 0; i < b->n; i++) {
        int rc = exec_stmt(c, b->v[i], s, out);
        if (rc != 0) return rc;
    }
    return 0;
}

int jinja_render(jctx *c, const jbody *root, jscope *globals, jbuf *out) {
    jscope *top = jscope_new(c, globals);   /* template-level sets don't touch the globals */
    if (!top) return -1;
    int rc = render_body(c, root, top, out);
    return rc < 0 ? -1 : 0;   /* break/continue cannot escape: the parser allows them only in loops */
}
