/* Returned errors: a status and a message that names the problem. */
#ifndef NIB_CORE_ERROR_H
#define NIB_CORE_ERROR_H

#include "nib.h"

#if defined(__GNUC__)
#define NIB_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define NIB_PRINTF(a, b)
#endif

/* Fill err (which may be NULL) and return status, so callers can write
 * `return nib_error_set(err, NIB_ERR_FORMAT, "...", ...);`. */
nib_status nib_error_set(nib_error *err, nib_status status, const char *fmt, ...) NIB_PRINTF(3, 4);

/* Checked size arithmetic: false on overflow, *out untouched. */
static inline int nib_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
    if (a != 0 && b > UINT64_MAX / a) return 0;
    *out = a * b;
    return 1;
}
static inline int nib_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
    if (b > UINT64_MAX - a) return 0;
    *out = a + b;
    return 1;
}

#endif
