/* A tiny test harness: TEST functions run by RUN(), CHECK()s inside them, and
 * a closing line "N passed, N failed, N skipped" that tests/run_*.sh collect.
 * A test passes when none of its checks failed; a skip says why. */
#ifndef NIB_TEST_H
#define NIB_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int test_passed, test_failed, test_skipped;
static int test_cur_failures;
static int test_cur_skipped;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            test_cur_failures++;                                              \
            if (test_cur_failures <= 10) {                                    \
                fprintf(stderr, "  FAIL %s:%d: ", __FILE__, __LINE__);        \
                fprintf(stderr, __VA_ARGS__);                                 \
                fputc('\n', stderr);                                          \
            }                                                                 \
        }                                                                     \
    } while (0)

#define SKIP(...)                                                             \
    do {                                                                      \
        test_cur_skipped = 1;                                                 \
        fprintf(stderr, "  SKIP: ");                                          \
        fprintf(stderr, __VA_ARGS__);                                         \
        fputc('\n', stderr);                                                  \
        return;                                                               \
    } while (0)

static inline void test_run(const char *name, void (*fn)(void)) {
    test_cur_failures = 0;
    test_cur_skipped = 0;
    fn();
    if (test_cur_skipped) {
        test_skipped++;
        printf("skip  %s\n", name);
    } else if (test_cur_failures) {
        test_failed++;
        printf("FAIL  %s (%d checks failed)\n", name, test_cur_failures);
    } else {
        test_passed++;
        printf("ok    %s\n", name);
    }
    fflush(stdout);
}
#define RUN(fn) test_run(#fn, fn)

static inline int test_summary(void) {
    printf("%d passed, %d failed, %d skipped\n", test_passed, test_failed, test_skipped);
    return test_failed ? 1 : 0;
}

/* ---- deterministic random numbers (splitmix64) ------------------------------ */

static uint64_t test_rng_state = 0x9e3779b97f4a7c15ull;

static inline uint64_t rng_u64(void) {
    uint64_t z = (test_rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline void rng_seed(uint64_t s) { test_rng_state = s * 0x2545f4914f6cdd1dull + 1; }
static inline double rng_uniform(void) { return (double)(rng_u64() >> 11) * (1.0 / 9007199254740992.0); }
/* Box-Muller; never returns exactly zero inputs to log */
static inline double rng_normal(void) {
    double u = rng_uniform() + 1e-300, v = rng_uniform();
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}
static inline void rng_bytes(void *p, size_t n) {
    uint8_t *b = p;
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)rng_u64();
}

#endif
