/* Builtin filters, tests, methods and global functions, one table each
 * (name -> function). To add one: write the function with the table's
 * signature, add a row. Each mirrors jinja2's (filters.py, tests.py,
 * defaults.py) or CPython's (str/dict methods) behaviour closely enough for
 * byte-identical chat prompts; where a corner is not mirrored the comment at
 * the function says so. Unknown names are errors at the call site, naming
 * them. */
#include "chat/jinja.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define AT(at) (at)->line, (at)->col

/* ---- helpers ---------------------------------------------------------------- */

static int undefined_err(jctx *c, const jexpr *at, jv v) {
    if (v.u.s.n) return jerr(c, NIB_ERR_FORMAT, AT(at), "'%.*s' is undefined", (int)v.u.s.n, v.u.s.p);
    return jerr(c, NIB_ERR_FORMAT, AT(at), "value is undefined");
}

static int want_str(jctx *c, const jexpr *at, jv v, const char *what, jstr *out) {
    if (v.kind == JV_STR) { *out = v.u.s; return 0; }
    if (v.kind == JV_UNDEF) return undefined_err(c, at, v);
    return jerr(c, NIB_ERR_FORMAT, AT(at), "%s: expected a string, got %s", what, jv_kind_name(v.kind));
}

static int want_int(jctx *c, const jexpr *at, jv v, const char *what, int64_t *out) {
    if (v.kind == JV_INT) { *out = v.u.i; return 0; }
    if (v.kind == JV_BOOL) { *out = v.u.b; return 0; }
    if (v.kind == JV_UNDEF) return undefined_err(c, at, v);
    return jerr(c, NIB_ERR_FORMAT, AT(at), "%s: expected an integer, got %s", what, jv_kind_name(v.kind));
}

/* jinja2's soft_str: str(), with Undefined as "". */
static int soft_str(jctx *c, const jexpr *at, jv v, jstr *out) {
    jv s;
    if (jv_to_str(c, v, AT(at), &s)) return -1;
    *out = s.u.s;
    return 0;
}

static jv str_val(jbuf *b) { return jv_strn(b->p ? b->p : "", b->n); }

/* Code point at byte i and its length. */
static uint32_t cp_at(jstr s, size_t i, size_t *len) {
    size_t e = utf8_next(s.p, s.n, i);
    const unsigned char *u = (const unsigned char *)s.p + i;
    *len = e - i;
    switch (*len) {
    case 2: return ((uint32_t)(u[0] & 0x1F) << 6) | (u[1] & 0x3F);
    case 3: return ((uint32_t)(u[0] & 0x0F) << 12) | ((uint32_t)(u[1] & 0x3F) << 6) | (u[2] & 0x3F);
    case 4: return ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3F) << 12) | ((uint32_t)(u[2] & 0x3F) << 6) | (u[3] & 0x3F);
    default: return u[0];
    }
}

static int put_cp(jctx *c, jbuf *b, uint32_t cp) {
    char u[4];
    size_t n;
    if (cp < 0x80) { u[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { u[0] = (char)(0xC0 | (cp >> 6)); u[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12)); u[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); u[2] = (char)(0x80 | (cp & 0x3F)); n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18)); u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); u[3] = (char)(0x80 | (cp & 0x3F)); n = 4;
    }
    return jbuf_put(c, b, u, n);
}

/* Case mapping for the scripts chat text mostly uses: ASCII, Latin-1,
 * Greek and Cyrillic (Python maps all of Unicode; other scripts pass
 * through unchanged here). */
static uint32_t cp_upper(uint32_t cp) {
    if (cp >= 'a' && cp <= 'z') return cp - 32;
    if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) return cp - 32;
    if (cp == 0xFF) return 0x178;
    if (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) return cp - 32;
    if (cp == 0x3C2) return 0x3A3;
    if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
    if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
    return cp;
}

static uint32_t cp_lower(uint32_t cp) {
    if (cp >= 'A' && cp <= 'Z') return cp + 32;
    if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32;
    if (cp == 0x178) return 0xFF;
    if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
    if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
    if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
    return cp;
}

static bool cp_is_upper(uint32_t cp) { return cp_lower(cp) != cp; }
static bool cp_is_lower(uint32_t cp) { return cp_upper(cp) != cp || cp == 0xDF; }
static bool cp_is_cased(uint32_t cp) { return cp_is_upper(cp) || cp_is_lower(cp); }

/* mode: 'U' upper, 'L' lower, 'C' capitalize, 'T' title (jinja2's do_title
 * splits words at runs of -, whitespace, and opening brackets) */
static int case_map(jctx *c, jstr s, char mode, jv *out) {
    jbuf b = {0};
    bool word_start = true;
    for (size_t i = 0; i < s.n;) {
        size_t len;
        uint32_t cp = cp_at(s, i, &len);
        bool up;
        switch (mode) {
        case 'U': up = true; break;
        case 'L': up = false; break;
        case 'C': up = i == 0; break;
        default: up = word_start; break;
        }
        if (len == 1 && (unsigned char)s.p[i] >= 0x80) {   /* invalid UTF-8: keep the byte */
            if (jbuf_put(c, &b, s.p + i, 1)) return -1;
        } else if (up && cp == 0xDF) {
            if (jbuf_puts(c, &b, mode == 'U' ? "SS" : "Ss")) return -1;   /* German sharp s */
        } else if (put_cp(c, &b, up ? cp_upper(cp) : cp_lower(cp))) {
            return -1;
        }
        if (mode == 'T') {
            size_t wl;
            word_start = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || py_isspace_at(s.p, s.n, i, &wl);
        }
        i += len;
    }
    *out = str_val(&b);
    return 0;
}

/* str.strip/lstrip/rstrip: whitespace, or any code point of chars. */
static bool in_chars(jstr s, size_t i, const jstr *chars, size_t *len) {
    if (!chars) return py_isspace_at(s.p, s.n, i, len);
    uint32_t cp = cp_at(s, i, len);
    for (size_t k = 0; k < chars->n;) {
        size_t kl;
        if (cp_at(*chars, k, &kl) == cp) return true;
        k += kl;
    }
    return false;
}

static jstr strip_str(jstr s, const jstr *chars, bool left, bool right) {
    size_t a = 0, e = s.n, len;
    if (left)
        while (a < e && in_chars(s, a, chars, &len)) a += len;
    if (right)
        while (e > a) {
            size_t p = e - 1;
            while (p > a && ((unsigned char)s.p[p] & 0xC0) == 0x80) p--;   /* start of the last code point */
            if (!in_chars(s, p, chars, &len) || p + len != e) break;
            e = p;
        }
    jstr r = {s.p + a, e - a};
    return r;
}

static int strip_common(jctx *c, const jexpr *at, jv self, const jargs *a, bool left, bool right, const char *what, jv *out) {
    jstr s, chars;
    jv cv;
    if (jargs_check(c, at, what, a, 1, NULL) || want_str(c, at, self, what, &s)) return -1;
    bool has = jargs_get(a, 0, NULL, &cv) && cv.kind != JV_NONE;
    if (has && want_str(c, at, cv, what, &chars)) return -1;
    jstr r = strip_str(s, has ? &chars : NULL, left, right);
    *out = jv_strn(r.p, r.n);
    return 0;
}

static const char *find_sub(jstr hay, size_t from, jstr needle) {
    if (needle.n == 0) return hay.p + from;
    for (size_t i = from; i + needle.n <= hay.n; i++)
        if (memcmp(hay.p + i, needle.p, needle.n) == 0) return hay.p + i;
    return NULL;
}

static const char *rfind_sub(jstr hay, size_t end, jstr needle) {
    if (needle.n > end) return NULL;
    for (size_t i = end - needle.n + 1; i-- > 0;)
        if (memcmp(hay.p + i, needle.p, needle.n) == 0) return hay.p + i;
    return NULL;
}

static int str_replace(jctx *c, jstr s, jstr old, jstr rep, int64_t count, jv *out) {
    jbuf b = {0};
    if (old.n == 0) {
        /* Python inserts rep before every code point and at the end */
        size_t i = 0;
        int64_t done = 0;
        while (count < 0 || done < count) {
            if (jbuf_put(c, &b, rep.p, rep.n)) return -1;
            done++;
            if (i >= s.n) break;
            size_t e = utf8_next(s.p, s.n, i);
            if (jbuf_put(c, &b, s.p + i, e - i)) return -1;
            i = e;
        }
        if (jbuf_put(c, &b, s.p + i, s.n - i)) return -1;
        *out = str_val(&b);
        return 0;
    }
    size_t i = 0;
    int64_t done = 0;
    for (;;) {
        const char *hit = (count < 0 || done < count) ? find_sub(s, i, old) : NULL;
        if (!hit) break;
        size_t at = (size_t)(hit - s.p);
        if (jbuf_put(c, &b, s.p + i, at - i) || jbuf_put(c, &b, rep.p, rep.n)) return -1;
        i = at + old.n;
        done++;
    }
    if (jbuf_put(c, &b, s.p + i, s.n - i)) return -1;
    *out = str_val(&b);
    return 0;
}

/* str.split / str.rsplit with Python's two modes: a separator, or runs of
 * whitespace (sep None) with empty pieces dropped. */
static int str_split(jctx *c, const jexpr *at, jstr s, const jstr *sep, int64_t maxsplit, bool from_right, jv *out) {
    if (sep && sep->n == 0) return jerr(c, NIB_ERR_FORMAT, AT(at), "split: empty separator");
    if (!jv_list_new(c, out, 0)) return -1;
    jlist *l = out->u.list;
    int64_t splits = 0;
    if (sep) {
        if (!from_right) {
            size_t i = 0;
            for (;;) {
                const char *hit = (maxsplit < 0 || splits < maxsplit) ? find_sub(s, i, *sep) : NULL;
                if (!hit) break;
                if (jlist_push(c, l, jv_strn(s.p + i, (size_t)(hit - s.p) - i))) return -1;
                i = (size_t)(hit - s.p) + sep->n;
                splits++;
            }
            return jlist_push(c, l, jv_strn(s.p + i, s.n - i));
        }
        size_t end = s.n;
        for (;;) {
            const char *hit = (maxsplit < 0 || splits < maxsplit) ? rfind_sub(s, end, *sep) : NULL;
            if (!hit) break;
            size_t hs = (size_t)(hit - s.p);
            if (jlist_push(c, l, jv_strn(hit + sep->n, end - hs - sep->n))) return -1;
            end = hs;
            splits++;
        }
        if (jlist_push(c, l, jv_strn(s.p, end))) return -1;
    } else {
        size_t len;
        if (!from_right) {
            size_t i = 0;
            for (;;) {
                while (i < s.n && py_isspace_at(s.p, s.n, i, &len)) i += len;
                if (i >= s.n) break;
                if (maxsplit >= 0 && splits >= maxsplit) {
                    /* the rest, with trailing whitespace kept as Python does */
                    if (jlist_push(c, l, jv_strn(s.p + i, s.n - i))) return -1;
                    break;
                }
                size_t st = i;
                while (i < s.n && !py_isspace_at(s.p, s.n, i, &len)) i = utf8_next(s.p, s.n, i);
                if (jlist_push(c, l, jv_strn(s.p + st, i - st))) return -1;
                splits++;
            }
            return 0;
        }
        jstr rest = strip_str(s, NULL, false, true);
        size_t end = rest.n;
        while (end > 0) {
            if (maxsplit >= 0 && splits >= maxsplit) {
                /* the rest, leading whitespace kept as Python does */
                if (jlist_push(c, l, jv_strn(s.p, end))) return -1;
                end = 0;
                break;
            }
            size_t st = end;
            while (st > 0) {
                size_t p = st - 1;
                while (p > 0 && ((unsigned char)s.p[p] & 0xC0) == 0x80) p--;
                if (py_isspace_at(s.p, s.n, p, &len)) break;
                st = p;
            }
            if (jlist_push(c, l, jv_strn(s.p + st, end - st))) return -1;
            splits++;
            end = st;
            while (end > 0) {
                size_t p = end - 1;
                while (p > 0 && ((unsigned char)s.p[p] & 0xC0) == 0x80) p--;
                if (!py_isspace_at(s.p, s.n, p, &len)) break;
                end = p;
            }
        }
    }
    if (from_right) {   /* collected right to left */
        for (size_t i = 0, j = l->n ? l->n - 1 : 0; i < j; i++, j--) {
            jv t = l->v[i];
            l->v[i] = l->v[j];
            l->v[j] = t;
        }
    }
    return 0;
}

/* obj.attr for filters that take attribute= (map, selectattr, sort, ...):
 * jinja2's make_attrgetter, dotted paths and integer parts included. */
static int attr_path(jctx *c, const jexpr *at, jv obj, jstr path, jv *out) {
    size_t i = 0;
    *out = obj;
    while (i <= path.n) {
        size_t e = i;
        while (e < path.n && path.p[e] != '.') e++;
        jstr part = {path.p + i, e - i};
        jv cur = *out, key = jv_strn(part.p, part.n);
        bool digits = part.n > 0;
        int64_t iv = 0;
        for (size_t k = 0; k < part.n && digits; k++) {
            digits = part.p[k] >= '0' && part.p[k] <= '9';
            iv = iv * 10 + (part.p[k] - '0');
        }
        if (digits) key = jv_int(iv);
        if (cur.kind == JV_UNDEF) return undefined_err(c, at, cur);
        if ((cur.kind == JV_DICT || cur.kind == JV_NS) && jdict_get(cur.u.dict, key, out)) {
        } else if (cur.kind == JV_LIST && digits && (size_t)iv < cur.u.list->n) {
            *out = cur.u.list->v[iv];
        } else {
            *out = jv_undef_named(part);
        }
        i = e + 1;
    }
    return 0;
}

static int to_list(jctx *c, const jexpr *at, jv v, jlist **out) { return jinja_iterate(c, AT(at), v, out); }

/* Stable merge sort by jv_compare (Python's sort is stable, also reversed). */
static int sort_cmp(jctx *c, const jexpr *at, jv a, jv b, bool fold_case, int *r) {
    if (fold_case && a.kind == JV_STR && b.kind == JV_STR) {
        jv la, lb;
        if (case_map(c, a.u.s, 'L', &la) || case_map(c, b.u.s, 'L', &lb)) return -1;
        return jv_compare(c, AT(at), la, lb, r);
    }
    return jv_compare(c, AT(at), a, b, r);
}

static int merge_sort(jctx *c, const jexpr *at, jv *vals, jv *keys, size_t n, bool rev, bool fold_case) {
    if (n < 2) return 0;
    jv *tv = jalloc_array(c, n, sizeof(jv)), *tk = jalloc_array(c, n, sizeof(jv));
    if (!tv || !tk) return -1;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                int r;
                if (sort_cmp(c, at, keys[j], keys[i], fold_case, &r)) return -1;
                bool take_right = rev ? r > 0 : r < 0;
                if (take_right) { tv[k] = vals[j]; tk[k++] = keys[j++]; }
                else { tv[k] = vals[i]; tk[k++] = keys[i++]; }
            }
            while (i < mid) { tv[k] = vals[i]; tk[k++] = keys[i++]; }
            while (j < hi) { tv[k] = vals[j]; tk[k++] = keys[j++]; }
        }
        memcpy(vals, tv, n * sizeof(jv));
        memcpy(keys, tk, n * sizeof(jv));
    }
    return 0;
}

static bool arg_bool(const jargs *a, int i, const char *name, bool dflt) {
    jv v;
    return jargs_get(a, i, name, &v) ? jv_truthy(v) : dflt;
}

/* ---- filters ------------------------------------------------------------------ */

static int f_trim(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    static const char *const kw[] = {"chars", NULL};
    jstr s, chars;
    jv cv;
    if (jargs_check(c, at, "trim", a, 1, kw) || soft_str(c, at, self, &s)) return -1;
    bool has = jargs_get(a, 0, "chars", &cv) && cv.kind != JV_NONE;
    if (has && want_str(c, at, cv, "trim", &chars)) return -1;
    jstr r = strip_str(s, has ? &chars : NULL, true, true);
    *out = jv_strn(r.p, r.n);
    return 0;
}

static int f_length(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    if (jargs_check(c, at, "length", a, 0, NULL)) return -1;
    switch (self.kind) {
    case JV_UNDEF: *out = jv_int(0); return 0;
    case JV_STR: *out = jv_int((int64_t)utf8_len(self.u.s.p, self.u.s.n)); return 0;
    case JV_LIST: *out = jv_int((int64_t)self.u.list->n); return 0;
    case JV_DICT: *out = jv_int((int64_t)self.u.dict->n); return 0;
    case JV_LOOP: *out = jv_int(self.u.loop->length); return 0;
    default: return jerr(c, NIB_ERR_FORMAT, AT(at), "object of type '%s' has no len()", jv_kind_name(self.kind));
    }
}

static int case_filter(jctx *c, const jexpr *at, jv self, const jargs *a, char mode, const char *what, jv *out) {
    jstr s;
    if (jargs_check(c, at, what, a, 0, NULL) || soft_str(c, at, self, &s)) return -1;
    return case_map(c, s, mode, out);
}
static int f_upper(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return case_filter(c, at, self, a, 'U', "upper", out); }
static int f_lower(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return case_filter(c, at, self, a, 'L', "lower", out); }
static int f_capitalize(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return case_filter(c, at, self, a, 'C', "capitalize", out); }
static int f_title(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return case_filter(c, at, self, a, 'T', "title", out); }

/* transformers replaces jinja2's tojson (which escapes <>&' for HTML and sorts
 * keys) with json.dumps(x, ensure_ascii=False, indent=indent). */
static int f_tojson(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    static const char *const kw[] = {"indent", NULL};
    jv iv;
    int64_t indent = -1;
    if (jargs_check(c, at, "tojson", a, 1, kw)) return -1;
    if (jargs_get(a, 0, "indent", &iv) && iv.kind != JV_NONE) {
        if (want_int(c, at, iv, "tojson indent", &indent)) return -1;
        if (indent < 0) indent = 0;   /* json.dumps: a negative indent inserts only newlines */
        if (indent > 64) return jerr(c, NIB_ERR_UNSUPPORTED, AT(at), "tojson: indent %lld too large", (long long)indent);
    }
    jbuf b = {0};
    if (jv_write_json(c, &b, self, (int)indent, AT(at))) return -1;
    *out = str_val(&b);
    return 0;
}

static int f_default(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    static const char *const kw[] = {"default_value", "boolean", NULL};
    jv dv = jv_strn("", 0);
    if (jargs_check(c, at, "default", a, 2, kw)) return -1;
    jargs_get(a, 0, "default_value", &dv);
    bool boolean = arg_bool(a, 1, "boolean", false);
    *out = (self.kind == JV_UNDEF || (boolean && !jv_truthy(self))) ? dv : self;
    return 0;
}

static int f_first(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    jlist *l;
    if (jargs_check(c, at, "first", a, 0, NULL) || to_list(c, at, self, &l)) return -1;
    *out = l->n ? l->v[0] : jv_undef();
    return 0;
}

static int f_last(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    jlist *l;
    if (jargs_check(c, at, "last", a, 0, NULL) || to_list(c, at, self, &l)) return -1;
    *out = l->n ? l->v[l->n - 1] : jv_undef();
    return 0;
}

static int f_join(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    static const char *const kw[] = {"d", "attribute", NULL};
    jv dv, attr;
    jstr sep = {"", 0};
    jlist *l;
    if (jargs_check(c, at, "join", a, 2, kw) || to_list(c, at, self, &l)) return -1;
    if (jargs_get(a, 0, "d", &dv) && soft_str(c, at, dv, &sep)) return -1;
    bool has_attr = jargs_get(a, 1, "attribute", &attr) && attr.kind != JV_NONE;
    jbuf b = {0};
    for (size_t i = 0; i < l->n; i++) {
        jv item = l->v[i];
        if (has_attr) {
            jstr path;
            if (soft_str(c, at, attr, &path) || attr_path(c, at, item, path, &item)) return -1;
        }
        if (i && jbuf_put(c, &b, sep.p, sep.n)) return -1;
        if (jv_write_str(c, &b, item, AT(at))) return -1;
    }
    *out = str_val(&b);
    return 0;
}

static int f_string(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    if (jargs_check(c, at, "string", a, 0, NULL)) return -1;
    return jv_to_str(c, self, AT(at), out);
}

static int f_replace(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    static const char *const kw[] = {"old", "new", "count", NULL};
    jv ov, nv, cv;
    jstr s, old, rep;
    int64_t count = -1;
    if (jargs_check(c, at, "replace", a, 3, kw) || soft_str(c, at, self, &s)) return -1;
    if (!jargs_get(a, 0, "old", &ov) || !jargs_get(a, 1, "new", &nv))
        return jerr(c, NIB_ERR_FORMAT, AT(at), "replace: needs old and new");
    if (soft_str(c, at, ov, &old) || soft_str(c, at, nv, &rep)) return -1;
    if (jargs_get(a, 2, "count", &cv) && cv.kind != JV_NONE && want_int(c, at, cv, "replace count", &count)) return -1;
    return str_replace(c, s, old, rep, count, out);
}

static int items_of(jctx *c, const jexpr *at, jv self, jv *out) {
    if (self.kind == JV_UNDEF) return jv_list_new(c, out, 0) ? 0 : -1;
    if (self.kind != JV_DICT && self.kind != JV_NS)
        return jerr(c, NIB_ERR_FORMAT, AT(at), "items: expected a mapping, got %s", jv_kind_name(self.kind));
    const jdict *d = self.u.dict;
    if (!jv_list_new(c, out, d->n)) return -1;
    for (size_t i = 0; i < d->n; i++) {
        jv pair;
        if (!jv_list_new(c, &pair, 2)) return -1;
        pair.u.list->is_tuple = true;
        pair.u.list->v[0] = d->keys[i];
        pair.u.list->v[1] = d->vals[i];
        pair.u.list->n = 2;
        out->u.list->v[out->u.list->n++] = pair;
    }
    return 0;
}

static int f_items(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    if (jargs_check(c, at, "items", a, 0, NULL)) return -1;
    return items_of(c, at, self, out);
}

static int f_list(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    jlist *l;
    if (jargs_check(c, at, "list", a, 0, NULL) || to_list(c, at, self, &l)) return -1;
    if (!jv_list_new(c, out, l->n)) return -1;
    if (l->n) memcpy(out->u.list->v, l->v, l->n * sizeof(jv));  /* an empty list's v may be NULL */
    out->u.list->n = l->n;
    return 0;
}

/* Python int()/float() of a string: surrounding whitespace allowed,
 * underscores between digits allowed; anything else -> the default. */
static bool parse_number(jstr s, bool want_float, double *f, int64_t *i) {
    jstr t = strip_str(s, NULL, true, true);
    char buf[128];
    size_t k = 0;
    if (t.n == 0 || t.n >= sizeof buf) return false;
    for (size_t p = 0; p < t.n; p++)
        if (t.p[p] != '_') buf[k++] = t.p[p];
    buf[k] = 0;
    char *end;
    if (!want_float) {
        long long v = strtoll(buf, &end, 10);
        if (*end == 0 && end != buf) { *i = v; return true; }
    }
    double d = strtod(buf, &end);
    if (*end != 0 || end == buf) return false;
    *f = d;
    if (!want_float) {
        if (!isfinite(d) || fabs(d) >= 9.2e18) return false;
        *i = (int64_t)d;
    }
    return true;
}

static int f_int(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    static const char *const kw[] = {"default", "base", NULL};
    jv dv = jv_int(0);
    if (jargs_check(c, at, "int", a, 2, kw)) return -1;
    jargs_get(a, 0, "default", &dv);
    double f;
    int64_t i;
    switch (self.kind) {
    case JV_INT: *out = self; return 0;
    case JV_BOOL: *out = jv_int(self.u.b); return 0;
    case JV_FLOAT:
        *out = isfinite(self.u.f) && fabs(self.u.f) < 9.2e18 ? jv_int((int64_t)self.u.f) : dv;
        return 0;
    case JV_STR: *out = parse_number(self.u.s, false, &f, &i) ? jv_int(i) : dv; return 0;
    case JV_UNDEF: return undefined_err(c, at, self);   /* int(Undefined) raises, not caught */
    default: *out = dv; return 0;
    }
}

static int f_float(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    static const char *const kw[] = {"default", NULL};
    jv dv = jv_float(0.0);
    if (jargs_check(c, at, "float", a, 1, kw)) return -1;
    jargs_get(a, 0, "default", &dv);
    double f;
    int64_t i;
    if (self.kind == JV_UNDEF) return undefined_err(c, at, self);
    if (jv_is_number(self)) *out = jv_float(jv_as_double(self));
    else if (self.kind == JV_STR) *out = parse_number(self.u.s, true, &f, &i) ? jv_float(f) : dv;
    else *out = dv;
    return 0;
}

static int f_abs(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    if (jargs_check(c, at, "abs", a, 0, NULL)) return -1;
    if (self.kind == JV_FLOAT) *out = jv_float(fabs(self.u.f));
    else if (self.kind == JV_INT && self.u.i != INT64_MIN) *out = jv_int(self.u.i < 0 ? -self.u.i : self.u.i);
    else if (self.kind == JV_BOOL) *out = jv_int(self.u.b);
    else return jerr(c, NIB_ERR_FORMAT, AT(at), "bad operand type for abs(): '%s'", jv_kind_name(self.kind));
    return 0;
}

/* round(precision, method): 'common' is Python's round() (half to even on
 * the exact binary value, which printf's correctly rounded %.*f matches). */
static int f_round(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    static const char *const kw[] = {"precision", "method", NULL};
    jv pv, mv;
    int64_t prec = 0;
    jstr method = {"common", 6};
    if (jargs_check(c, at, "round", a, 2, kw)) return -1;
    if (jargs_get(a, 0, "precision", &pv) && want_int(c, at, pv, "round precision", &prec)) return -1;
    if (jargs_get(a, 1, "method", &mv) && want_str(c, at, mv, "round method", &method)) return -1;
    if (!jv_is_number(self)) return jerr(c, NIB_ERR_FORMAT, AT(at), "round: expected a number, got %s", jv_kind_name(self.kind));
    if (prec < 0 || prec > 17) return jerr(c, NIB_ERR_UNSUPPORTED, AT(at), "round: precision %lld unsupported", (long long)prec);
    double x = jv_as_double(self), scale = pow(10.0, (double)prec);
    if (jstr_eq(method, "common") && self.kind != JV_FLOAT) {
        *out = jv_int(self.kind == JV_BOOL ? self.u.b : self.u.i);   /* round(int, n) is the int */
        return 0;
    }
    if (jstr_eq(method, "floor")) x = floor(x * scale) / scale;
    else if (jstr_eq(method, "ceil")) x = ceil(x * scale) / scale;
    else if (jstr_eq(method, "common")) {
        char buf[400];
        snprintf(buf, sizeof buf, "%.*f", (int)prec, x);
        x = strtod(buf, NULL);
    } else {
        return jerr(c, NIB_ERR_FORMAT, AT(at), "round: method must be common, ceil or floor");
    }
    *out = jv_float(x);
    return 0;
}

static int f_safe(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    if (jargs_check(c, at, "safe", a, 0, NULL)) return -1;
    *out = self;   /* no autoescaping in chat templates: markup is plain text */
    return 0;
}

static int f_reverse(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    if (jargs_check(c, at, "reverse", a, 0, NULL)) return -1;
    if (self.kind == JV_STR) {
        /* by code point: walk forward recording starts, emit backward */
        jstr s = self.u.s;
        size_t n = utf8_len(s.p, s.n), k = 0;
        size_t *starts = jalloc_array(c, n + 1, sizeof *starts);
        if (!starts) return -1;
        for (size_t i = 0; i < s.n; i = utf8_next(s.p, s.n, i)) starts[k++] = i;
        starts[n] = s.n;
        jbuf b = {0};
        for (size_t i = n; i-- > 0;)
            if (jbuf_put(c, &b, s.p + starts[i], starts[i + 1] - starts[i])) return -1;
        *out = str_val(&b);
        return 0;
    }
    jlist *l;
    if (to_list(c, at, self, &l)) return -1;
    if (!jv_list_new(c, out, l->n)) return -1;
    for (size_t i = l->n; i-- > 0;) out->u.list->v[out->u.list->n++] = l->v[i];
    return 0;
}

static int f_sort(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    static const char *const kw[] = {"reverse", "case_sensitive", "attribute", NULL};
    jv attr;
    jlist *l;
    if (jargs_check(c, at, "sort", a, 3, kw) || to_list(c, at, self, &l)) return -1;
    bool rev = arg_bool(a, 0, "reverse", false), cs = arg_bool(a, 1, "case_sensitive", false);
    bool has_attr = jargs_get(a, 2, "attribute", &attr) && attr.kind != JV_NONE;
    if (!jv_list_new(c, out, l->n)) return -1;
    jv *keys = jalloc_array(c, l->n + 1, sizeof(jv));
    if (!keys) return -1;
    for (size_t i = 0; i < l->n; i++) {
        out->u.list->v[i] = l->v[i];
        keys[i] = l->v[i];
        if (has_attr) {
            jstr path;
            if (soft_str(c, at, attr, &path) || attr_path(c, at, l->v[i], path, &keys[i])) return -1;
        }
    }
    out->u.list->n = l->n;
    return merge_sort(c, at, out->u.list->v, keys, l->n, rev, !cs);
}

static int f_dictsort(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    static const char *const kw[] = {"case_sensitive", "by", "reverse", NULL};
    jv byv, items;
    jstr by = {"key", 3};
    if (jargs_check(c, at, "dictsort", a, 3, kw) || items_of(c, at, self, &items)) return -1;
    bool cs = arg_bool(a, 0, "case_sensitive", false), rev = arg_bool(a, 2, "reverse", false);
    if (jargs_get(a, 1, "by", &byv) && want_str(c, at, byv, "dictsort by", &by)) return -1;
    int pos = jstr_eq(by, "key") ? 0 : jstr_eq(by, "value") ? 1 : -1;
    if (pos < 0) return jerr(c, NIB_ERR_FORMAT, AT(at), "dictsort: by must be 'key' or 'value'");
    jlist *l = items.u.list;
    jv *keys = jalloc_array(c, l->n + 1, sizeof(jv));
    if (!keys) return -1;
    for (size_t i = 0; i < l->n; i++) keys[i] = l->v[i].u.list->v[pos];
    *out = items;
    return merge_sort(c, at, l->v, keys, l->n, rev, !cs);
}

static int f_unique(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    static const char *const kw[] = {"case_sensitive", "attribute", NULL};
    jv attr;
    jlist *l;
    if (jargs_check(c, at, "unique", a, 2, kw) || to_list(c, at, self, &l)) return -1;
    bool cs = arg_bool(a, 0, "case_sensitive", false);
    bool has_attr = jargs_get(a, 1, "attribute", &attr) && attr.kind != JV_NONE;
    jv seen;
    if (!jv_list_new(c, out, 0) || !jv_list_new(c, &seen, 0)) return -1;
    for (size_t i = 0; i < l->n; i++) {
        jv key = l->v[i];
        if (has_attr) {
            jstr path;
            if (soft_str(c, at, attr, &path) || attr_path(c, at, key, path, &key)) return -1;
        }
        if (!cs && key.kind == JV_STR && case_map(c, key.u.s, 'L', &key)) return -1;
        if ((key.kind == JV_LIST && !key.u.list->is_tuple) || key.kind == JV_DICT || key.kind == JV_NS)
            return jerr(c, NIB_ERR_FORMAT, AT(at), "unique: unhashable type: '%s'", jv_kind_name(key.kind));
        bool dup = false;
        for (size_t k = 0; k < seen.u.list->n && !dup; k++) dup = jv_equal(seen.u.list->v[k], key);
        if (dup) continue;
        if (jlist_push(c, seen.u.list, key) || jlist_push(c, out->u.list, l->v[i])) return -1;
    }
    return 0;
}

static int minmax(jctx *c, const jexpr *at, jv self, const jargs *a, bool want_max, jv *out) {
    static const char *const kw[] = {"case_sensitive", "attribute", NULL};
    jv attr;
    jlist *l;
    if (jargs_check(c, at, want_max ? "max" : "min", a, 2, kw) || to_list(c, at, self, &l)) return -1;
    bool cs = arg_bool(a, 0, "case_sensitive", false);
    bool has_attr = jargs_get(a, 1, "attribute", &attr) && attr.kind != JV_NONE;
    *out = jv_undef();
    jv best_key = jv_undef();
    for (size_t i = 0; i < l->n; i++) {
        jv key = l->v[i];
        if (has_attr) {
            jstr path;
            if (soft_str(c, at, attr, &path) || attr_path(c, at, key, path, &key)) return -1;
        }
        int r = 0;
        if (i > 0 && sort_cmp(c, at, key, best_key, !cs, &r)) return -1;
        if (i == 0 || (want_max ? r > 0 : r < 0)) { *out = l->v[i]; best_key = key; }
    }
    return 0;
}
static int f_min(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return minmax(c, at, self, a, false, out); }
static int f_max(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return minmax(c, at, self, a, true, out); }

static int f_sum(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    static const char *const kw[] = {"attribute", "start", NULL};
    jv attr, acc = jv_int(0);
    jlist *l;
    if (jargs_check(c, at, "sum", a, 2, kw) || to_list(c, at, self, &l)) return -1;
    bool has_attr = jargs_get(a, 0, "attribute", &attr) && attr.kind != JV_NONE;
    jargs_get(a, 1, "start", &acc);
    for (size_t i = 0; i < l->n; i++) {
        jv v = l->v[i];
        if (has_attr) {
            jstr path;
            if (soft_str(c, at, attr, &path) || attr_path(c, at, v, path, &v)) return -1;
        }
        if (!jv_is_number(acc) || !jv_is_number(v))
            return jerr(c, NIB_ERR_FORMAT, AT(at), "sum: unsupported operand types '%s' and '%s'", jv_kind_name(acc.kind),
                        jv_kind_name(v.kind));
        if (acc.kind == JV_FLOAT || v.kind == JV_FLOAT) {
            acc = jv_float(jv_as_double(acc) + jv_as_double(v));
        } else {
            int64_t r, x = acc.kind == JV_BOOL ? acc.u.b : acc.u.i, y = v.kind == JV_BOOL ? v.u.b : v.u.i;
            if (__builtin_add_overflow(x, y, &r)) return jerr(c, NIB_ERR_UNSUPPORTED, AT(at), "sum: integer overflow");
            acc = jv_int(r);
        }
    }
    *out = acc;
    return 0;
}

/* Arguments after the first k, as their own jargs (map/select pass them on). */
static jargs args_rest(const jargs *a, int k) {
    jargs r = *a;
    if (k > r.n_pos) k = r.n_pos;
    if (k > 0) r.pos += k;  /* a call without positional arguments has pos == NULL; NULL + 0 is undefined in C */
    r.n_pos -= k;
    return r;
}

/* map/select/reject/...: jinja2 guards the loop with `if value:`, so a
 * false value (None, "", []) maps to nothing instead of failing. */
static int to_list_if_truthy(jctx *c, const jexpr *at, jv v, jlist **out) {
    if (jv_truthy(v)) return to_list(c, at, v, out);
    jv e;
    if (!jv_list_new(c, &e, 0)) return -1;
    *out = e.u.list;
    return 0;
}

static int f_map(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    jv attr, fname, dflt;
    jlist *l;
    if (to_list_if_truthy(c, at, self, &l)) return -1;
    if (!jv_list_new(c, out, l->n)) return -1;
    if (a->n_pos == 0 && jargs_get(a, -1, "attribute", &attr)) {
        jstr path;
        bool has_default = jargs_get(a, -1, "default", &dflt);
        if (soft_str(c, at, attr, &path)) return -1;
        for (size_t i = 0; i < l->n; i++) {
            jv v;
            if (attr_path(c, at, l->v[i], path, &v)) return -1;
            if (v.kind == JV_UNDEF && has_default) v = dflt;
            out->u.list->v[out->u.list->n++] = v;
        }
        return 0;
    }
    jstr name;
    if (!jargs_get(a, 0, NULL, &fname) || want_str(c, at, fname, "map", &name)) return -1;
    const jfilter_def *f = jinja_filter_find(name);
    if (!f) return jerr(c, NIB_ERR_UNSUPPORTED, AT(at), "unknown filter '%.*s'", (int)name.n, name.p);
    jargs rest = args_rest(a, 1);
    for (size_t i = 0; i < l->n; i++) {
        jv v;
        if (f->fn(c, at, l->v[i], &rest, &v)) return -1;
        out->u.list->v[out->u.list->n++] = v;
    }
    return 0;
}

/* select/reject/selectattr/rejectattr: keep items whose test (by name, or
 * truthiness without one) is true, or false for the reject forms. */
static int select_common(jctx *c, const jexpr *at, jv self, const jargs *a, bool by_attr, bool keep_when, jv *out) {
    jlist *l;
    if (to_list_if_truthy(c, at, self, &l)) return -1;
    int k = 0;
    jstr path = {0};
    jv v;
    if (by_attr) {
        if (!jargs_get(a, k++, NULL, &v) || soft_str(c, at, v, &path)) return jerr(c, NIB_ERR_FORMAT, AT(at), "selectattr: needs an attribute");
    }
    const jtest_def *t = NULL;
    if (jargs_get(a, k, NULL, &v)) {
        jstr name;
        if (want_str(c, at, v, "select", &name)) return -1;
        t = jinja_test_find(name);
        if (!t) return jerr(c, NIB_ERR_UNSUPPORTED, AT(at), "unknown test '%.*s'", (int)name.n, name.p);
        k++;
    }
    jargs rest = args_rest(a, k);
    if (!jv_list_new(c, out, 0)) return -1;
    for (size_t i = 0; i < l->n; i++) {
        jv item = l->v[i], subject = item;
        if (by_attr && attr_path(c, at, item, path, &subject)) return -1;
        bool r;
        if (t) {
            if (t->fn(c, at, subject, &rest, &r)) return -1;
        } else {
            r = jv_truthy(subject);
        }
        if (r == keep_when && jlist_push(c, out->u.list, item)) return -1;
    }
    return 0;
}
static int f_select(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return select_common(c, at, self, a, false, true, out); }
static int f_reject(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return select_common(c, at, self, a, false, false, out); }
static int f_selectattr(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return select_common(c, at, self, a, true, true, out); }
static int f_rejectattr(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return select_common(c, at, self, a, true, false, out); }

/* jinja2's do_indent: lines after the first get the indent (not blank lines
 * unless blank=True; the first too if first=True). Lines split at \n, \r\n
 * and \r (Python's splitlines also splits at rarer separators). */
static int f_indent(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    static const char *const kw[] = {"width", "first", "blank", NULL};
    jv wv;
    jstr s, ind = {"    ", 4};
    if (jargs_check(c, at, "indent", a, 3, kw) || soft_str(c, at, self, &s)) return -1;
    char *spaces = NULL;
    if (jargs_get(a, 0, "width", &wv)) {
        if (wv.kind == JV_STR) {
            ind = wv.u.s;
        } else {
            int64_t w;
            if (want_int(c, at, wv, "indent width", &w)) return -1;
            if (w < 0) w = 0;
            if (w > 1024) return jerr(c, NIB_ERR_UNSUPPORTED, AT(at), "indent: width too large");
            spaces = jalloc(c, (size_t)w + 1);
            if (!spaces) return -1;
            memset(spaces, ' ', (size_t)w);
            ind.p = spaces;
            ind.n = (size_t)w;
        }
    }
    bool first = arg_bool(a, 1, "first", false), blank = arg_bool(a, 2, "blank", false);
    jbuf b = {0};
    if (first && jbuf_put(c, &b, ind.p, ind.n)) return -1;
    size_t i = 0;
    bool first_line = true;
    while (i < s.n) {
        size_t e = i;
        while (e < s.n && s.p[e] != '\n' && s.p[e] != '\r') e++;
        if (!first_line) {
            if (jbuf_putc(c, &b, '\n')) return -1;
            if ((blank || e > i) && jbuf_put(c, &b, ind.p, ind.n)) return -1;
        }
        if (jbuf_put(c, &b, s.p + i, e - i)) return -1;
        first_line = false;
        if (e < s.n && s.p[e] == '\r' && e + 1 < s.n && s.p[e + 1] == '\n') e++;
        i = e + 1;
        if (e >= s.n) break;
    }
    /* jinja2 appends "\n" before splitting, so a trailing newline survives */
    if (s.n && (s.p[s.n - 1] == '\n' || s.p[s.n - 1] == '\r')) {
        if (jbuf_putc(c, &b, '\n')) return -1;
        if (blank && jbuf_put(c, &b, ind.p, ind.n)) return -1;
    }
    *out = str_val(&b);
    return 0;
}

static int f_attr(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    jv nv;
    jstr name;
    if (jargs_check(c, at, "attr", a, 1, NULL) || !jargs_get(a, 0, NULL, &nv) || want_str(c, at, nv, "attr", &name)) return -1;
    if ((self.kind == JV_DICT || self.kind == JV_NS) && jdict_get_str(self.u.dict, name.p, name.n, out)) return 0;
    *out = jv_undef_named(name);
    return 0;
}

/* Sorted by name (checked by test_chat_template's table walk) for bsearch. */
static const jfilter_def filters[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"capitalize", f_capitalize},
    {"count", f_length},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", f_dictsort},
    {"first", f_first},
    {"float", f_float},
    {"indent", f_indent},
    {"int", f_int},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", f_map},
    {"max", f_max},
    {"min", f_min},
    {"reject", f_reject},
    {"rejectattr", f_rejectattr},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"round", f_round},
    {"safe", f_safe},
    {"select", f_select},
    {"selectattr", f_selectattr},
    {"sort", f_sort},
    {"string", f_string},
    {"sum", f_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"unique", f_unique},
    {"upper", f_upper},
};

/* ---- tests ------------------------------------------------------------------------- */

static int t_defined(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { (void)c; (void)at; (void)a; *out = v.kind != JV_UNDEF; return 0; }
static int t_undefined(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { (void)c; (void)at; (void)a; *out = v.kind == JV_UNDEF; return 0; }
static int t_none(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { (void)c; (void)at; (void)a; *out = v.kind == JV_NONE; return 0; }
static int t_boolean(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { (void)c; (void)at; (void)a; *out = v.kind == JV_BOOL; return 0; }
static int t_true(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { (void)c; (void)at; (void)a; *out = v.kind == JV_BOOL && v.u.b; return 0; }
static int t_false(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { (void)c; (void)at; (void)a; *out = v.kind == JV_BOOL && !v.u.b; return 0; }
static int t_integer(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { (void)c; (void)at; (void)a; *out = v.kind == JV_INT; return 0; }
static int t_float(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { (void)c; (void)at; (void)a; *out = v.kind == JV_FLOAT; return 0; }
static int t_number(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { (void)c; (void)at; (void)a; *out = jv_is_number(v); return 0; }
static int t_string(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { (void)c; (void)at; (void)a; *out = v.kind == JV_STR; return 0; }
static int t_mapping(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { (void)c; (void)at; (void)a; *out = v.kind == JV_DICT; return 0; }
static int t_callable(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { (void)c; (void)at; (void)a; *out = v.kind == JV_FUNC || v.kind == JV_MACRO; return 0; }

/* iter(v) works: strings, lists, dicts, loops, and Undefined (empty). */
static int t_iterable(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) {
    (void)c; (void)at; (void)a;
    *out = v.kind == JV_STR || v.kind == JV_LIST || v.kind == JV_DICT || v.kind == JV_UNDEF || v.kind == JV_LOOP;
    return 0;
}

/* len(v) and v.__getitem__ exist. */
static int t_sequence(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) {
    (void)c; (void)at; (void)a;
    *out = v.kind == JV_STR || v.kind == JV_LIST || v.kind == JV_DICT || v.kind == JV_UNDEF;
    return 0;
}

static int int_of(jctx *c, const jexpr *at, jv v, int64_t *out) { return want_int(c, at, v, "test", out); }

/* value % 2 in Python: floats too */
static int parity(jctx *c, const jexpr *at, jv v, bool odd, bool *out) {
    if (v.kind == JV_FLOAT) {
        double m = fmod(v.u.f, 2.0);
        *out = odd ? m != 0 : m == 0;
        return 0;
    }
    int64_t i;
    if (int_of(c, at, v, &i)) return -1;
    *out = odd ? i % 2 != 0 : i % 2 == 0;
    return 0;
}
static int t_odd(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { (void)a; return parity(c, at, v, true, out); }
static int t_even(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { (void)a; return parity(c, at, v, false, out); }

static int t_divisibleby(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) {
    int64_t i, d;
    jv dv;
    if (!jargs_get(a, 0, "num", &dv)) return jerr(c, NIB_ERR_FORMAT, AT(at), "divisibleby: needs a number");
    if (int_of(c, at, v, &i) || int_of(c, at, dv, &d)) return -1;
    if (d == 0) return jerr(c, NIB_ERR_FORMAT, AT(at), "integer division or modulo by zero");
    *out = d == -1 || i % d == 0;
    return 0;
}

static int cmp_test(jctx *c, const jexpr *at, jv v, const jargs *a, int which, bool *out) {
    jv o;
    if (!jargs_get(a, 0, NULL, &o)) return jerr(c, NIB_ERR_FORMAT, AT(at), "comparison test needs an argument");
    if (which == 0) { *out = jv_equal(v, o); return 0; }
    if (which == 1) { *out = !jv_equal(v, o); return 0; }
    int r;
    if (jv_compare(c, AT(at), v, o, &r)) return -1;
    *out = which == 2 ? r < 0 : which == 3 ? r <= 0 : which == 4 ? r > 0 : r >= 0;
    return 0;
}
static int t_eq(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { return cmp_test(c, at, v, a, 0, out); }
static int t_ne(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { return cmp_test(c, at, v, a, 1, out); }
static int t_lt(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { return cmp_test(c, at, v, a, 2, out); }
static int t_le(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { return cmp_test(c, at, v, a, 3, out); }
static int t_gt(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { return cmp_test(c, at, v, a, 4, out); }
static int t_ge(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { return cmp_test(c, at, v, a, 5, out); }

static int t_in(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) {
    jv seq;
    if (!jargs_get(a, 0, "seq", &seq)) return jerr(c, NIB_ERR_FORMAT, AT(at), "in: needs a sequence");
    if (seq.kind == JV_STR) {
        jstr needle;
        if (want_str(c, at, v, "in", &needle)) return -1;
        *out = find_sub(seq.u.s, 0, needle) != NULL;
        return 0;
    }
    if (seq.kind == JV_DICT) { jv tmp; *out = jdict_get(seq.u.dict, v, &tmp); return 0; }
    jlist *l;
    if (to_list(c, at, seq, &l)) return -1;
    *out = false;
    for (size_t i = 0; i < l->n && !*out; i++) *out = jv_equal(l->v[i], v);
    return 0;
}

/* `is sameas`: Python identity. Singletons and small values compare by value,
 * containers by identity. */
static int t_sameas(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) {
    jv o;
    if (!jargs_get(a, 0, "other", &o)) return jerr(c, NIB_ERR_FORMAT, AT(at), "sameas: needs an argument");
    if (v.kind != o.kind) { *out = false; return 0; }
    switch (v.kind) {
    case JV_UNDEF: case JV_NONE: *out = true; break;
    case JV_BOOL: *out = v.u.b == o.u.b; break;
    case JV_INT: *out = v.u.i == o.u.i; break;
    case JV_STR: *out = v.u.s.p == o.u.s.p && v.u.s.n == o.u.s.n; break;
    case JV_LIST: *out = v.u.list == o.u.list; break;
    case JV_DICT: case JV_NS: *out = v.u.dict == o.u.dict; break;
    default: *out = jv_equal(v, o); break;
    }
    return 0;
}

static int case_test(jctx *c, const jexpr *at, jv v, bool want_lower, bool *out) {
    jstr s;
    if (soft_str(c, at, v, &s)) return -1;
    bool cased = false, ok = true;
    for (size_t i = 0; i < s.n && ok;) {
        size_t len;
        uint32_t cp = cp_at(s, i, &len);
        if (cp_is_cased(cp)) {
            cased = true;
            ok = want_lower ? !cp_is_upper(cp) : !cp_is_lower(cp);
        }
        i += len;
    }
    *out = cased && ok;
    return 0;
}
static int t_lower(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { (void)a; return case_test(c, at, v, true, out); }
static int t_upper(jctx *c, const jexpr *at, jv v, const jargs *a, bool *out) { (void)a; return case_test(c, at, v, false, out); }

/* Sorted by name (strcmp order) for bsearch. */
static const jtest_def tests[] = {
    {"!=", t_ne, 1},
    {"<", t_lt, 1},
    {"<=", t_le, 1},
    {"==", t_eq, 1},
    {">", t_gt, 1},
    {">=", t_ge, 1},
    {"boolean", t_boolean, 0},
    {"callable", t_callable, 0},
    {"defined", t_defined, 0},
    {"divisibleby", t_divisibleby, 1},
    {"eq", t_eq, 1},
    {"equalto", t_eq, 1},
    {"even", t_even, 0},
    {"false", t_false, 0},
    {"float", t_float, 0},
    {"ge", t_ge, 1},
    {"greaterthan", t_gt, 1},
    {"gt", t_gt, 1},
    {"in", t_in, 1},
    {"integer", t_integer, 0},
    {"iterable", t_iterable, 0},
    {"le", t_le, 1},
    {"lessthan", t_lt, 1},
    {"lower", t_lower, 0},
    {"lt", t_lt, 1},
    {"mapping", t_mapping, 0},
    {"ne", t_ne, 1},
    {"none", t_none, 0},
    {"number", t_number, 0},
    {"odd", t_odd, 0},
    {"sameas", t_sameas, 1},
    {"sequence", t_sequence, 0},
    {"string", t_string, 0},
    {"true", t_true, 0},
    {"undefined", t_undefined, 0},
    {"upper", t_upper, 0},
};

/* ---- methods ------------------------------------------------------------------------- */

static int m_strip(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return strip_common(c, at, self, a, true, true, "strip", out); }
static int m_lstrip(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return strip_common(c, at, self, a, true, false, "lstrip", out); }
static int m_rstrip(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return strip_common(c, at, self, a, false, true, "rstrip", out); }

/* startswith/endswith: a prefix, or a tuple of them. */
static int affix(jctx *c, const jexpr *at, jv self, const jargs *a, bool end, jv *out) {
    const char *what = end ? "endswith" : "startswith";
    jv pv;
    jstr s;
    if (jargs_check(c, at, what, a, 1, NULL) || want_str(c, at, self, what, &s)) return -1;
    if (!jargs_get(a, 0, NULL, &pv)) return jerr(c, NIB_ERR_FORMAT, AT(at), "%s: needs an argument", what);
    jv one[1] = {pv};
    jv *cands = one;
    size_t n = 1;
    if (pv.kind == JV_LIST && pv.u.list->is_tuple) { cands = pv.u.list->v; n = pv.u.list->n; }
    bool r = false;
    for (size_t i = 0; i < n && !r; i++) {
        jstr p;
        if (want_str(c, at, cands[i], what, &p)) return -1;
        r = p.n <= s.n && (p.n == 0 || memcmp(end ? s.p + s.n - p.n : s.p, p.p, p.n) == 0);
    }
    *out = jv_bool(r);
    return 0;
}
static int m_startswith(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return affix(c, at, self, a, false, out); }
static int m_endswith(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return affix(c, at, self, a, true, out); }

static int split_common(jctx *c, const jexpr *at, jv self, const jargs *a, bool from_right, jv *out) {
    static const char *const kw[] = {"sep", "maxsplit", NULL};
    const char *what = from_right ? "rsplit" : "split";
    jv sv, mv;
    jstr s, sep;
    int64_t maxsplit = -1;
    if (jargs_check(c, at, what, a, 2, kw) || want_str(c, at, self, what, &s)) return -1;
    bool has_sep = jargs_get(a, 0, "sep", &sv) && sv.kind != JV_NONE;
    if (has_sep && want_str(c, at, sv, what, &sep)) return -1;
    if (jargs_get(a, 1, "maxsplit", &mv) && want_int(c, at, mv, what, &maxsplit)) return -1;
    return str_split(c, at, s, has_sep ? &sep : NULL, maxsplit, from_right, out);
}
static int m_split(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return split_common(c, at, self, a, false, out); }
static int m_rsplit(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return split_common(c, at, self, a, true, out); }

static int m_case(jctx *c, const jexpr *at, jv self, const jargs *a, char mode, const char *what, jv *out) {
    jstr s;
    if (jargs_check(c, at, what, a, 0, NULL) || want_str(c, at, self, what, &s)) return -1;
    return case_map(c, s, mode, out);
}
static int m_upper(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return m_case(c, at, self, a, 'U', "upper", out); }
static int m_lower(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return m_case(c, at, self, a, 'L', "lower", out); }
static int m_capitalize(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return m_case(c, at, self, a, 'C', "capitalize", out); }

/* str.title(): a cased letter after an uncased character starts a word. */
static int m_title(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    jstr s;
    if (jargs_check(c, at, "title", a, 0, NULL) || want_str(c, at, self, "title", &s)) return -1;
    jbuf b = {0};
    bool prev_cased = false;
    for (size_t i = 0; i < s.n;) {
        size_t len;
        uint32_t cp = cp_at(s, i, &len);
        bool cased = cp_is_cased(cp);
        if (len == 1 && (unsigned char)s.p[i] >= 0x80) {
            if (jbuf_put(c, &b, s.p + i, 1)) return -1;
        } else if (put_cp(c, &b, cased ? (prev_cased ? cp_lower(cp) : cp_upper(cp)) : cp)) {
            return -1;
        }
        prev_cased = cased;
        i += len;
    }
    *out = str_val(&b);
    return 0;
}

static int m_replace(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    jv ov, nv, cv;
    jstr s, old, rep;
    int64_t count = -1;
    if (jargs_check(c, at, "replace", a, 3, NULL) || want_str(c, at, self, "replace", &s)) return -1;
    if (!jargs_get(a, 0, NULL, &ov) || !jargs_get(a, 1, NULL, &nv))
        return jerr(c, NIB_ERR_FORMAT, AT(at), "replace: needs old and new");
    if (want_str(c, at, ov, "replace", &old) || want_str(c, at, nv, "replace", &rep)) return -1;
    if (jargs_get(a, 2, NULL, &cv) && want_int(c, at, cv, "replace", &count)) return -1;
    return str_replace(c, s, old, rep, count, out);
}

/* find/rfind/index/rindex: code point offsets, -1 (or an error) if absent. */
static int find_common(jctx *c, const jexpr *at, jv self, const jargs *a, bool right, bool raise, jv *out) {
    const char *what = right ? (raise ? "rindex" : "rfind") : (raise ? "index" : "find");
    jv sv;
    jstr s, sub;
    if (jargs_check(c, at, what, a, 1, NULL) || want_str(c, at, self, what, &s)) return -1;
    if (!jargs_get(a, 0, NULL, &sv) || want_str(c, at, sv, what, &sub)) return jerr(c, NIB_ERR_FORMAT, AT(at), "%s: needs a string", what);
    const char *hit = right ? rfind_sub(s, s.n, sub) : find_sub(s, 0, sub);
    if (!hit) {
        if (raise) return jerr(c, NIB_ERR_FORMAT, AT(at), "substring not found");
        *out = jv_int(-1);
        return 0;
    }
    *out = jv_int((int64_t)utf8_len(s.p, (size_t)(hit - s.p)));
    return 0;
}
static int m_find(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return find_common(c, at, self, a, false, false, out); }
static int m_rfind(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return find_common(c, at, self, a, true, false, out); }
static int m_sindex(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return find_common(c, at, self, a, false, true, out); }

static int m_scount(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    jv sv;
    jstr s, sub;
    if (jargs_check(c, at, "count", a, 1, NULL) || want_str(c, at, self, "count", &s)) return -1;
    if (!jargs_get(a, 0, NULL, &sv) || want_str(c, at, sv, "count", &sub)) return jerr(c, NIB_ERR_FORMAT, AT(at), "count: needs a string");
    if (sub.n == 0) { *out = jv_int((int64_t)utf8_len(s.p, s.n) + 1); return 0; }
    int64_t n = 0;
    for (const char *h = find_sub(s, 0, sub); h; h = find_sub(s, (size_t)(h - s.p) + sub.n, sub)) n++;
    *out = jv_int(n);
    return 0;
}

static int m_join(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    jv iv;
    jstr sep;
    jlist *l;
    if (jargs_check(c, at, "join", a, 1, NULL) || want_str(c, at, self, "join", &sep)) return -1;
    if (!jargs_get(a, 0, NULL, &iv) || to_list(c, at, iv, &l)) return jerr(c, NIB_ERR_FORMAT, AT(at), "join: needs an iterable");
    jbuf b = {0};
    for (size_t i = 0; i < l->n; i++) {
        jstr item;
        if (want_str(c, at, l->v[i], "join", &item)) return -1;
        if ((i && jbuf_put(c, &b, sep.p, sep.n)) || jbuf_put(c, &b, item.p, item.n)) return -1;
    }
    *out = str_val(&b);
    return 0;
}

static int m_affix_remove(jctx *c, const jexpr *at, jv self, const jargs *a, bool suffix, jv *out) {
    const char *what = suffix ? "removesuffix" : "removeprefix";
    jv pv;
    jstr s, p;
    if (jargs_check(c, at, what, a, 1, NULL) || want_str(c, at, self, what, &s)) return -1;
    if (!jargs_get(a, 0, NULL, &pv) || want_str(c, at, pv, what, &p)) return jerr(c, NIB_ERR_FORMAT, AT(at), "%s: needs a string", what);
    bool hit = p.n <= s.n && (p.n == 0 || memcmp(suffix ? s.p + s.n - p.n : s.p, p.p, p.n) == 0);
    *out = hit ? jv_strn(suffix ? s.p : s.p + p.n, s.n - p.n) : self;
    return 0;
}
static int m_removeprefix(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return m_affix_remove(c, at, self, a, false, out); }
static int m_removesuffix(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return m_affix_remove(c, at, self, a, true, out); }

/* isdigit/isalpha/isalnum/isspace/islower/isupper: ASCII classes plus the
 * case tables above; false for "" as in Python. */
static int m_is(jctx *c, const jexpr *at, jv self, const jargs *a, char cls, jv *out) {
    jstr s;
    if (jargs_check(c, at, "is*", a, 0, NULL) || want_str(c, at, self, "is*", &s)) return -1;
    if (cls == 'l' || cls == 'u') {
        bool r;
        if (case_test(c, at, self, cls == 'l', &r)) return -1;
        *out = jv_bool(r);
        return 0;
    }
    bool ok = s.n > 0;
    for (size_t i = 0; i < s.n && ok;) {
        size_t len;
        uint32_t cp = cp_at(s, i, &len);
        bool digit = cp >= '0' && cp <= '9', alpha = cp_is_cased(cp);
        switch (cls) {
        case 'd': ok = digit; break;
        case 'a': ok = alpha; break;
        case 'n': ok = digit || alpha; break;
        default: ok = py_isspace_at(s.p, s.n, i, &len); break;
        }
        i += len;
    }
    *out = jv_bool(ok);
    return 0;
}
static int m_isdigit(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return m_is(c, at, self, a, 'd', out); }
static int m_isalpha(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return m_is(c, at, self, a, 'a', out); }
static int m_isalnum(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return m_is(c, at, self, a, 'n', out); }
static int m_isspace(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return m_is(c, at, self, a, 's', out); }
static int m_islower(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return m_is(c, at, self, a, 'l', out); }
static int m_isupper(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return m_is(c, at, self, a, 'u', out); }

static int m_items(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    if (jargs_check(c, at, "items", a, 0, NULL)) return -1;
    return items_of(c, at, self, out);
}

static int m_keys_values(jctx *c, const jexpr *at, jv self, const jargs *a, bool values, jv *out) {
    if (jargs_check(c, at, values ? "values" : "keys", a, 0, NULL)) return -1;
    const jdict *d = self.u.dict;
    if (!jv_list_new(c, out, d->n)) return -1;
    for (size_t i = 0; i < d->n; i++) out->u.list->v[out->u.list->n++] = values ? d->vals[i] : d->keys[i];
    return 0;
}
static int m_keys(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return m_keys_values(c, at, self, a, false, out); }
static int m_values(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) { return m_keys_values(c, at, self, a, true, out); }

static int m_get(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    jv key, dflt = jv_none();
    if (jargs_check(c, at, "get", a, 2, NULL)) return -1;
    if (!jargs_get(a, 0, NULL, &key)) return jerr(c, NIB_ERR_FORMAT, AT(at), "get: needs a key");
    jargs_get(a, 1, NULL, &dflt);
    if (!jdict_get(self.u.dict, key, out)) *out = dflt;
    return 0;
}

static int m_lindex(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    jv x;
    if (jargs_check(c, at, "index", a, 1, NULL) || !jargs_get(a, 0, NULL, &x)) return jerr(c, NIB_ERR_FORMAT, AT(at), "index: needs a value");
    for (size_t i = 0; i < self.u.list->n; i++)
        if (jv_equal(self.u.list->v[i], x)) { *out = jv_int((int64_t)i); return 0; }
    return jerr(c, NIB_ERR_FORMAT, AT(at), "list.index(x): x not in list");
}

static int m_lcount(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    jv x;
    if (jargs_check(c, at, "count", a, 1, NULL) || !jargs_get(a, 0, NULL, &x)) return jerr(c, NIB_ERR_FORMAT, AT(at), "count: needs a value");
    int64_t n = 0;
    for (size_t i = 0; i < self.u.list->n; i++) n += jv_equal(self.u.list->v[i], x);
    *out = jv_int(n);
    return 0;
}

/* loop.cycle(a, b, ...): the argument at loop.index0 modulo their count. */
static int m_cycle(jctx *c, const jexpr *at, jv self, const jargs *a, jv *out) {
    if (a->n_pos == 0) return jerr(c, NIB_ERR_FORMAT, AT(at), "loop.cycle: needs at least one value");
    *out = a->pos[self.u.loop->index0 % a->n_pos];
    return 0;
}

/* Sorted by (type, name) for bsearch. Mutating list/dict methods (append,
 * pop, update, ...) are absent on purpose: transformers renders in jinja2's
 * ImmutableSandboxedEnvironment, which refuses them. */
static const jmethod_def methods[] = {
    {JV_STR, "capitalize", m_capitalize},
    {JV_STR, "count", m_scount},
    {JV_STR, "endswith", m_endswith},
    {JV_STR, "find", m_find},
    {JV_STR, "index", m_sindex},
    {JV_STR, "isalnum", m_isalnum},
    {JV_STR, "isalpha", m_isalpha},
    {JV_STR, "isdigit", m_isdigit},
    {JV_STR, "islower", m_islower},
    {JV_STR, "isspace", m_isspace},
    {JV_STR, "isupper", m_isupper},
    {JV_STR, "join", m_join},
    {JV_STR, "lower", m_lower},
    {JV_STR, "lstrip", m_lstrip},
    {JV_STR, "removeprefix", m_removeprefix},
    {JV_STR, "removesuffix", m_removesuffix},
    {JV_STR, "replace", m_replace},
    {JV_STR, "rfind", m_rfind},
    {JV_STR, "rsplit", m_rsplit},
    {JV_STR, "rstrip", m_rstrip},
    {JV_STR, "split", m_split},
    {JV_STR, "startswith", m_startswith},
    {JV_STR, "strip", m_strip},
    {JV_STR, "title", m_title},
    {JV_STR, "upper", m_upper},
    {JV_LIST, "count", m_lcount},
    {JV_LIST, "index", m_lindex},
    {JV_DICT, "get", m_get},
    {JV_DICT, "items", m_items},
    {JV_DICT, "keys", m_keys},
    {JV_DICT, "values", m_values},
    {JV_LOOP, "cycle", m_cycle},
};

/* ---- global functions ----------------------------------------------------------------- */

/* raise_exception(msg): transformers' way for a template to reject a
 * conversation; the message is for the user, so it leads the error. */
static int g_raise_exception(jctx *c, const jexpr *at, const jargs *a, jv *out) {
    jv mv = jv_strn("", 0);
    jstr msg;
    (void)out;
    jargs_get(a, 0, "message", &mv);
    if (soft_str(c, at, mv, &msg)) return -1;
    return jerr(c, NIB_ERR_ARG, AT(at), "%.*s (raise_exception)", (int)(msg.n > 400 ? 400 : msg.n), msg.p);
}

/* strftime_now(fmt): transformers formats datetime.now(); C's strftime
 * takes the same codes (in the C locale, English month and day names). */
static int g_strftime_now(jctx *c, const jexpr *at, const jargs *a, jv *out) {
    jv fv;
    jstr fmt;
    if (jargs_check(c, at, "strftime_now", a, 1, NULL)) return -1;
    if (!jargs_get(a, 0, NULL, &fv) || want_str(c, at, fv, "strftime_now", &fmt))
        return jerr(c, NIB_ERR_FORMAT, AT(at), "strftime_now: needs a format string");
    char *f = jstrdup(c, fmt.p, fmt.n);
    if (!f) return -1;
    time_t t = (time_t)c->now_unix;
    struct tm tm;
    if (!(c->now_is_local ? localtime_r(&t, &tm) : gmtime_r(&t, &tm)))
        return jerr(c, NIB_ERR_FORMAT, AT(at), "strftime_now: time out of range");
    size_t cap = 64 + fmt.n * 16;
    char *buf = jalloc(c, cap);
    if (!buf) return -1;
    /* strftime returns 0 both for an empty result and for overflow; the
     * capacity above fits every conversion, so 0 means empty */
    size_t n = fmt.n ? strftime(buf, cap, f, &tm) : 0;
    *out = jv_strn(buf, n);
    return 0;
}

static int g_namespace(jctx *c, const jexpr *at, const jargs *a, jv *out) {
    if (jv_dict_new(c, out)) return -1;
    out->kind = JV_NS;
    if (a->n_pos > 1) return jerr(c, NIB_ERR_FORMAT, AT(at), "namespace: at most one positional argument");
    if (a->n_pos == 1) {
        jv src = a->pos[0];
        if (src.kind != JV_DICT && src.kind != JV_NS)
            return jerr(c, NIB_ERR_FORMAT, AT(at), "namespace: expected a mapping, got %s", jv_kind_name(src.kind));
        for (size_t i = 0; i < src.u.dict->n; i++)
            if (jdict_set(c, out->u.dict, src.u.dict->keys[i], src.u.dict->vals[i])) return -1;
    }
    for (int k = 0; k < a->n_kw; k++)
        if (jdict_set(c, out->u.dict, jv_strn(a->kw_names[k].p, a->kw_names[k].n), a->kw[k])) return -1;
    return 0;
}

static int g_dict(jctx *c, const jexpr *at, const jargs *a, jv *out) {
    if (g_namespace(c, at, a, out)) return -1;
    out->kind = JV_DICT;
    return 0;
}

/* range() as a list of its numbers that prints as "range(a, b)". */
static int g_range(jctx *c, const jexpr *at, const jargs *a, jv *out) {
    int64_t v[3] = {0, 0, 1};
    if (jargs_check(c, at, "range", a, 3, NULL)) return -1;
    if (a->n_pos == 0) return jerr(c, NIB_ERR_FORMAT, AT(at), "range expected at least 1 argument, got 0");
    for (int i = 0; i < a->n_pos; i++)
        if (want_int(c, at, a->pos[i], "range", &v[a->n_pos == 1 ? 1 : i])) return -1;
    if (v[2] == 0) return jerr(c, NIB_ERR_FORMAT, AT(at), "range() arg 3 must not be zero");
    double count = ceil(((double)v[1] - (double)v[0]) / (double)v[2]);
    if (count > JINJA_MAX_RANGE)
        return jerr(c, NIB_ERR_UNSUPPORTED, AT(at), "range of %.0f elements is over the limit (%d)", count, JINJA_MAX_RANGE);
    if (!jv_list_new(c, out, count > 0 ? (size_t)count : 0)) return -1;
    for (int64_t x = v[0]; v[2] > 0 ? x < v[1] : x > v[1]; x += v[2]) out->u.list->v[out->u.list->n++] = jv_int(x);
    out->u.list->is_range = true;
    out->u.list->range_start = v[0];
    out->u.list->range_stop = v[1];
    out->u.list->range_step = v[2];
    return 0;
}

const jfunc jinja_global_funcs[] = {
    {"dict", g_dict},
    {"namespace", g_namespace},
    {"raise_exception", g_raise_exception},
    {"range", g_range},
    {"strftime_now", g_strftime_now},
};
const int jinja_n_global_funcs = (int)(sizeof jinja_global_funcs / sizeof jinja_global_funcs[0]);

/* ---- lookup ----------------------------------------------------------------------------- */

static int name_cmp(jstr a, const char *b) {
    size_t bn = strlen(b), n = a.n < bn ? a.n : bn;
    int r = n ? memcmp(a.p, b, n) : 0;
    if (r) return r;
    return a.n < bn ? -1 : a.n > bn ? 1 : 0;
}

const jfilter_def *jinja_filter_find(jstr name) {
    size_t lo = 0, hi = sizeof filters / sizeof filters[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int r = name_cmp(name, filters[mid].name);
        if (r == 0) return &filters[mid];
        if (r < 0) hi = mid; else lo = mid + 1;
    }
    return NULL;
}

const jtest_def *jinja_test_find(jstr name) {
    size_t lo = 0, hi = sizeof tests / sizeof tests[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int r = name_cmp(name, tests[mid].name);
        if (r == 0) return &tests[mid];
        if (r < 0) hi = mid; else lo = mid + 1;
    }
    return NULL;
}

const jmethod_def *jinja_method_find(jv_kind on, jstr name) {
    if (on == JV_NS) return NULL;
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (methods[i].on == on && name_cmp(name, methods[i].name) == 0) return &methods[i];
    return NULL;
}


bool jinja_builtin_tables_ok(void) {
    for (size_t i = 1; i < sizeof filters / sizeof filters[0]; i++)
        if (strcmp(filters[i - 1].name, filters[i].name) >= 0 || !filters[i].fn) return false;
    for (size_t i = 1; i < sizeof tests / sizeof tests[0]; i++)
        if (strcmp(tests[i - 1].name, tests[i].name) >= 0 || !tests[i].fn) return false;
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++)
        if (jinja_filter_find(jstr_c(filters[i].name)) != &filters[i]) return false;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (jinja_test_find(jstr_c(tests[i].name)) != &tests[i]) return false;
    return true;
}
