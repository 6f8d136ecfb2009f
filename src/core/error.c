#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>

nib_status nib_error_set(nib_error *err, nib_status status, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}
