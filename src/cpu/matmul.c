/* Matrix products Y = X W^T on the CPU, and row lookup.
 *
 * Two phases, each one nib_pool_run:
 *  1. Quantize every X row once to the weight format's activation type
 *     (Q8_0, Q8_1 or Q8_K) into the caller's scratch; threads split the
 *     tokens. Float weight formats skip this and read X directly.
 *  2. Threads split the output rows into chunks and claim them from an
 *     atomic counter: a thread that gets less of a core than the others (a
 *     busy machine, a thread that woke late) simply claims fewer chunks. No
 *     chunk is pre-assigned, and a worker that is not scheduled at all costs
 *     nothing: the pool hands its (empty) share to the caller (threadpool.c).
 *
 * For several tokens a chunk is walked token block by token block, and inside
 * a block every weight row is dotted with all the block's tokens before the
 * next row: the row (a few KB) is then read from memory once and from L1 for
 * the other tokens, and the block's activations (sized to fit in L2) are
 * reused by every row of the chunk. Four tokens at a time go through the
 * kernel's x4 form where it has one, which decodes each weight block once for
 * all four, or two rows at a time through its 2x4 form, which also loads each
 * activation block once for both rows. Prompt processing is bound by arithmetic this way, not by reading
 * the weights once per token.
 *
 * Weights repacked at load (cpu/repack.h, nib_cpu_matmul_packed) go the same
 * way in groups of the layout's rows: each group against four tokens a call.
 * The lattice formats, whose blocks cost more to decode than to dot, are
 * decoded ahead for prompts instead (matmul_chunk_decoded): 8 rows at a
 * time into integers on the stack, once per token block, then dotted with
 * all of its tokens.
 *
 * Nothing here allocates: the job lives on the caller's stack and the
 * activations in the caller's scratch.
 */
#include <stdatomic.h>
#include <string.h>

#include "cpu/cpu_internal.h"
#include "cpu/repack.h"

/* Cache budget for a token block's activations and for a chunk's weights
 * when several tokens are processed: a quarter of a typical 1-2 MB L2 each,
 * leaving room for the rest. */
#define L2_BUDGET_BYTES (256 * 1024)

/* Chunks per thread to aim for, so uneven progress (another process, SMT
 * siblings, a slower core) evens out without many atomic claims. */
#define CHUNKS_PER_THREAD 4

typedef struct quantize_job {
    nib_quantize_fn quantize;
    const float *X;
    int64_t n_in, n_tok;
    uint8_t *A;
    size_t a_row_bytes;
} quantize_job;

static void quantize_rows(void *arg, int ith, int nth) {
    const quantize_job *j = arg;
    const int64_t t0 = j->n_tok * ith / nth, t1 = j->n_tok * (ith + 1) / nth;
    for (int64_t t = t0; t < t1; t++) j->quantize(j->X + t * j->n_in, j->A + (size_t)t * j->a_row_bytes, j->n_in);
}

typedef struct matmul_job {
    nib_vec_dot_fn vec_dot;
    cpu_vec_dot_x4_fn vec_dot_x4;   /* NULL: one token at a time */
    cpu_vec_dot_2x4_fn vec_dot_2x4; /* NULL: one row at a time */
    cpu_decode_x8_fn decode_x8;     /* set: 8 rows at a time decoded ahead (cpu_internal.h) */
    cpu_packed_dot_fn decoded_dot;
    size_t decoded_bytes;
    cpu_packed_dot_fn packed_dot;   /* set: W is packed, groups of packed_rows rows */
    int packed_rows;
    const uint8_t *W;
    size_t w_row_bytes;             /* packed: bytes of one group */
    const uint8_t *A;           /* activations: quantized rows, or X itself */
    size_t a_row_bytes;
    int64_t n_in, n_out, n_tok;
    float *Y;
    int64_t chunk_rows, n_chunks;
    int64_t tok_block;          /* tokens per block (see the header comment) */
    atomic_llong next_chunk;
} matmul_job;

/* Decode reads each weight byte once, from DRAM. Without help a core
 * alternates between waiting for a row and computing on it (its time was about
 * compute + transfer); asking for the row PREFETCH_ROWS ahead lets the two
 * overlap. Measured with bench/cpu_matmul.c --matvec on a 16-core Xeon with
 * AVX-512 (AVX2 kernels, us per matvec, 0 rows -> 2 rows ahead):
 *   Q8_0 576x1536   1 thread 179 -> 116-130, 8 threads 32-36 -> 23
 *   Q8_0 4096x4096  1 thread 3300-3600 -> 2100-2400, 8 threads 510-570 -> 325-360
 *   Q6_K 1536x576   1 thread 161-167 -> 108, 8 threads 28-29 -> 21
 * 1 and 4 rows ahead were between or worse. On a 2-core Zen 1 VM (busy, so
 * only indicative) it was neutral on the small shapes and 5-25% slower on
 * 4096x4096. NIB_CPU_PREFETCH_ROWS=0 at build time turns it off, for the lab. */
#ifndef NIB_CPU_PREFETCH_ROWS
#define NIB_CPU_PREFETCH_ROWS 2
#endif
#define PREFETCH_ROWS NIB_CPU_PREFETCH_ROWS

static inline void prefetch_row(const uint8_t *p, size_t bytes, int in_chunk) {
    if (PREFETCH_ROWS == 0 || !in_chunk) return;
    for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off, 0, 3);
}

/* A chunk of packed groups: each group against up to four tokens at a time,
 * token blocks as below (chunk_rows is whole groups). */
static void matmul_chunk_packed(const matmul_job *j, int64_t r0, int64_t r1) {
    const int R = j->packed_rows;
    for (int64_t t0 = 0; t0 < j->n_tok; t0 += j->tok_block) {
        const int64_t t1 = t0 + j->tok_block < j->n_tok ? t0 + j->tok_block : j->n_tok;
        const uint8_t *w = j->W + (size_t)(r0 / R) * j->w_row_bytes;
        for (int64_t r = r0; r < r1; r += R, w += j->w_row_bytes) {
            prefetch_row(w + j->w_row_bytes, j->w_row_bytes, j->n_tok == 1 && r + R < r1);
            const uint8_t *a = j->A + (size_t)t0 * j->a_row_bytes;
            for (int64_t t = t0; t < t1; t += 4, a += 4 * j->a_row_bytes) {
                const int nt = t1 - t < 4 ? (int)(t1 - t) : 4;
                float out[4 * 16];
                j->packed_dot(j->n_in, w, a, j->a_row_bytes, nt, out);
                for (int k = 0; k < nt; k++) memcpy(j->Y + (t + k) * j->n_out + r, out + k * R, (size_t)R * sizeof(float));
            }
        }
    }
}

/* Decoded ahead (cpu_kernel.decode_x8), for several tokens: each group of 8
 * rows is decoded a few super-blocks at a time into a buffer on the stack
 * (2.6-6.4 KB a super-block, DECODE_BUF_BYTES) and every token dotted with the piece, four
 * at a time, so a block is decoded once a call. Not in token blocks: the
 * decoding is the dear part here (a third of the kernel's time when
 * Llama-3.2-1B's 8192-wide rows were decoded once per 28-token block), and
 * a piece's activations for a 512-token chunk (1.2 MB) stream from L3
 * fast enough. A token's piece sums are added into Y in piece order,
 * whatever the batch. Returns the first row it left (the last chunk's
 * n_out % 8 rows go the usual way). */
#define DECODE_BUF_BYTES (8 * 2592) /* 8 super-blocks of block_i8x8, 3 of the AVX2 form: ~20 KB of stack */
#define DECODE_MIN_TOKENS 4
NIB_STATIC_ASSERT(DECODE_BUF_BYTES >= CPU_DECODED_MAX_BYTES, "the buffer takes a decoded super-block of any form");
static int64_t matmul_chunk_decoded(const matmul_job *j, int64_t r0, int64_t r1) {
    _Alignas(64) uint8_t buf[DECODE_BUF_BYTES];
    const int64_t nb = j->n_in / QK_K, per = (int64_t)(DECODE_BUF_BYTES / j->decoded_bytes);
    const size_t a_blk = j->a_row_bytes / (size_t)nb; /* one Q8_K block */
    int64_t r = r0;
    for (; r + Q4_KX8_ROWS <= r1; r += Q4_KX8_ROWS) {
        const uint8_t *w = j->W + (size_t)r * j->w_row_bytes;
        for (int64_t b0 = 0; b0 < nb; b0 += per) {
            const int n_blk = nb - b0 < per ? (int)(nb - b0) : (int)per;
            for (int k = 0; k < n_blk; k++) j->decode_x8(w, j->w_row_bytes, b0 + k, buf + (size_t)k * j->decoded_bytes);
            const uint8_t *a = j->A + (size_t)b0 * a_blk;
            for (int64_t t = 0; t < j->n_tok; t += 4, a += 4 * j->a_row_bytes) {
                const int nt = j->n_tok - t < 4 ? (int)(j->n_tok - t) : 4;
                float out[4 * Q4_KX8_ROWS];
                j->decoded_dot((int64_t)n_blk * QK_K, buf, a, j->a_row_bytes, nt, out);
                for (int k = 0; k < nt; k++) {
                    float *y = j->Y + (t + k) * j->n_out + r;
                    for (int q = 0; q < Q4_KX8_ROWS; q++) y[q] = b0 ? y[q] + out[k * Q4_KX8_ROWS + q] : out[k * Q4_KX8_ROWS + q];
                }
            }
        }
    }
    return r;
}

static void matmul_chunk(const matmul_job *j, int64_t c) {
    int64_t r0 = c * j->chunk_rows;
    const int64_t r1 = r0 + j->chunk_rows < j->n_out ? r0 + j->chunk_rows : j->n_out;
    if (j->packed_dot) {
        matmul_chunk_packed(j, r0, r1);
        return;
    }
    if (j->decode_x8 && j->n_tok >= DECODE_MIN_TOKENS && (r0 = matmul_chunk_decoded(j, r0, r1)) == r1) return;
    if (j->n_tok == 1) {
        const uint8_t *w = j->W + (size_t)r0 * j->w_row_bytes;
        for (int64_t r = r0; r < r1; r++, w += j->w_row_bytes) {
            prefetch_row(w + PREFETCH_ROWS * j->w_row_bytes, j->w_row_bytes, r + PREFETCH_ROWS < r1);
            j->Y[r] = j->vec_dot(j->n_in, w, j->A);
        }
        return;
    }
    for (int64_t t0 = 0; t0 < j->n_tok; t0 += j->tok_block) {
        const int64_t t1 = t0 + j->tok_block < j->n_tok ? t0 + j->tok_block : j->n_tok;
        const uint8_t *w = j->W + (size_t)r0 * j->w_row_bytes;
        int64_t r = r0;
        /* two rows at a time where the kernel has the form: each group of
         * four tokens is loaded once for both rows */
        if (j->vec_dot_2x4 && t1 - t0 >= 4) {
            for (; r + 2 <= r1; r += 2, w += 2 * j->w_row_bytes) {
                const uint8_t *a = j->A + (size_t)t0 * j->a_row_bytes;
                int64_t t = t0;
                for (; t + 4 <= t1; t += 4, a += 4 * j->a_row_bytes) {
                    float out[8];
                    j->vec_dot_2x4(j->n_in, w, j->w_row_bytes, a, j->a_row_bytes, out);
                    for (int k = 0; k < 4; k++) {
                        j->Y[(t + k) * j->n_out + r] = out[k];
                        j->Y[(t + k) * j->n_out + r + 1] = out[4 + k];
                    }
                }
                for (; t < t1; t++, a += j->a_row_bytes) {
                    j->Y[t * j->n_out + r] = j->vec_dot(j->n_in, w, a);
                    j->Y[t * j->n_out + r + 1] = j->vec_dot(j->n_in, w + j->w_row_bytes, a);
                }
            }
        }
        for (; r < r1; r++, w += j->w_row_bytes) {
            const uint8_t *a = j->A + (size_t)t0 * j->a_row_bytes;
            int64_t t = t0;
            if (j->vec_dot_x4) {
                for (; t + 4 <= t1; t += 4, a += 4 * j->a_row_bytes) {
                    float out[4];
                    j->vec_dot_x4(j->n_in, w, a, j->a_row_bytes, out);
                    for (int k = 0; k < 4; k++) j->Y[(t + k) * j->n_out + r] = out[k];
                }
            }
            for (; t < t1; t++, a += j->a_row_bytes) j->Y[t * j->n_out + r] = j->vec_dot(j->n_in, w, a);
        }
    }
}

static void matmul_rows(void *arg, int ith, int nth) {
    matmul_job *j = arg;
    (void)ith, (void)nth;
    for (int64_t c; (c = atomic_fetch_add_explicit(&j->next_chunk, 1, memory_order_relaxed)) < j->n_chunks;)
        matmul_chunk(j, c);
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Bytes of one activation row, or 0 when n_in is not whole activation blocks. */
static size_t act_row_bytes(const cpu_kernel *k, int64_t n_in) {
    if (n_in % k->act_block_elems != 0) return 0;
    return (size_t)(n_in / k->act_block_elems) * k->act_block_bytes;
}

/* A packed layout may read another activation than the format's own. */
static void packed_act(cpu_kernel *k, const cpu_packed *p) {
    if (!p || !p->act_quantize) return;
    k->quantize = p->act_quantize, k->act_block_bytes = p->act_block_bytes, k->act_block_elems = p->act_block_elems;
}

size_t nib_cpu_matmul_scratch_bytes(nib_type wtype, int64_t n_in, int64_t n_tok) {
    cpu_kernel k;
    if (!cpu_kernel_get(wtype, &k) || k.act_f32 || n_in <= 0 || n_tok <= 0) return 0;
    size_t row = act_row_bytes(&k, n_in);
    if (row == 0) return 0;
    /* enough for the activation of a packed copy made at any level too */
    for (int l = NIB_SIMD_SCALAR; l <= (int)nib_cpu_detect_simd(); l++) {
        cpu_packed p;
        cpu_kernel kp = k;
        if (!cpu_packed_get_at(wtype, (nib_simd_level)l, &p)) continue;
        packed_act(&kp, &p);
        const size_t r = act_row_bytes(&kp, n_in);
        if (r > row) row = r;
    }
    if ((uint64_t)n_tok > SIZE_MAX / row) return 0;
    return row * (size_t)n_tok;
}

/* Both entry points: checks, the activations' quantization, the chunking.
 * packed: W holds groups of packed->rows rows (nib_cpu_repack), else rows. */
static nib_status matmul_run(nib_pool *pool, nib_type wtype, const cpu_packed *packed, const void *W, int64_t n_in,
                             int64_t n_out, const float *X, int64_t n_tok, float *Y, void *scratch) {
    cpu_kernel k;
    if (!cpu_kernel_get(wtype, &k)) return NIB_ERR_UNSUPPORTED;
    packed_act(&k, packed);
    size_t w_row_bytes;
    if (n_in <= 0 || n_out < 0 || n_tok < 0 || !nib_row_bytes(wtype, n_in, &w_row_bytes)) return NIB_ERR_ARG;
    if (packed && (n_in % packed->block_elems || n_out % packed->rows)) return NIB_ERR_ARG;
    if (n_out == 0 || n_tok == 0) return NIB_OK;
    if (!W || !X || !Y) return NIB_ERR_ARG;
    const size_t a_row = act_row_bytes(&k, n_in);
    if (a_row == 0) return NIB_ERR_ARG;

    const uint8_t *A = (const uint8_t *)X;
    if (!k.act_f32) {
        if (!scratch) return NIB_ERR_ARG;
        quantize_job q = {k.quantize, X, n_in, n_tok, scratch, a_row};
        /* one row is a few microseconds: not worth waking the pool for */
        if (n_tok == 1) quantize_rows(&q, 0, 1);
        else nib_pool_run(pool, quantize_rows, &q);
        A = scratch;
    }

    const int nth = nib_pool_size(pool);
    matmul_job j = {
        .vec_dot = k.vec_dot, .vec_dot_x4 = k.vec_dot_x4, .vec_dot_2x4 = k.vec_dot_2x4,
        .W = W, .w_row_bytes = w_row_bytes, .A = A, .a_row_bytes = a_row,
        .n_in = n_in, .n_out = n_out, .n_tok = n_tok, .Y = Y,
    };
    /* a multiple of 4 keeps neighbouring threads' output writes mostly off
     * each other's cache lines; packed chunks are whole groups */
    int64_t align = 4;
    if (k.decode_x8 && n_tok >= DECODE_MIN_TOKENS && n_in % QK_K == 0) {
        j.decode_x8 = k.decode_x8, j.decoded_dot = k.decoded_dot, j.decoded_bytes = k.decoded_bytes;
        align = Q4_KX8_ROWS;
    }
    if (packed) {
        j.packed_dot = packed->dot, j.packed_rows = packed->rows;
        j.w_row_bytes = (size_t)(n_in / packed->block_elems) * packed->group_block_bytes;
        align = packed->rows;
    }
    /* Rows per chunk: an even share split CHUNKS_PER_THREAD ways; with several
     * tokens also small enough that the chunk's weights stay in L2 while the
     * token blocks go by. */
    int64_t rows = ceil_div(n_out, (int64_t)nth * CHUNKS_PER_THREAD);
    if (n_tok > 1) {
        const int64_t fit = (int64_t)(L2_BUDGET_BYTES / w_row_bytes);
        if (rows > fit) rows = fit;
    }
    rows = ceil_div(rows < 1 ? 1 : rows, align) * align;
    j.chunk_rows = rows;
    j.n_chunks = ceil_div(n_out, rows);
    /* tokens per block: what fits the budget, in whole groups of four for the x4 kernels */
    int64_t tb = (int64_t)(L2_BUDGET_BYTES / a_row);
    if (tb >= 8) tb -= tb % 4;
    j.tok_block = tb < 1 ? 1 : (tb > n_tok ? n_tok : tb);
    atomic_init(&j.next_chunk, 0);
    nib_pool_run(pool, matmul_rows, &j);
    return NIB_OK;
}

nib_status nib_cpu_matmul(nib_pool *pool, nib_type wtype, const void *W, int64_t n_in, int64_t n_out,
                          const float *X, int64_t n_tok, float *Y, void *scratch) {
    return matmul_run(pool, wtype, NULL, W, n_in, n_out, X, n_tok, Y, scratch);
}

nib_status nib_cpu_matmul_packed(nib_pool *pool, nib_type wtype, nib_simd_level layout, const void *P, int64_t n_in,
                                 int64_t n_out, const float *X, int64_t n_tok, float *Y, void *scratch) {
    cpu_packed p;
    if (layout > nib_cpu_detect_simd() || !cpu_packed_get_at(wtype, layout, &p)) return NIB_ERR_UNSUPPORTED;
    return matmul_run(pool, wtype, &p, P, n_in, n_out, X, n_tok, Y, scratch);
}

nib_status nib_cpu_get_row(nib_type wtype, const void *W, int64_t n_in, int64_t row, float *out) {
    const nib_type_traits *tt = nib_type_traits_get((int)wtype);
    if (!tt) return NIB_ERR_UNSUPPORTED;
    size_t row_bytes;
    if (n_in <= 0 || row < 0 || !nib_row_bytes(wtype, n_in, &row_bytes)) return NIB_ERR_ARG;
    if (!W || !out) return NIB_ERR_ARG;
    if (row_bytes != 0 && (uint64_t)row > SIZE_MAX / row_bytes) return NIB_ERR_ARG;
    tt->dequantize((const uint8_t *)W + (size_t)row * row_bytes, out, n_in);
    return NIB_OK;
}
