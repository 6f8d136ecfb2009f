/* A model stored as several GGUF files ("splits"), as llama.cpp's gguf-split
 * and gguf-py's writer make them for large models:
 *
 *     NAME-00001-of-00003.gguf   all the metadata, some tensors
 *     NAME-00002-of-00003.gguf   the split keys only, more tensors
 *     NAME-00003-of-00003.gguf
 *
 * Every file carries split.no (0-based), split.count and split.tensors.count.
 * Opened from the first, the others are found beside it by that name pattern,
 * each read and checked as a file of its own, and their tensors join the
 * first file's table; the first's metadata is the model's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gguf/gguf_internal.h"

#define SPLIT_MAX 65535  /* split.count is a UINT16 in the format */
#define SPLIT_SUFFIX_FMT "-%05d-of-%05d.gguf"
#define SPLIT_SUFFIX_LEN 20 /* "-00001-of-00003.gguf" */

int nib_gguf_n_splits(const nib_gguf *g) { return g->n_splits > 1 ? g->n_splits : 1; }

int nib_gguf_tensor_split(const nib_gguf *g, int64_t i) {
    return g->tensor_split && i >= 0 && i < g->n_tensors ? g->tensor_split[i] : 0;
}

/* An integer split key in [lo, hi]; NIB_ERR_NOT_FOUND when absent. */
static nib_status split_key(const nib_gguf *g, const char *path, const char *key, int64_t lo, int64_t hi,
                            int64_t *out, nib_error *err) {
    nib_error e = {0};
    nib_status s = nib_gguf_get_int(g, key, out, &e);
    if (s == NIB_ERR_NOT_FOUND) return s;
    if (s != NIB_OK) return nib_error_set(err, NIB_ERR_FORMAT, "%s: %s", path, e.msg);
    if (*out < lo || *out > hi)
        return nib_error_set(err, NIB_ERR_FORMAT, "%s: %s = %lld is out of range [%lld, %lld]", path, key,
                             (long long)*out, (long long)lo, (long long)hi);
    return NIB_OK;
}

/* The name's length before "-0000K-of-0000N.gguf" if it ends so, else -1. */
static long split_prefix_len(const char *path, int k, int n) {
    char want[32];
    snprintf(want, sizeof want, SPLIT_SUFFIX_FMT, k, n);
    size_t len = strlen(path), wl = strlen(want);
    return len > wl && !strcmp(path + len - wl, want) ? (long)(len - wl) : -1;
}

/* One more split: opened, checked against its place, its tensors appended. */
static nib_status add_split(nib_gguf *g, const char *path, int no, int n, nib_error *err) {
    nib_error e = {0};
    nib_gguf *s = nib_gguf_open(path, &e);
    if (!s) return nib_error_set(err, e.status, "split %d of %d: %s", no + 1, n, e.msg);
    g->splits[no] = s;
    int64_t v;
    nib_status st = split_key(s, path, "split.no", 0, SPLIT_MAX - 1, &v, err);
    if (st == NIB_ERR_NOT_FOUND)
        return nib_error_set(err, NIB_ERR_FORMAT, "%s: split %d of %d has no split.no key", path, no + 1, n);
    if (st != NIB_OK) return st;
    if (v != no)
        return nib_error_set(err, NIB_ERR_FORMAT, "%s: the file says it is split %lld, but its name makes it split %d of %d",
                             path, (long long)v + 1, no + 1, n);
    if ((st = split_key(s, path, "split.count", 1, SPLIT_MAX, &v, err)) == NIB_ERR_NOT_FOUND)
        return nib_error_set(err, NIB_ERR_FORMAT, "%s: split %d of %d has no split.count key", path, no + 1, n);
    if (st != NIB_OK) return st;
    if (v != n)
        return nib_error_set(err, NIB_ERR_FORMAT, "%s: split.count is %lld, the first file's is %d", path, (long long)v, n);

    int64_t total = g->n_tensors + s->n_tensors;
    nib_gguf_tensor *t = realloc(g->tensors, (size_t)(total ? total : 1) * sizeof *t);
    if (t) g->tensors = t;
    uint64_t *o = realloc(g->tensor_info_offset, (size_t)(total ? total : 1) * sizeof *o);
    if (o) g->tensor_info_offset = o;
    int32_t *w = realloc(g->tensor_split, (size_t)(total ? total : 1) * sizeof *w);
    if (w) g->tensor_split = w;
    if (!t || !o || !w) return nib_error_set(err, NIB_ERR_NOMEM, "%s: out of memory for %lld tensors", path, (long long)total);
    for (int64_t i = 0; i < s->n_tensors; i++) {
        g->tensors[g->n_tensors + i] = s->tensors[i];
        g->tensor_info_offset[g->n_tensors + i] = s->tensor_info_offset[i];
        g->tensor_split[g->n_tensors + i] = no;
    }
    g->n_tensors = total;
    return NIB_OK;
}

/* Each file checked its own names; a name in two files is an error naming both. */
static nib_status check_unique(const nib_gguf *g, const char *const *paths, nib_error *err) {
    sort_item *v = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *v);
    if (!v) return nib_error_set(err, NIB_ERR_NOMEM, "out of memory checking %lld tensors", (long long)g->n_tensors);
    for (int64_t i = 0; i < g->n_tensors; i++) v[i] = (sort_item){g->tensors[i].name, 0, i};
    qsort(v, (size_t)g->n_tensors, sizeof *v, nib_gguf_sort_item_by_name);
    nib_status s = NIB_OK;
    for (int64_t i = 1; i < g->n_tensors && s == NIB_OK; i++)
        if (!nib_gguf_str_cmp(v[i - 1].name, v[i].name)) {
            nib_str n = v[i].name;
            s = nib_error_set(err, NIB_ERR_FORMAT, "tensor '%.*s' is in both %s and %s", (int)(n.len > 64 ? 64 : n.len),
                              n.ptr, paths[g->tensor_split[v[i - 1].i]], paths[g->tensor_split[v[i].i]]);
        }
    free(v);
    return s;
}

nib_gguf *nib_gguf_open_split(const char *path, nib_error *err) {
    nib_gguf *g = nib_gguf_open(path, err);
    if (!g) return NULL;
    int64_t n, no = 0, want_tensors;
    nib_status s = split_key(g, path, "split.count", 1, SPLIT_MAX, &n, err);
    if (s == NIB_ERR_NOT_FOUND) return g;  /* one file */
    if (s != NIB_OK) goto fail;
    if ((s = split_key(g, path, "split.no", 0, SPLIT_MAX - 1, &no, err)) == NIB_ERR_NOT_FOUND) no = 0, s = NIB_OK;
    if (s != NIB_OK) goto fail;
    if (no != 0) {
        long pl = split_prefix_len(path, (int)no + 1, (int)n);
        if (pl >= 0)
            nib_error_set(err, NIB_ERR_ARG, "%s is split %lld of %lld of a model; open the first: %.*s" SPLIT_SUFFIX_FMT,
                          path, (long long)no + 1, (long long)n, (int)pl, path, 1, (int)n);
        else
            nib_error_set(err, NIB_ERR_ARG, "%s is split %lld of %lld of a model; open the first split instead", path,
                          (long long)no + 1, (long long)n);
        s = NIB_ERR_ARG;
        goto fail;
    }
    if (n == 1) return g;
    long pl = split_prefix_len(path, 1, (int)n);
    if (pl < 0) {
        s = nib_error_set(err, NIB_ERR_ARG,
                          "%s is split 1 of %lld of a model, but its name does not end in -00001-of-%05lld.gguf, so "
                          "the other splits cannot be found (name them as they were written)",
                          path, (long long)n, (long long)n);
        goto fail;
    }
    g->splits = calloc((size_t)n, sizeof *g->splits);
    g->tensor_split = calloc((size_t)(g->n_tensors ? g->n_tensors : 1), sizeof *g->tensor_split);
    char **paths = calloc((size_t)n, sizeof *paths);
    if (!g->splits || !g->tensor_split || !paths) {
        free(paths);
        s = nib_error_set(err, NIB_ERR_NOMEM, "%s: out of memory for %lld splits", path, (long long)n);
        goto fail;
    }
    g->n_splits = (int)n;
    size_t plen = strlen(path) + 1;
    for (int k = 0; k < n && s == NIB_OK; k++) {
        if (!(paths[k] = malloc(plen))) {
            s = nib_error_set(err, NIB_ERR_NOMEM, "out of memory");
            break;
        }
        snprintf(paths[k], plen, "%.*s" SPLIT_SUFFIX_FMT, (int)pl, path, k + 1, (int)n);
        if (k > 0) s = add_split(g, paths[k], k, (int)n, err);
    }
    if (s == NIB_OK) s = check_unique(g, (const char *const *)paths, err);
    for (int k = 0; k < n; k++) free(paths[k]);
    free(paths);
    if (s != NIB_OK) goto fail;
    s = split_key(g, path, "split.tensors.count", 0, INT32_MAX, &want_tensors, err);
    if (s == NIB_OK && want_tensors != g->n_tensors)
        s = nib_error_set(err, NIB_ERR_FORMAT, "%s: split.tensors.count says %lld tensors, the %lld splits hold %lld", path,
                          (long long)want_tensors, (long long)n, (long long)g->n_tensors);
    if (s == NIB_ERR_NOT_FOUND) s = NIB_OK;
    if (s != NIB_OK) goto fail;
    return g;
fail:
    nib_gguf_close(g);
    return NULL;
}
