/* Shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c): the entry points
 * libFuzzer calls, and FUZZ_CHECK for the properties a harness asserts beyond
 * "no crash" (a failed check aborts, so libFuzzer saves the input). */
#ifndef NIB_TESTS_FUZZ_H
#define NIB_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond, ...)                                                   \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
            abort();                                                            \
        }                                                                       \
    } while (0)

/* Every error must say something: an empty message is a bug. */
static inline void fuzz_check_error(const nib_error *err, const char *what) {
    FUZZ_CHECK(err->msg[0] != 0, "%s failed with an empty message", what);
    FUZZ_CHECK(memchr(err->msg, 0, sizeof err->msg) != NULL, "%s: message not terminated", what);
}

/* Strictly valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF). */
static inline int fuzz_valid_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (!k || i + k > n) return 0;
        uint32_t cp = k == 1 ? c : k == 2 ? (c & 0x1F) : k == 3 ? (c & 0x0F) : (c & 0x07);
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (s[i + j] & 0x3F);
        }
        if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += k;
    }
    return 1;
}

#endif
