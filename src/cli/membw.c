/* A streaming-read bandwidth probe: every thread sums its own slice of a
 * buffer much larger than the caches; the best of a few passes is the
 * figure the bench's roofline divides by. */
#include "cli/membw.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROBE_BYTES (512u << 20)  /* far beyond any L3 */
#define PROBE_PASSES 5

typedef struct slice {
    const uint64_t *p;
    size_t n;
    uint64_t sum;
} slice;

static void *sum_slice(void *arg) {
    slice *s = arg;
    /* four independent chains so the adds never limit the loads */
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (size_t i = 0; i + 4 <= s->n; i += 4) {
        a += s->p[i], b += s->p[i + 1], c += s->p[i + 2], d += s->p[i + 3];
    }
    s->sum = a + b + c + d;
    return NULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double nib_membw_probe_gbs(int n_threads) {
    if (n_threads <= 0) n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (n_threads < 1) n_threads = 1;
    if (n_threads > 256) n_threads = 256;
    uint64_t *buf = malloc(PROBE_BYTES);
    if (!buf) return 0.0;
    memset(buf, 1, PROBE_BYTES);  /* touch every page before timing */
    size_t n = PROBE_BYTES / 8, per = n / (size_t)n_threads / 4 * 4;
    slice sl[256];
    pthread_t th[256];
    double best = 0.0;
    volatile uint64_t sink = 0;
    for (int pass = 0; pass < PROBE_PASSES; pass++) {
        double t0 = now_s();
        for (int t = 0; t < n_threads; t++) {
            sl[t] = (slice){buf + (size_t)t * per, per, 0};
            if (t > 0 && pthread_create(&th[t], NULL, sum_slice, &sl[t]) != 0) sum_slice(&sl[t]), th[t] = 0;
        }
        sum_slice(&sl[0]);
        for (int t = 1; t < n_threads; t++)
            if (th[t]) pthread_join(th[t], NULL);
        double dt = now_s() - t0;
        for (int t = 0; t < n_threads; t++) sink += sl[t].sum;
        double gbs = (double)per * 8.0 * n_threads / dt / 1e9;
        if (gbs > best) best = gbs;
    }
    (void)sink;
    free(buf);
    return best;
}
