/* The Jinja subset behind chat templates: internals shared by the lexer
 * (jinja_lex.c), the parser (jinja_parse.c), the values (jinja_value.c), the
 * evaluator (jinja_eval.c) and the builtin filters/tests/methods/functions
 * (jinja_builtins.c). Nothing here is public API; chat_template.h is.
 *
 * Memory: one arena per render holds the tokens, the AST and every value, so
 * nothing inside is freed piecemeal and a failed render frees everything with
 * one call (jarena_free). The arena has a byte limit so a template that builds
 * strings in a loop fails with an error instead of exhausting memory.
 *
 * Errors: every function that can fail returns an int, 0 for success and -1
 * for failure, after the first failure has been recorded in the context with
 * jerr() (message, status, template line:column). Only the first error is
 * kept: it is the cause, later ones are consequences. */
#ifndef NIB_CHAT_JINJA_H
#define NIB_CHAT_JINJA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "nib.h"

/* ---- limits: a malformed or hostile template fails, never crashes --------- */
enum {
    JINJA_MAX_DEPTH = 200,          /* nesting of expressions, blocks, values */
    JINJA_MAX_CALL_DEPTH = 64,      /* macro calls inside macro calls */
    JINJA_MAX_RANGE = 1 << 20,      /* elements range() may produce */
};
#define JINJA_MAX_STEPS ((uint64_t)10 * 1000 * 1000)   /* loop iterations per render */
#define JINJA_ARENA_LIMIT_BYTES ((size_t)256 << 20)   /* a prompt is KBs to a few MBs */

/* ---- arena ---------------------------------------------------------------- */
typedef struct jarena_block jarena_block;
typedef struct jarena {
    jarena_block *head;
    size_t used_bytes;   /* all blocks together, checked against limit_bytes */
    size_t limit_bytes;
} jarena;

typedef struct jstr {
    const char *p;
    size_t n;
} jstr;

static inline jstr jstr_c(const char *s) {
    jstr r;
    r.p = s;
    r.n = 0;
    while (s[r.n]) r.n++;
    return r;
}

/* ---- render context ------------------------------------------------------- */
typedef struct jctx {
    jarena arena;
    nib_error *err;         /* may be NULL */
    bool failed;
    nib_status status;      /* of the first error */
    int depth;              /* current recursion depth (parser and evaluator) */
    int call_depth;         /* macro calls in progress */
    uint64_t steps;         /* loop iterations so far */
    int64_t now_unix;       /* strftime_now's clock */
    bool now_is_local;      /* format now_unix in local time (else UTC) */
} jctx;

/* Record the first error (later ones are consequences) and return -1.
 * line 0 means no position. */
int jerr(jctx *c, nib_status st, int line, int col, const char *fmt, ...) NIB_PRINTF(5, 6);
/* The arena ran out (limit or malloc): a NOMEM error. */
int jerr_nomem(jctx *c);

void *jalloc(jctx *c, size_t n);              /* zeroed; NULL after jerr_nomem */
void *jalloc_array(jctx *c, size_t n, size_t size);
void jarena_free(jarena *a);
char *jstrdup(jctx *c, const char *p, size_t n);  /* NUL-terminated copy */

/* A growable byte buffer in the arena (old storage is left to the arena). */
typedef struct jbuf {
    char *p;
    size_t n, cap;
} jbuf;
int jbuf_put(jctx *c, jbuf *b, const char *p, size_t n);
int jbuf_puts(jctx *c, jbuf *b, const char *s);
int jbuf_putc(jctx *c, jbuf *b, char ch);

/* ---- values --------------------------------------------------------------- */
typedef enum jv_kind {
    JV_UNDEF,   /* a missing variable/key: prints as "", is false, fails on use */
    JV_NONE,
    JV_BOOL,
    JV_INT,
    JV_FLOAT,
    JV_STR,
    JV_LIST,    /* also tuples (jlist.is_tuple), which only print differently */
    JV_DICT,
    JV_NS,      /* namespace(): a dict whose attributes `set ns.x` may change */
    JV_LOOP,    /* the `loop` variable of a for loop */
    JV_FUNC,    /* a global function (range, namespace, raise_exception, ...) */
    JV_MACRO,
} jv_kind;

struct jlist;
struct jdict;
struct jloop;
struct jfunc;
struct jmacro;

typedef struct jv {
    jv_kind kind;
    union {
        bool b;
        int64_t i;
        double f;
        jstr s;                 /* JV_STR; for JV_UNDEF the missing name */
        struct jlist *list;
        struct jdict *dict;     /* JV_DICT and JV_NS */
        struct jloop *loop;
        const struct jfunc *func;
        struct jmacro *macro;
    } u;
} jv;

typedef struct jlist {
    jv *v;
    size_t n, cap;
    bool is_tuple;
    /* made by range(): a list that prints as Python's range object does */
    bool is_range;
    int64_t range_start, range_stop, range_step;
} jlist;

typedef struct jdict {
    jv *keys;      /* insertion order, like Python's dict */
    jv *vals;
    size_t n, cap;
} jdict;

typedef struct jloop {
    int64_t index0, length;
    jv prev, next;    /* previtem / nextitem, JV_UNDEF at the ends */
    int depth0;
} jloop;

static inline jv jv_undef(void) { jv v = {0}; v.kind = JV_UNDEF; return v; }
static inline jv jv_undef_named(jstr name) { jv v = {0}; v.kind = JV_UNDEF; v.u.s = name; return v; }
static inline jv jv_none(void) { jv v = {0}; v.kind = JV_NONE; return v; }
static inline jv jv_bool(bool b) { jv v = {0}; v.kind = JV_BOOL; v.u.b = b; return v; }
static inline jv jv_int(int64_t i) { jv v = {0}; v.kind = JV_INT; v.u.i = i; return v; }
static inline jv jv_float(double f) { jv v = {0}; v.kind = JV_FLOAT; v.u.f = f; return v; }
static inline jv jv_strn(const char *p, size_t n) { jv v = {0}; v.kind = JV_STR; v.u.s.p = p; v.u.s.n = n; return v; }
jv jv_cstr(const char *s);   /* borrows s */

bool jstr_eq(jstr a, const char *lit);

const char *jv_kind_name(jv_kind k);     /* Python's type names: "str", "list", ... */
jv *jv_list_new(jctx *c, jv *out, size_t cap);   /* fills *out; NULL on OOM */
int jlist_push(jctx *c, jlist *l, jv v);
int jv_dict_new(jctx *c, jv *out);
int jdict_set(jctx *c, jdict *d, jv key, jv val);     /* insert or replace */
bool jdict_get(const jdict *d, jv key, jv *out);
bool jdict_get_str(const jdict *d, const char *key, size_t n, jv *out);

bool jv_truthy(jv v);
bool jv_is_number(jv v);          /* bool, int or float (Python's numbers) */
double jv_as_double(jv v);
/* Python ==, deep for lists and dicts. */
bool jv_equal(jv a, jv b);
/* Python <: -1/0/1 into *out, or an error (at line:col) for unorderable types. */
int jv_compare(jctx *c, int line, int col, jv a, jv b, int *out);

/* Python str() into b (lists and dicts show their items' repr()). */
int jv_write_str(jctx *c, jbuf *b, jv v, int line, int col);
/* json.dumps(v, ensure_ascii=False, indent=indent) as transformers' tojson
 * filter calls it; indent < 0 means None. */
int jv_write_json(jctx *c, jbuf *b, jv v, int indent, int line, int col);
/* str(v) as a value (a JV_STR, borrowed when v already is one). */
int jv_to_str(jctx *c, jv v, int line, int col, jv *out);
void jfmt_float(double d, char out[40]);   /* Python repr(float) */

/* UTF-8: Python strings index by code point. */
size_t utf8_len(const char *p, size_t n);                 /* code points */
size_t utf8_next(const char *p, size_t n, size_t i);      /* byte after the code point at i */
bool py_isspace_at(const char *p, size_t n, size_t i, size_t *len);   /* str.isspace, at byte i */

/* ---- tokens --------------------------------------------------------------- */
typedef enum jtok_kind {
    JT_EOF,
    JT_TEXT,        /* template data between tags (whitespace control applied) */
    JT_VAR_BEGIN,   /* {{ */
    JT_VAR_END,     /* }} */
    JT_BLOCK_BEGIN, /* {% */
    JT_BLOCK_END,   /* %} */
    JT_NAME,
    JT_STRING,      /* decoded value in s */
    JT_INT,
    JT_FLOAT,
    JT_OP,          /* operator or punctuation; text in s */
} jtok_kind;

typedef struct jtok {
    jtok_kind kind;
    int line, col;
    jstr s;          /* NAME/OP: source text; STRING/TEXT: value */
    int64_t i;
    double f;
} jtok;

int jinja_lex(jctx *c, const char *src, size_t n, jtok **out, int *n_out);

/* ---- AST ------------------------------------------------------------------ */
typedef enum jx_kind {
    JX_LIT,
    JX_NAME,
    JX_LIST,
    JX_TUPLE,
    JX_DICT,      /* items: key, value, key, value, ... */
    JX_ATTR,      /* a.name */
    JX_ITEM,      /* a[b] */
    JX_SLICE,     /* a[b:c:d], any of b c d may be NULL */
    JX_CALL,      /* a(items..., kw...) */
    JX_FILTER,    /* a | name(items..., kw...) */
    JX_TEST,      /* a is [not] name(items...) */
    JX_NOT,
    JX_NEG,
    JX_POS,
    JX_BIN,       /* a op b */
    JX_AND,
    JX_OR,
    JX_COND,      /* b if a else c (c may be NULL) */
} jx_kind;

typedef enum jop {
    JOP_ADD, JOP_SUB, JOP_MUL, JOP_DIV, JOP_FLOORDIV, JOP_MOD, JOP_POW, JOP_CONCAT,
    JOP_EQ, JOP_NE, JOP_LT, JOP_LE, JOP_GT, JOP_GE, JOP_IN, JOP_NOTIN,
} jop;

struct jfilter_def;
struct jtest_def;

typedef struct jexpr {
    jx_kind kind;
    int line, col;
    jv lit;
    jstr name;                 /* NAME, ATTR, FILTER, TEST */
    jop op;
    bool negate;               /* TEST: `is not` */
    bool soft;                 /* FILTER/TEST not found, inside an if: fails only when evaluated */
    struct jexpr *a, *b, *c;
    struct jexpr **items;      /* LIST, TUPLE, DICT, call/filter/test arguments */
    int n_items;
    jstr *kw_names;            /* keyword arguments */
    struct jexpr **kw_vals;
    int n_kw;
    const struct jfilter_def *filter;   /* NULL: unknown (see soft) */
    const struct jtest_def *test;
} jexpr;

typedef enum js_kind {
    JS_TEXT,
    JS_OUTPUT,
    JS_IF,
    JS_FOR,
    JS_SET,        /* {% set a = e %}, {% set a, b = e %}, {% set ns.x = e %} */
    JS_SET_BLOCK,  /* {% set a %}...{% endset %} */
    JS_MACRO,
    JS_BREAK,
    JS_CONTINUE,
    JS_BLOCK,      /* a plain body: {% generation %} renders its content */
} js_kind;

struct jstmt;
typedef struct jbody {
    struct jstmt **v;
    int n, cap;
} jbody;

typedef struct jstmt {
    js_kind kind;
    int line, col;
    jstr text;                 /* TEXT */
    jexpr *expr;               /* OUTPUT; SET value; FOR iterable */
    /* IF: n_branches conditions with their bodies, then else_body */
    jexpr **conds;
    jbody *bodies;
    int n_branches;
    jbody body;                /* FOR, SET_BLOCK, MACRO, BLOCK */
    jbody else_body;           /* IF, FOR */
    /* FOR and SET targets; SET on a namespace: targets[0] . attr */
    jstr *targets;
    int n_targets;
    jstr attr;
    bool is_attr;
    jexpr *filter;             /* FOR: `for x in y if filter` */
    /* MACRO: name in targets[0], parameters and their defaults (NULL: none) */
    jstr *params;
    jexpr **defaults;
    int n_params;
} jstmt;

int jinja_parse(jctx *c, const jtok *toks, int n_toks, jbody *out);

/* ---- evaluation ----------------------------------------------------------- */
typedef struct jscope {
    struct jscope *parent;
    jstr *names;
    jv *vals;
    size_t n, cap;
} jscope;

jscope *jscope_new(jctx *c, jscope *parent);
int jscope_set(jctx *c, jscope *s, jstr name, jv v);
bool jscope_get(const jscope *s, jstr name, jv *out);

typedef struct jmacro {
    const jstmt *def;
    jscope *scope;   /* where it was defined: what its body can see */
} jmacro;

/* Call arguments, evaluated. */
typedef struct jargs {
    jv *pos;
    int n_pos;
    jstr *kw_names;
    jv *kw;
    int n_kw;
} jargs;
/* Positional argument i or keyword `name`; false if absent. */
bool jargs_get(const jargs *a, int i, const char *name, jv *out);
/* Error unless the call has at most max_pos positionals and only the listed
 * keywords (NULL-terminated). */
int jargs_check(jctx *c, const jexpr *at, const char *what, const jargs *a, int max_pos, const char *const *kw);

int jinja_render(jctx *c, const jbody *root, jscope *globals, jbuf *out);
/* The elements a for loop or a filter walks: list items, dict keys, string
 * characters (code points); Undefined is empty; anything else an error. */
int jinja_iterate(jctx *c, int line, int col, jv v, jlist **out);
/* Call a macro or global function value (filters like map may need it). */
int jinja_call_value(jctx *c, const jexpr *at, jv fn, const jargs *a, jv *out);

/* ---- builtins: tables, name -> function ----------------------------------- */
typedef int (*jfilter_fn)(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out);
typedef struct jfilter_def {
    const char *name;
    jfilter_fn fn;
} jfilter_def;

typedef int (*jtest_fn)(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out);
typedef struct jtest_def {
    const char *name;
    jtest_fn fn;
    int n_args;     /* arguments after the value (jinja2 fails on a mismatch) */
} jtest_def;

typedef int (*jmethod_fn)(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out);
typedef struct jmethod_def {
    jv_kind on;     /* JV_STR, JV_DICT, JV_LIST, JV_LOOP */
    const char *name;
    jmethod_fn fn;
} jmethod_def;

typedef int (*jfunc_fn)(jctx *c, const jexpr *at, const jargs *a, jv *out);
typedef struct jfunc {
    const char *name;
    jfunc_fn fn;
} jfunc;

const jfilter_def *jinja_filter_find(jstr name);
const jtest_def *jinja_test_find(jstr name);
const jmethod_def *jinja_method_find(jv_kind on, jstr name);
/* The tables are sorted (binary search) and every row has a function. */
bool jinja_builtin_tables_ok(void);
extern const jfunc jinja_global_funcs[];
extern const int jinja_n_global_funcs;

#endif
