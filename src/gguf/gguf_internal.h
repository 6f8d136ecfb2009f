/* The opened file; shared by the reader and the accessors only. */
#ifndef NIB_GGUF_INTERNAL_H
#define NIB_GGUF_INTERNAL_H

#include <stdio.h>

#include "nib.h"

struct nib_gguf {
    const uint8_t *base;   /* the whole file */
    uint64_t size;
    void *mapped;          /* non-NULL when we own an mmap */
    size_t mapped_size;

    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;  /* file offset of the data section */

    int64_t n_kv;
    nib_gguf_kv *kvs;            /* (n_kv) */
    nib_str **owned_strs;        /* (n_owned_strs) string-array views we allocated */
    int64_t n_owned_strs;

    int64_t n_tensors;
    nib_gguf_tensor *tensors;    /* (n_tensors) */
    uint64_t *tensor_info_offset;/* (n_tensors) file offset of each tensor's info, for messages */

    /* a split model opened from its first file (gguf_split.c): the other
     * files, owned here, and which file holds each tensor; else 0 and NULL */
    int n_splits;
    struct nib_gguf **splits;    /* (n_splits) [0] unused: this file */
    int32_t *tensor_split;       /* (n_tensors) */
};

/* Byte order, then length: the order names and keys are checked in. */
int nib_gguf_str_cmp(nib_str a, nib_str b);

/* Sort keys carry their own copy of what they sort by: qsort has no context
 * argument in C11 and a static would make opening files not thread-safe. */
typedef struct sort_item {
    nib_str name;
    uint64_t offset;
    int64_t i;
} sort_item;
int nib_gguf_sort_item_by_name(const void *a, const void *b); /* qsort's comparator of sort_items by name */

#endif
