/* A persistent thread pool that runs one job on every thread and waits.
 *
 * A decode step is ~200 matrix products back to back, each a few tens of
 * microseconds; waking a sleeping thread through the kernel costs about as
 * much. So a job is published by bumping a generation counter that workers
 * watch: a worker that finished the previous job spins on it for a short while
 * (SPIN_NS) and only then sleeps on the condition variable.
 *
 * Shares are claimed, not assigned. Each index ith > 0 has a claim word; a
 * worker runs its share only after moving that word to the job's generation,
 * and the caller, once its own share 0 is done, claims and runs every share no
 * worker has claimed yet. So a worker that is descheduled (a machine with more
 * busy threads than cores) or still waking up costs nothing: the caller does
 * its share and only waits for shares that are actually running. Measured on a
 * busy 2-core VM before this: a 2-thread matvec took 3x the 1-thread time,
 * the caller waiting a scheduler tick for a worker that had not started.
 *
 * Nothing is allocated per run: the job is two pointers in the pool struct.
 * nib_pool_run is not reentrant: one caller at a time (the forward pass).
 */
#include "cpu/cpu.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"

/* How long a worker keeps polling after a job before it sleeps. Long enough
 * to cover the gap between two matmuls of one token (norms, attention of a
 * small model, sampling take 10-100 us), short enough that an idle pool stops
 * burning CPU almost at once. */
#define SPIN_NS 200000

/* Upper bound on threads, against a typo like nib_pool_new(100000). */
#define MAX_THREADS 512

typedef void (*pool_fn)(void *ctx, int ith, int nth);

typedef struct pool_worker {
    nib_pool *pool;
    pthread_t thread;
    int ith;
} pool_worker;

struct nib_pool {
    int n_threads;              /* the caller included */
    pool_worker *workers;       /* n_threads - 1 of them */
    int n_started;

    /* the job: written by the caller before `generation` is bumped (release),
     * read by workers after they see the new generation (acquire) */
    pool_fn fn;
    void *ctx;
    atomic_uint generation;
    atomic_uint *claimed;       /* [n_threads]: generation each share was last claimed for */
    atomic_int pending;         /* claimed shares (other than 0) yet to finish */
    atomic_bool stop;

    pthread_mutex_t lock;       /* guards the sleep/wake handshake only */
    pthread_cond_t wake;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits until the generation differs from `seen` (or stop); returns it. */
static unsigned wait_for_job(nib_pool *p, unsigned seen) {
    uint64_t t0 = 0;
    for (unsigned spins = 0;; spins++) {
        unsigned g = atomic_load_explicit(&p->generation, memory_order_acquire);
        if (g != seen || atomic_load_explicit(&p->stop, memory_order_acquire)) return g;
        cpu_relax();
        /* read the clock only now and then: it costs more than a pause */
        if ((spins & 255) == 255) {
            uint64_t t = now_ns();
            if (t0 == 0) t0 = t;
            else if (t - t0 > SPIN_NS) break;
        }
    }
    /* Sleep. The generation is re-read under the lock, and the caller bumps it
     * before taking the lock to broadcast, so a bump between our last poll and
     * the wait cannot be missed. */
    pthread_mutex_lock(&p->lock);
    unsigned g;
    while ((g = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen &&
           !atomic_load_explicit(&p->stop, memory_order_acquire))
        pthread_cond_wait(&p->wake, &p->lock);
    pthread_mutex_unlock(&p->lock);
    return g;
}

/* Claim share i for job g: true for exactly one caller per (i, g). A claim
 * word older than g is moved to g; one already at g (or at a later job, for a
 * worker that slept through several) means someone else has it. Generations
 * are compared by signed difference, so wrap-around is harmless. */
static bool claim_share(nib_pool *p, int i, unsigned g) {
    unsigned c = atomic_load_explicit(&p->claimed[i], memory_order_relaxed);
    while ((int)(g - c) > 0)
        if (atomic_compare_exchange_weak_explicit(&p->claimed[i], &c, g, memory_order_acq_rel, memory_order_relaxed))
            return true;
    return false;
}

static void *worker_main(void *arg) {
    pool_worker *w = arg;
    nib_pool *p = w->pool;
    /* Not a load of the counter: the caller may already have published the
     * first job before this thread got to run, and that job must not be
     * mistaken for "the one already seen". No job exists before the threads do. */
    unsigned seen = 0;
    for (;;) {
        seen = wait_for_job(p, seen);
        if (atomic_load_explicit(&p->stop, memory_order_acquire)) break;
        /* Only a successful claim makes fn and ctx safe to read: job `seen`
         * cannot finish while a share claimed for it is running. */
        if (!claim_share(p, w->ith, seen)) continue;
        p->fn(p->ctx, w->ith, p->n_threads);
        atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel);
    }
    return NULL;
}

static int online_cpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n < MAX_THREADS ? n : MAX_THREADS) : 1;
}

nib_pool *nib_pool_new(int n_threads, nib_error *err) {
    if (n_threads <= 0) n_threads = online_cpus();
    if (n_threads > MAX_THREADS) {
        nib_error_set(err, NIB_ERR_ARG, "thread pool: %d threads requested, at most %d", n_threads, MAX_THREADS);
        return NULL;
    }
    nib_pool *p = calloc(1, sizeof *p);
    if (!p) {
        nib_error_set(err, NIB_ERR_NOMEM, "thread pool: out of memory");
        return NULL;
    }
    p->n_threads = n_threads;
    atomic_init(&p->generation, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->stop, false);
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        nib_error_set(err, NIB_ERR_NOMEM, "thread pool: pthread_mutex_init failed");
        return NULL;
    }
    if (pthread_cond_init(&p->wake, NULL) != 0) {
        pthread_mutex_destroy(&p->lock);
        free(p);
        nib_error_set(err, NIB_ERR_NOMEM, "thread pool: pthread_cond_init failed");
        return NULL;
    }
    p->claimed = calloc((size_t)n_threads, sizeof *p->claimed);
    if (!p->claimed) {
        nib_pool_free(p);
        nib_error_set(err, NIB_ERR_NOMEM, "thread pool: out of memory");
        return NULL;
    }
    for (int i = 0; i < n_threads; i++) atomic_init(&p->claimed[i], 0);
    if (n_threads > 1) {
        p->workers = calloc((size_t)(n_threads - 1), sizeof *p->workers);
        if (!p->workers) {
            nib_pool_free(p);
            nib_error_set(err, NIB_ERR_NOMEM, "thread pool: out of memory");
            return NULL;
        }
    }
    for (int i = 0; i < n_threads - 1; i++) {
        pool_worker *w = &p->workers[i];
        w->pool = p;
        w->ith = i + 1;
        int rc = pthread_create(&w->thread, NULL, worker_main, w);
        if (rc != 0) {
            nib_pool_free(p);
            nib_error_set(err, NIB_ERR_NOMEM, "thread pool: could not start thread %d of %d (error %d)", i + 1,
                          n_threads, rc);
            return NULL;
        }
        p->n_started++;
    }
    return p;
}

void nib_pool_free(nib_pool *p) {
    if (!p) return;
    atomic_store_explicit(&p->stop, true, memory_order_release);
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_started; i++) pthread_join(p->workers[i].thread, NULL);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p->workers);
    free(p->claimed);
    free(p);
}

int nib_pool_size(const nib_pool *p) { return p ? p->n_threads : 1; }

void nib_pool_run(nib_pool *p, void (*fn)(void *ctx, int ith, int nth), void *ctx) {
    if (!p || p->n_threads == 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->pending, p->n_threads - 1, memory_order_relaxed);
    /* publishes fn, ctx and pending to every worker that sees the new value */
    const unsigned g = atomic_fetch_add_explicit(&p->generation, 1, memory_order_release) + 1;
    /* Sleepers need the condition variable; spinners will see the counter.
     * An uncontended lock + broadcast with no waiter is cheap (no syscall). */
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    fn(ctx, 0, p->n_threads);
    /* the shares no worker has picked up yet are ours too */
    for (int i = 1; i < p->n_threads; i++) {
        if (claim_share(p, i, g)) {
            fn(ctx, i, p->n_threads);
            atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel);
        }
    }

    /* Wait for the shares that are running. They are as long as ours, so this
     * is short; yield now and then in case the machine has fewer cores than
     * threads and we are spinning on the core a worker needs. */
    for (unsigned spins = 1; atomic_load_explicit(&p->pending, memory_order_acquire) != 0; spins++) {
        cpu_relax();
        if ((spins & 4095) == 0) sched_yield();
    }
}
