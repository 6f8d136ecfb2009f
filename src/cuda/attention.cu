/* Decode attention over an f16 KV cache: split-K "flash decoding".
 *
 * Three layers (STYLE.md, CUDA): nib_cuda_attention validates and unpacks ->
 * attn_launch picks the kernel row, chunk, grid and stream -> attn_split (one
 * chunk of the cache per CTA, and the merge of a token's chunks by the CTA
 * that finishes last) and, for long contexts only, attn_merge.
 *
 * Work split. The cache range [0, max_len) is cut into `chunk`-row chunks;
 * CTA (split, kv head [, head slice], token) runs an online softmax (running
 * max m, sum l, unnormalised acc) over the rows of its chunk that lie inside
 * the token's [j0, p], for the GB query heads of one GQA group slice at once.
 * The chunks that hold rows of [j0, p] (the "active" splits s_lo..s_hi, known
 * only on the device from *pos) then combine:
 *   - one active split (the context fits one chunk): that CTA normalises and
 *     writes out itself; nothing else runs.
 *   - one token's 2 to ATTN_CLUSTER_MAX (8) splits on sm_90: the splits of a (token, kv
 *     head slice) are one thread block cluster; each leaves its partial in
 *     its own shared memory, and after the cluster's barrier all its CTAs
 *     merge a share of the dims, reading the partials through DSMEM
 *     (attn_cluster_merge). Nothing goes through global memory.
 *   - up to ATTN_FUSED_MAX_SPLITS splits: each writes (m, l, acc[hd_v]) per
 *     head to scratch, bumps a per-(token, kv-head slice) arrival counter, and
 *     the CTA that arrives last merges and writes out (no second launch).
 *   - more splits (long contexts): the partials are merged by attn_merge, a
 *     second launch with one CTA per (head, token), as before.
 *
 * The grid depends on max_len (host-known), never on *pos (device-only): a
 * CTA reads *pos, finds its chunk empty and leaves. That is what lets one
 * captured graph serve every position of a context bucket.
 *
 * Why these choices (measured with ncu on an H200 inside a decode step, at a
 * ~70-row context): the previous version used 256-row chunks, so a short
 * context ran as 8 CTAs (Llama-3-8B, 8 KV heads) or 2 (Qwen2.5-0.5B), each
 * walking its ~70 rows as three dependent load -> compute steps, and took
 * 5.9 and 6.7 us per layer: pure latency (the data is 36 KB per KV head).
 * Now:
 *  1. The chunk is picked per call from max_len: the smallest power of two
 *     >= max(32, the rows a CTA covers in one step) such that n_tok * n_split
 *     <= ATTN_SPLITS_PER_TOKEN (32), but at most 256. At short contexts a CTA
 *     then does one step; at 8k+ it is 256 rows as before (16k: 64 splits).
 *  2. The merge runs in the last-arriving CTA, not a second launch (a launch
 *     and its tail cost ~2 us inside a CUDA graph). Only when there are more
 *     than 32 splits (>= 8k-16k contexts, where the launch is noise next to
 *     the cache read, and one CTA would have to read hundreds of partials)
 *     does attn_merge run.
 *  3. The kernel is a programmatic dependent launch of qkv_rope: before
 *     pdl_wait it reads *pos and the K/V rows of its chunk's first step that
 *     lie below it (earlier steps wrote them); after the wait, the q slice
 *     and this step's new rows, with coherent loads (see ld_u4). Rows
 *     outside [j0, p] are masked after, their V zeroed so 0 * NaN never
 *     reaches acc. A one-step CTA's chain after the wait is then one L2
 *     round trip, the arithmetic, and the partial write.
 *  4. For one token (decode), GB <= 4, and GB = 1 (a query head a CTA)
 *     while the grid stays within ATTN_ONE_HEAD_CTAS (see
 *     nib_cuda_attention); else a group of 7 or 8 runs as two head
 *     slices. The per-step work is the same (R * GB scores per lane) but the
 *     end of a CTA (team and warp combine, merge) scales with GB, and the
 *     grid doubles for models with 2 KV heads (128 CTAs at 16k before, one per
 *     SM). The second slice re-reads the rows, which its twin has just pulled
 *     into L2.
 * Expected shapes: Llama-3-8B at max_len 256 (ctx 70): chunk 32, grid 8 x 8,
 * 24 active CTAs of one step; Qwen2.5-0.5B: chunk 64, grid 4 x 4, 8 active.
 * At 16k both use chunk 256, 64 splits and attn_merge (512 and 256 CTAs).
 * Not yet timed: the numbers to take next, in a lab run, are these kernels
 * against the old ones at 70, 512, 4k and 16k rows.
 *
 * Arrival counters. The first ATTN_COUNTER_BYTES of scratch are ATTN_COUNTERS
 * uint32 counters, index t * (grid y) + y, at the same place for every call
 * whatever its n_tok or max_len (the partials come after them), so one
 * scratch serves every bucket and batch size. Each is 0 at rest: the arriving
 * CTAs atomicInc it with wrap value n_active - 1, so the last one sees
 * n_active - 1 and leaves 0 behind for the next launch (or graph replay).
 * The caller zeroes the scratch once after allocating it (cuda_attention.h).
 * A call needing more than ATTN_COUNTERS counters (n_tok * n_head_kv *
 * slices, large prefill batches) uses attn_merge instead.
 *
 * Inside a CTA. 4 warps; a warp is cut into teams of T lanes (T = the row's
 * 16-byte vector count max(hd_k, hd_v) / 8, rounded up to 8, 16 or 32), and a
 * team takes one cache row at a time: lane i of the team
 * loads vectors i, i + T, ... of the row (NCK of K, NCV of V per lane, 1 or 2),
 * so a team's loads are one contiguous run of the row (coalesced), and the GB
 * query heads that share the KV head reuse that one load from registers: each
 * lane keeps its slice of the GB q vectors (GB * NCK * 8 floats) and of the GB
 * accumulators (GB * NCV * 8 floats). A row's score is the team's partial dots
 * summed by xor-shuffles. Teams walk R rows per step: all R rows' K and V
 * loads are issued before any arithmetic (memory-level parallelism), and the
 * running max and the rescale of acc happen once per R rows, not per row.
 * At GB <= ATTN_PIPE_GB_MAX the next step's loads are issued before this
 * step's arithmetic, so a chunk's steps overlap.
 * At the end the teams of a warp combine by shuffles, the 4 warps through
 * shared memory.
 *
 * Register budget. q + acc are GB * (NCK + NCV) * 8 floats per lane; GB is
 * capped so that is at most 128 (GB <= 8 when NCK + NCV = 2, i.e. head dims
 * <= 256; GB <= 4 for 512), and R so the in-flight K/V vectors stay <= 32
 * registers. Larger GQA groups run as several head slices (grid y), each
 * re-reading the rows (from L2 mostly).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include "cuda/act_q8.cuh"
#include "cuda/cuda_attention.h"
#include "cuda/cuda_internal.h"
#include "cuda/pdl.cuh"

/* 64 and 128 lost (Llama-3-8B Q4_K_M tg128 479.5 -> 473.2 / 472.6; notes v47) */
#ifndef ATTN_CHUNK_MIN
#define ATTN_CHUNK_MIN 32         /* cache rows per split: at least ... */
#endif
#define ATTN_CHUNK_MAX 256        /* ... and at most (see above) */
#define ATTN_SPLITS_PER_TOKEN 32  /* n_tok * n_split target while the chunk is below ATTN_CHUNK_MAX */
#define ATTN_FUSED_MAX_SPLITS 32  /* the last CTA merges at most this many splits (one per lane) */
#define ATTN_CLUSTER_MAX 8        /* splits merged through a thread block cluster at most (portable size) */
#define ATTN_GB_MAX 8             /* query heads a CTA at most (the register budget's largest) */
#define ATTN_ONE_HEAD_CTAS 1024   /* one token: a query head a CTA while the grid stays within this */
/* A CTA's steps after the first overlap where GB is at most this: the next
 * step's K/V rows are loaded before the current step's arithmetic. A chunk
 * of 256 rows is 8 steps of a 4-warp CTA (32 rows a step at head dim 128),
 * and each waited on its loads. GB 1 goes from 62 to 99 registers, GB 2
 * from 80 to 122; GB 4 would go from 128 to 168 (a CTA a multiprocessor
 * fewer). tg64 at depth 4096 (GB 1), one run, two rounds: Llama-3-8B Q4_K_M
 * 418.4 / 420.3 -> 435.5 / 437.9 t/s (+4%), Qwen2.5-0.5B 1,483.6 / 1,492.2 ->
 * 1,512.4 / 1,521.9 (+2%); tg128 (one step a CTA) 539 -> 541
 * (bench/gpu-decode-notes.md v91). */
#define ATTN_PIPE_GB_MAX 2
#define ATTN_COUNTERS 1024        /* arrival counters at the head of scratch */
#define ATTN_COUNTER_BYTES (ATTN_COUNTERS * 4)
#define ATTN_WARPS 4              /* warps per attn_split CTA */
#define ATTN_THREADS (ATTN_WARPS * 32)
#define ATTN_FOLD_MAX 512 /* dims a CTA quantizes in its epilogue at most (nib_cuda_attention) */
#define ATTN_MERGE_THREADS 256    /* attn_merge: float4 columns x groups of splits */
#define ATTN_MAX_TOK 65535        /* grid z */
#define ATTN_MAX_HD 512
#define LOG2E_F 1.4426950408889634f

static_assert(ATTN_FUSED_MAX_SPLITS == 32, "the fused merge gives each split one lane of a warp");
static_assert(ATTN_SPLITS_PER_TOKEN <= ATTN_FUSED_MAX_SPLITS, "a decode step below the max chunk should merge in place");

/* What the kernels get: the op entry has checked every field. */
typedef struct attn_params {
    const float *q;          /* (n_tok, n_head, hd_k) */
    const uint16_t *k;       /* (n_ctx, n_head_kv, hd_k) f16 */
    const uint16_t *v;       /* (n_ctx, n_head_kv, hd_v) f16 */
    float *out;              /* (n_tok, n_head, hd_v) */
    const int32_t *pos;      /* device: position of token 0 */
    const float *sinks;      /* (n_head) or NULL */
    unsigned *counters;      /* (ATTN_COUNTERS) scratch, 0 at rest: arrivals per (token, grid y) */
    float2 *part_ml;         /* (n_tok, n_head, n_split) scratch: (m in log2 units, l) */
    float *part_acc;         /* (n_tok, n_head, n_split, hd_v) scratch: unnormalised acc */
    int n_tok, n_head, n_head_kv, hd_k, hd_v;
    int group;               /* n_head / n_head_kv */
    int n_slices;            /* ceil(group / GB): CTAs per KV head along grid y */
    int window, max_len;
    int chunk, chunk_log2;   /* rows per split: a power of two, and its log2 */
    int n_split;             /* ceil(max_len / chunk) */
    int merge_kernel;        /* 1: attn_merge combines >= 2 active splits; 0: the last CTA does */
    float scale, softcap;
    /* the output quantized too, as nib_cuda_act_quantize would (act_q NULL: not):
     * token t's quants at act_q + t * act_stride, its (d, s) at act_ds + t * n / 32
     * (n = n_head * hd_v), the deferred-norm trailer act_sc zeroed */
    int8_t *act_q;
    float2 *act_ds;
    act_scale *act_sc;
    int act_stride;
} attn_params;

/* Where element i of token t's output row (i = head * hd_v + dim) goes in
 * the quantized output: its quant, and the (d, s) of its block of 32. */
__device__ __forceinline__ int8_t *attn_act_q(const attn_params &a, int t, size_t i) {
    return a.act_q + (size_t)t * a.act_stride + i;
}
__device__ __forceinline__ float2 *attn_act_ds(const attn_params &a, int t, size_t i) {
    return a.act_ds + ((size_t)t * a.n_head * a.hd_v + i) / 32;
}

/* The (d, s) of token t's blocks of heads [h0, h0 + n_h) as NaN, from
 * threads [0, nthreads): a broken host bound's output is NaN, and so is what
 * a GEMV reads of it. */
__device__ __forceinline__ void attn_act_nan(const attn_params &a, int t, int h0, int n_h, int nthreads) {
    if (!a.act_q) return;
    const int per_h = a.hd_v / 32;
    float2 *ds = a.act_ds + ((size_t)t * a.n_head + h0) * per_h;
    for (int i = threadIdx.x; i < n_h * per_h; i += nthreads) ds[i] = make_float2(NAN, NAN);
}

/* Rows a team walks per step: <= 32 registers of in-flight K/V vectors (4 per
 * 16-byte vector), and <= 16 scores (R * GB) per lane. */
__host__ __device__ constexpr int attn_rows_per_step(int nc, int gb) {
    return 8 / nc < 16 / gb ? (8 / nc > 1 ? 8 / nc : 1) : (16 / gb > 1 ? 16 / gb : 1);
}

/* 8 f16 (one 16-byte vector) to floats, exactly. */
__device__ __forceinline__ void f16x8_to_f32(const uint4 u, float (&f)[8]) {
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float2 x = __half22float2(*reinterpret_cast<const __half2 *>(&w[i]));
        f[2 * i] = x.x, f[2 * i + 1] = x.y;
    }
}

/* exp2(x - m) that is 0, not NaN, for a still-empty state (m = -inf). */
__device__ __forceinline__ float exp2_rel(float x, float m) { return m == -INFINITY ? 0.0f : exp2f(x - m); }

/* Predicated 16-byte loads: zeros when !pred (ld_u4), or v kept (ld_u4_keep).
 * Inline PTX, and volatile, so the compiler keeps them where they are
 * written: the first step's loads are issued before pdl_wait, and a plain
 * __ldg whose only use is past the `return`s below could be sunk after them,
 * back onto the critical path. NC: the read-only path, only for cache rows
 * written by earlier steps. Else ld.global.cg (L2, coherent), pinned after
 * pdl_wait by the memory clobber: attn_split is a programmatic dependent
 * launch, so its lifetime overlaps qkv_rope's writes of q and of this step's
 * K/V rows, and .nc is defined only for data nothing writes while the kernel
 * runs. (With .nc there, one build read wrong queries: nib verify's mean KL
 * 0.25 nats instead of 5e-4.) A generic pointer from cudaMalloc is a valid
 * global address. */
/* The PTX: %0-%3 the vector, %4 the address, %5 the predicate; ZERO clears
 * the vector first (ld_u4), CACHE is "nc" or "cg". */
#define LD_U4_PTX(ZERO, CACHE)                                                   \
    "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %5, 0;\n\t" ZERO "@p ld.global." CACHE \
    ".v4.u32 {%0, %1, %2, %3}, [%4];\n\t}"
#define LD_U4_ZERO "mov.b32 %0, 0;\n\tmov.b32 %1, 0;\n\tmov.b32 %2, 0;\n\tmov.b32 %3, 0;\n\t"
template <bool NC>
__device__ __forceinline__ uint4 ld_u4(const void *ptr, bool pred) {
    uint4 v;
    if (NC)
        asm volatile(LD_U4_PTX(LD_U4_ZERO, "nc")
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(ptr), "r"((int)pred));
    else
        asm volatile(LD_U4_PTX(LD_U4_ZERO, "cg")
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(ptr), "r"((int)pred)
                     : "memory");
    return v;
}
__device__ __forceinline__ void ld_u4_keep(uint4 &v, const void *ptr, bool pred) {
    asm volatile(LD_U4_PTX("", "cg")
                 : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w)
                 : "l"(ptr), "r"((int)pred)
                 : "memory");
}
#undef LD_U4_ZERO
#undef LD_U4_PTX

/* One step's K and V vectors of this lane: rows row0 .. row0 + R - 1 that lie
 * in [lo, hi), vectors tl, tl + T, ... of each (zeros elsewhere); with KEEP
 * the vectors of rows outside [lo, hi) are left as they are. */
template <int T, int R, int NCK, int NCV, bool NC, bool KEEP = false>
__device__ __forceinline__ void attn_load_step(uint4 (&kr)[R][NCK], uint4 (&vr)[R][NCV], const uint16_t *kb,
                                               const uint16_t *vb, size_t k_row, size_t v_row, int row0, int lo,
                                               int hi, int tl, int ck, int cv) {
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int row = row0 + r;
        const bool in = row >= lo && row < hi;
#pragma unroll
        for (int i = 0; i < NCK; i++) {
            const int c = tl + i * T;
            const uint4 *src = (const uint4 *)(kb + (size_t)row * k_row) + c;
            if (KEEP) ld_u4_keep(kr[r][i], src, in && c < ck);
            else kr[r][i] = ld_u4<NC>(src, in && c < ck);
        }
#pragma unroll
        for (int i = 0; i < NCV; i++) {
            const int c = tl + i * T;
            const uint4 *src = (const uint4 *)(vb + (size_t)row * v_row) + c;
            if (KEEP) ld_u4_keep(vr[r][i], src, in && c < cv);
            else vr[r][i] = ld_u4<NC>(src, in && c < cv);
        }
    }
}

/* One step of the online softmax: R rows of this team, their K/V vectors in
 * kr/vr, rows outside [lo, hi) masked. */
template <int T, int R, int NCK, int NCV, int GB>
__device__ __forceinline__ void attn_step(const uint4 (&kr)[R][NCK], uint4 (&vr)[R][NCV], const float (&qr)[GB][NCK * 8],
                                          float (&m)[GB], float (&l)[GB], float (&acc)[GB][NCV * 8], int row0, int lo,
                                          int hi, float softcap) {
    bool ok[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        ok[r] = row0 + r >= lo && row0 + r < hi;
        /* the first step's prefetch also read rows outside [lo, hi) (past p:
         * anything, NaN in the test): a zero V keeps 0 * NaN out of acc; their
         * scores are masked to -inf below */
#pragma unroll
        for (int i = 0; i < NCV; i++)
            if (!ok[r]) vr[r][i] = make_uint4(0, 0, 0, 0);
    }

    /* scores: partial dots of this lane's slice, then summed over the team */
    float s[R][GB];
#pragma unroll
    for (int r = 0; r < R; r++) {
#pragma unroll
        for (int g = 0; g < GB; g++) s[r][g] = 0.0f;
#pragma unroll
        for (int i = 0; i < NCK; i++) {
            float kf[8];
            f16x8_to_f32(kr[r][i], kf);
#pragma unroll
            for (int g = 0; g < GB; g++)
#pragma unroll
                for (int e = 0; e < 8; e++) s[r][g] = fmaf(qr[g][i * 8 + e], kf[e], s[r][g]);
        }
    }
#pragma unroll
    for (int off = T / 2; off > 0; off >>= 1)
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int g = 0; g < GB; g++) s[r][g] += __shfl_xor_sync(0xffffffffu, s[r][g], off);

    /* softcap on the scaled score, then log2 units; masked rows -inf */
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int g = 0; g < GB; g++) {
            float x = s[r][g];
            if (softcap > 0.0f) x = softcap * tanhf(x / softcap);
            s[r][g] = ok[r] ? x * LOG2E_F : -INFINITY;
        }

    /* online softmax, one rescale per R rows */
#pragma unroll
    for (int g = 0; g < GB; g++) {
        float mx = m[g];
#pragma unroll
        for (int r = 0; r < R; r++) mx = fmaxf(mx, s[r][g]);
        const float corr = exp2_rel(m[g], mx);
        l[g] *= corr;
#pragma unroll
        for (int e = 0; e < NCV * 8; e++) acc[g][e] *= corr;
#pragma unroll
        for (int r = 0; r < R; r++) {
            s[r][g] = exp2_rel(s[r][g], mx);  /* now the row's weight p */
            l[g] += s[r][g];
        }
        m[g] = mx;
    }

    /* acc += p * v: each V vector widened once, used by all GB heads */
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int i = 0; i < NCV; i++) {
            float vf[8];
            f16x8_to_f32(vr[r][i], vf);
#pragma unroll
            for (int g = 0; g < GB; g++)
#pragma unroll
                for (int e = 0; e < 8; e++) acc[g][i * 8 + e] = fmaf(s[r][g], vf[e], acc[g][i * 8 + e]);
        }
}

/* Token position p's cache rows [j0, p] and the splits that hold them
 * (s_lo..s_hi, the "active" splits). A shift, not a division by the runtime
 * chunk: the ~10 registers of an integer division, live while the prefetched
 * rows are in flight, cost 16 registers at the peak in attn_split (144
 * instead of 128 at GB 4: one CTA per SM fewer). */
typedef struct attn_span {
    int j0, s_lo, s_hi;
} attn_span;
__device__ __forceinline__ attn_span attn_span_of(const attn_params &a, int p) {
    const int j0 = a.window > 0 ? max(0, p - a.window + 1) : 0;
    return {j0, j0 >> a.chunk_log2, p >> a.chunk_log2};
}

/* The merge of a (token, head slice)'s active splits when its CTAs form one
 * thread block cluster (split s is the cluster's CTA of rank s): each active
 * CTA has left its (M, L) per head in cl_ml and its unnormalised acc in
 * cl_acc (stride floats per head) of its own shared memory; after the
 * cluster's barrier the dims are dealt out over all its CTAs' threads, each
 * reading the active splits' values from their shared memory (DSMEM). Against
 * the last-arrival merge (global partials, a fence, an atomic, two reads back
 * through L2), the chain after the last split's rows is one barrier and one
 * DSMEM read. The second barrier keeps every CTA's shared memory alive until
 * all reads of it are done. Every thread of every CTA of the cluster calls it. */
template <int GB>
__device__ __forceinline__ void attn_cluster_merge(const attn_params &a, const float2 *cl_ml, const float *cl_acc,
                                                   int stride, int t, int h0, int n_h, int s_lo, int s_hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();
    const int rank = (int)cl.block_rank(), n_cta = (int)cl.num_blocks();
    /* idx runs in whole warps (n_h * hd_v and the threads are multiples of 32):
     * a warp holds 32 consecutive dims of one head, a quantization block */
    for (int idx = rank * ATTN_THREADS + threadIdx.x; idx < n_h * a.hd_v; idx += n_cta * ATTN_THREADS) {
        const int g = idx / a.hd_v, d = idx - g * a.hd_v, h = h0 + g;
        float2 ml[ATTN_CLUSTER_MAX];
        float acc[ATTN_CLUSTER_MAX];
#pragma unroll
        for (int s = 0; s < ATTN_CLUSTER_MAX; s++) {
            const bool in = s >= s_lo && s <= s_hi;
            ml[s] = in ? cl.map_shared_rank(cl_ml, s)[g] : make_float2(-INFINITY, 0.0f);
            acc[s] = in ? cl.map_shared_rank(cl_acc, s)[g * stride + d] : 0.0f;
        }
        float M = -INFINITY;
#pragma unroll
        for (int s = 0; s < ATTN_CLUSTER_MAX; s++) M = fmaxf(M, ml[s].x);
        const float s2 = a.sinks ? __ldg(a.sinks + h) * LOG2E_F : -INFINITY;
        M = fmaxf(M, s2);  /* finite: split s_hi holds row p */
        float L = a.sinks ? exp2f(s2 - M) : 0.0f, A = 0.0f;
#pragma unroll
        for (int s = 0; s < ATTN_CLUSTER_MAX; s++) {
            const float w = exp2_rel(ml[s].x, M);  /* 0 for the splits outside [s_lo, s_hi] */
            L = fmaf(ml[s].y, w, L);
            A = fmaf(acc[s], w, A);
        }
        const float o = A / L;
        const size_t i = (size_t)h * a.hd_v + d;
        a.out[(size_t)t * a.n_head * a.hd_v + i] = o;
        if (a.act_q) quantize_warp32(o, attn_act_q(a, t, i), attn_act_ds(a, t, i));
    }
    cl.sync();
#endif
}

/* ---- kernel 1: one chunk of the cache, GB heads of one GQA group ----------------- */

template <int T, int NCK, int NCV, int GB, bool CL>
__global__ void __launch_bounds__(ATTN_THREADS) attn_split(const attn_params a) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 900
    if (CL) { /* clusters are sm_90's; the host never launches this row below it */
        __trap();
        return;
    }
#endif
    constexpr int TEAMS = ATTN_THREADS / T;
    constexpr int R = attn_rows_per_step(NCK + NCV, GB);
    constexpr int STEP = TEAMS * R;  /* rows a CTA covers per step */
    const int split = blockIdx.x, t = blockIdx.z;
    const int kvh = blockIdx.y / a.n_slices, slice = blockIdx.y - kvh * a.n_slices;
    const int h0 = kvh * a.group + slice * GB;           /* first query head of this CTA */
    const int n_h = min(GB, a.group - slice * GB);       /* heads it owns (the rest are padding) */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int tl = lane % T, team = threadIdx.x / T;
    const int ck = a.hd_k / 8, cv = a.hd_v / 8;  /* 16-byte vectors per row */
    const int C = a.chunk, base0 = split * C;
    const size_t k_row = (size_t)a.n_head_kv * a.hd_k, v_row = (size_t)a.n_head_kv * a.hd_v;  /* elements */
    const uint16_t *kb = a.k + (size_t)kvh * a.hd_k, *vb = a.v + (size_t)kvh * a.hd_v;

    /* Before pdl_wait, while qkv_rope still runs: *pos (the io block is
     * copied in before the step's first kernel) and the chunk's first step of
     * K/V rows below it, which earlier steps wrote. After it: this lane's
     * slice of the GB query vectors and the rows [pos0, pos0 + n_tok) that
     * qkv_rope has just written. (Rows past them are masked below.) */
    const int pos0 = *a.pos;
    uint4 kr[R][NCK], vr[R][NCV];
    attn_load_step<T, R, NCK, NCV, true>(kr, vr, kb, vb, k_row, v_row, base0 + team * R, 0, min(pos0, a.max_len), tl,
                                         ck, cv);
    pdl_wait();
    float qr[GB][NCK * 8];
#pragma unroll
    for (int g = 0; g < GB; g++)
#pragma unroll
        for (int i = 0; i < NCK; i++) {
            const int c = tl + i * T;
            const bool in = g < n_h && c < ck;
            const float4 *src = (const float4 *)(a.q + ((size_t)t * a.n_head + h0 + (in ? g : 0)) * a.hd_k) + 2 * c;
            const uint4 x0 = ld_u4<false>(src, in), x1 = ld_u4<false>(src + 1, in);
            qr[g][i * 8 + 0] = __uint_as_float(x0.x), qr[g][i * 8 + 1] = __uint_as_float(x0.y);
            qr[g][i * 8 + 2] = __uint_as_float(x0.z), qr[g][i * 8 + 3] = __uint_as_float(x0.w);
            qr[g][i * 8 + 4] = __uint_as_float(x1.x), qr[g][i * 8 + 5] = __uint_as_float(x1.y);
            qr[g][i * 8 + 6] = __uint_as_float(x1.z), qr[g][i * 8 + 7] = __uint_as_float(x1.w);
        }
    attn_load_step<T, R, NCK, NCV, false, true>(kr, vr, kb, vb, k_row, v_row, base0 + team * R, max(pos0, 0),
                                                min(pos0 + a.n_tok, a.max_len), tl, ck, cv);

    const int p = pos0 + t;
    if (p < 0 || p >= a.max_len) {  /* the host bound is broken: NaN out (see cuda_attention.h) */
        if (!a.merge_kernel && split == 0) { /* one CTA per head slice writes it; else attn_merge does */
            for (int i = threadIdx.x; i < n_h * a.hd_v; i += ATTN_THREADS)
                a.out[((size_t)t * a.n_head + h0) * a.hd_v + i] = NAN;
            attn_act_nan(a, t, h0, n_h, ATTN_THREADS);
        }
        return;
    }
    /* the active splits: those that hold rows of [j0, p] */
    const attn_span sp = attn_span_of(a, p);
    const int j0 = sp.j0, s_lo = sp.s_lo, s_hi = sp.s_hi;
    const int n_active = s_hi - s_lo + 1;
    /* the cluster's merge: every CTA of the cluster runs it, the idle ones too
     * (they hold no partial, but take a share of the merge's dims) */
    __shared__ float2 cl_ml[CL ? GB : 1];
    __shared__ float cl_acc[CL ? GB : 1][CL ? NCV * T * 8 : 1];
    if (split < s_lo || split > s_hi) {  /* nothing to do */
        if (!CL || n_active == 1) return;  /* and nobody waits for this CTA */
        pdl_launch_dependents();
        attn_cluster_merge<GB>(a, &cl_ml[0], &cl_acc[0][0], NCV * T * 8, t, h0, n_h, s_lo, s_hi);
        return;
    }
    /* no deferred norm in the quantized output: one CTA that always runs clears the trailer */
    if (a.act_q && split == s_hi && blockIdx.y == 0 && t == 0)
        act_scale_clear(a.act_sc, 0, (int)threadIdx.x, (int)blockDim.x);
    const int lo = max(base0, j0), hi = min(base0 + C, p + 1);  /* lo < hi for an active split */

    /* pre-scale q (one rounding per element, instead of a multiply per score) */
#pragma unroll
    for (int g = 0; g < GB; g++)
#pragma unroll
        for (int e = 0; e < NCK * 8; e++) qr[g][e] *= a.scale;

    float m[GB], l[GB], acc[GB][NCV * 8];
#pragma unroll
    for (int g = 0; g < GB; g++) {
        m[g] = -INFINITY, l[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < NCV * 8; e++) acc[g][e] = 0.0f;
    }

    /* Every lane of the CTA runs the same steps (the count depends only on lo
     * and hi), so the shuffles always see their whole warp. The first step
     * uses the prefetched rows, unless a window starts deep inside the chunk:
     * then the steps before it are skipped, the prefetch with them. (The first
     * step is written out apart from the loop: folded into it behind a flag,
     * ptxas used 167 registers instead of 128 at GB 4, one CTA per SM fewer
     * at long contexts.) */
    int base = base0 + (lo - base0) / STEP * STEP;
    if (base == base0) {
        attn_step<T, R, NCK, NCV, GB>(kr, vr, qr, m, l, acc, base0 + team * R, lo, hi, a.softcap);
        base += STEP;
    }
    if (GB <= ATTN_PIPE_GB_MAX) {
        /* the next step's rows in flight while this one computes (rows at or
         * past hi are predicated off: no load, zeros) */
        if (base < hi)
            attn_load_step<T, R, NCK, NCV, false>(kr, vr, kb, vb, k_row, v_row, base + team * R, lo, hi, tl, ck, cv);
        for (; base < hi; base += STEP) {
            const int row0 = base + team * R;
            uint4 kn[R][NCK], vn[R][NCV];
            attn_load_step<T, R, NCK, NCV, false>(kn, vn, kb, vb, k_row, v_row, row0 + STEP, lo, hi, tl, ck, cv);
            attn_step<T, R, NCK, NCV, GB>(kr, vr, qr, m, l, acc, row0, lo, hi, a.softcap);
#pragma unroll
            for (int r = 0; r < R; r++) {
#pragma unroll
                for (int i = 0; i < NCK; i++) kr[r][i] = kn[r][i];
#pragma unroll
                for (int i = 0; i < NCV; i++) vr[r][i] = vn[r][i];
            }
        }
    } else {
        for (; base < hi; base += STEP) {
            const int row0 = base + team * R;
            attn_load_step<T, R, NCK, NCV, false>(kr, vr, kb, vb, k_row, v_row, row0, lo, hi, tl, ck, cv);
            attn_step<T, R, NCK, NCV, GB>(kr, vr, qr, m, l, acc, row0, lo, hi, a.softcap);
        }
    }
    /* Only now may the next kernel's blocks launch: triggered at the top, they
     * (and, through their own early triggers, the kernels after them) took
     * SM slots while this ran, and the step was 4-7% slower (notes v23);
     * triggered right after the loads above, Qwen2.5-0.5B 1,712 -> 1,602
     * t/s and the 8B at depth 4096 384 -> 371 (v47). */
    pdl_launch_dependents();

    /* teams of one warp hold the same dims in the same team lane: combine by
     * xor-shuffles across teams */
#pragma unroll
    for (int off = T; off < 32; off <<= 1)
#pragma unroll
        for (int g = 0; g < GB; g++) {
            const float mo = __shfl_xor_sync(0xffffffffu, m[g], off), lo_ = __shfl_xor_sync(0xffffffffu, l[g], off);
            const float mn = fmaxf(m[g], mo), wa = exp2_rel(m[g], mn), wb = exp2_rel(mo, mn);
            l[g] = l[g] * wa + lo_ * wb;
#pragma unroll
            for (int e = 0; e < NCV * 8; e++)
                acc[g][e] = acc[g][e] * wa + __shfl_xor_sync(0xffffffffu, acc[g][e], off) * wb;
            m[g] = mn;
        }

    /* then the warps through shared memory (at most 32 KB: GB * NCV * T * 8 <= 2048 floats per warp) */
    __shared__ float sm_acc[ATTN_WARPS][GB][NCV * T * 8];
    __shared__ float sm_m[ATTN_WARPS][GB], sm_l[ATTN_WARPS][GB];
    if (lane < T) {
#pragma unroll
        for (int g = 0; g < GB; g++) {
#pragma unroll
            for (int i = 0; i < NCV; i++)
#pragma unroll
                for (int e = 0; e < 8; e++) sm_acc[warp][g][(tl + i * T) * 8 + e] = acc[g][i * 8 + e];
            if (lane == 0) sm_m[warp][g] = m[g], sm_l[warp][g] = l[g];
        }
    }
    __syncthreads();

    const bool alone = n_active == 1;  /* this CTA holds all of [j0, p]: write out, no partials */
    for (int idx = threadIdx.x; idx < n_h * a.hd_v; idx += ATTN_THREADS) {
        const int g = idx / a.hd_v, d = idx - g * a.hd_v, h = h0 + g;
        float M = -INFINITY, L = 0.0f, A = 0.0f;
#pragma unroll
        for (int w = 0; w < ATTN_WARPS; w++) M = fmaxf(M, sm_m[w][g]);
#pragma unroll
        for (int w = 0; w < ATTN_WARPS; w++) {
            const float wt = exp2_rel(sm_m[w][g], M);
            L += sm_l[w][g] * wt;
            A += sm_acc[w][g][d] * wt;
        }
        if (alone) {
            /* lo < hi here, so M is finite; the sink joins max and denominator */
            if (a.sinks) {
                const float s2 = __ldg(a.sinks + h) * LOG2E_F, Ms = fmaxf(M, s2), f = exp2f(M - Ms);
                A *= f;
                L = L * f + exp2f(s2 - Ms);
            }
            const float o = A / L;
            const size_t i = (size_t)h * a.hd_v + d;
            a.out[(size_t)t * a.n_head * a.hd_v + i] = o;
            /* a warp holds 32 consecutive dims of one head (hd_v % 32 == 0): one block */
            if (a.act_q) quantize_warp32(o, attn_act_q(a, t, i), attn_act_ds(a, t, i));
        } else if (CL) {
            cl_acc[g][d] = A;
            if (d == 0) cl_ml[g] = make_float2(M, L);
        } else {
            const size_t th = ((size_t)t * a.n_head + h) * a.n_split + split;
            a.part_acc[th * a.hd_v + d] = A;
            if (d == 0) a.part_ml[th] = make_float2(M, L);
        }
    }
    if (alone || a.merge_kernel) return;
    if (CL) {
        attn_cluster_merge<GB>(a, &cl_ml[0], &cl_acc[0][0], NCV * T * 8, t, h0, n_h, s_lo, s_hi);
        return;
    }

    /* ---- the merge, by the last of the n_active CTAs of (token, head slice) to
     * get here. Classic threadfence reduction: every thread fences its own
     * partial stores before the barrier, thread 0 counts the arrival; the last
     * CTA fences again before reading the others' partials through L2 (__ldcg:
     * they were written during this launch, so not through the non-coherent
     * path). atomicInc wraps at n_active - 1: the last arrival leaves 0. */
    __shared__ unsigned sm_last;
    __shared__ float sm_w[GB][ATTN_FUSED_MAX_SPLITS];
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned *cnt = a.counters + (size_t)t * gridDim.y + blockIdx.y;
        sm_last = atomicInc(cnt, (unsigned)(n_active - 1)) == (unsigned)(n_active - 1);
    }
    __syncthreads();
    if (!sm_last) return;
    __threadfence();

    /* per head: lane s holds split s_lo + s; M and L by warp reductions, then
     * each split's weight exp2(m_s - M) / L (sink in max and denominator) */
    for (int g = warp; g < n_h; g += ATTN_WARPS) {
        const int h = h0 + g;
        const size_t th = ((size_t)t * a.n_head + h) * a.n_split + s_lo;
        const float2 e = lane < n_active ? __ldcg(a.part_ml + th + lane) : make_float2(-INFINITY, 0.0f);
        float M = e.x;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, off));
        const float s2 = a.sinks ? __ldg(a.sinks + h) * LOG2E_F : -INFINITY;
        M = fmaxf(M, s2);  /* finite: split s_hi holds row p */
        const float w = exp2f(e.x - M);  /* 0 for the lanes past n_active (e.x = -inf) */
        float L = e.y * w;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) L += __shfl_xor_sync(0xffffffffu, L, off);
        if (a.sinks) L += exp2f(s2 - M);
        sm_w[g][lane] = w / L;
    }
    __syncthreads();

    /* out = sum_s w_s acc_s, float4 columns, the splits' loads independent */
    const int n_c4 = a.hd_v / 4;
    for (int idx = threadIdx.x; idx < n_h * n_c4; idx += ATTN_THREADS) {
        const int g = idx / n_c4, c = idx - g * n_c4;
        const size_t th = ((size_t)t * a.n_head + h0 + g) * a.n_split + s_lo;
        const float4 *pa = (const float4 *)(a.part_acc + th * a.hd_v) + c;
        float4 A = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
        for (int s = 0; s < n_active; s++) {
            const float w = sm_w[g][s];
            const float4 x = __ldcg(pa + (size_t)s * n_c4);
            A.x = fmaf(w, x.x, A.x), A.y = fmaf(w, x.y, A.y), A.z = fmaf(w, x.z, A.z), A.w = fmaf(w, x.w, A.w);
        }
        ((float4 *)(a.out + ((size_t)t * a.n_head + h0 + g) * a.hd_v))[c] = A;
        if (a.act_q) { /* 8 lanes hold one block of 32 dims (hd_v / 4 % 8 == 0) */
            const size_t i = (size_t)(h0 + g) * a.hd_v + 4 * c;
            quantize_lanes8x4(A, attn_act_q(a, t, i), attn_act_ds(a, t, i));
        }
    }
}

/* ---- kernel 2 (long contexts): merge the splits of one (token, head) -------------- */

/* Block-wide max / sum of one value per thread (all threads get the result). */
static __device__ float block_reduce(float x, bool is_max, float *red) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const float o = __shfl_xor_sync(0xffffffffu, x, off);
        x = is_max ? fmaxf(x, o) : x + o;
    }
    __syncthreads();  /* red may still be read from a previous call */
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = x;
    __syncthreads();
    x = red[0];
    for (int w = 1; w < (int)(blockDim.x >> 5); w++) x = is_max ? fmaxf(x, red[w]) : x + red[w];
    return x;
}

/* Only the splits that intersect [j0, p] are read, found from *pos like
 * attn_split does: a long max_len bucket at a short position costs the merge
 * nothing, and when one split holds all of [j0, p] attn_split has written
 * out already. Threads are (hd_v / 4 float4 columns) x (groups that take every
 * n_grp-th split), so a long context's hundreds of splits are walked by
 * several groups at once; the groups then add up through shared memory. */
__global__ void __launch_bounds__(ATTN_MERGE_THREADS) attn_merge(const attn_params a) {
    pdl_launch_dependents();
    pdl_wait();
    __shared__ float red[ATTN_MERGE_THREADS / 32];
    __shared__ float4 part[ATTN_MERGE_THREADS];
    const int h = blockIdx.x, t = blockIdx.y, tid = threadIdx.x;
    const int p = *a.pos + t;
    float *dst = a.out + ((size_t)t * a.n_head + h) * a.hd_v;
    if (p < 0 || p >= a.max_len) {  /* the host bound is broken: NaN out (see cuda_attention.h) */
        for (int d = tid; d < a.hd_v; d += ATTN_MERGE_THREADS) dst[d] = NAN;
        attn_act_nan(a, t, h, 1, ATTN_MERGE_THREADS);
        return;
    }
    const attn_span sp = attn_span_of(a, p);
    const int s_lo = sp.s_lo, s_hi = sp.s_hi;
    if (s_lo == s_hi) return;  /* one active split: attn_split wrote out */
    const size_t th = ((size_t)t * a.n_head + h) * a.n_split;
    const float2 *ml = a.part_ml + th;

    float M = -INFINITY;
    for (int s = s_lo + tid; s <= s_hi; s += ATTN_MERGE_THREADS) M = fmaxf(M, ml[s].x);
    M = block_reduce(M, true, red);
    const float s2 = a.sinks ? __ldg(a.sinks + h) * LOG2E_F : -INFINITY;
    M = fmaxf(M, s2);  /* finite: split s_hi holds row p */

    float L = 0.0f;
    for (int s = s_lo + tid; s <= s_hi; s += ATTN_MERGE_THREADS) {
        const float2 e = ml[s];
        L += e.y * exp2_rel(e.x, M);
    }
    L = block_reduce(L, false, red) + (a.sinks ? exp2f(s2 - M) : 0.0f);

    const int n_col = a.hd_v / 4, n_grp = ATTN_MERGE_THREADS / n_col;
    const int col = tid % n_col, grp = tid / n_col;
    float4 A = make_float4(0.f, 0.f, 0.f, 0.f);
    if (grp < n_grp) {
        const float4 *pa = (const float4 *)(a.part_acc + th * a.hd_v) + col;
#pragma unroll 4
        for (int s = s_lo + grp; s <= s_hi; s += n_grp) {
            const float wt = exp2_rel(ml[s].x, M);
            const float4 x = pa[(size_t)s * n_col];
            A.x = fmaf(wt, x.x, A.x), A.y = fmaf(wt, x.y, A.y), A.z = fmaf(wt, x.z, A.z), A.w = fmaf(wt, x.w, A.w);
        }
    }
    part[tid] = A;
    __syncthreads();
    if (grp == 0) {
        for (int g = 1; g < n_grp; g++) {
            const float4 x = part[g * n_col + col];
            A.x += x.x, A.y += x.y, A.z += x.z, A.w += x.w;
        }
        const float inv = 1.0f / L;
        const float4 o = make_float4(A.x * inv, A.y * inv, A.z * inv, A.w * inv);
        ((float4 *)dst)[col] = o;
        if (a.act_q) { /* threads 0 .. n_col - 1: 8 lanes a block of 32 dims */
            const size_t i = (size_t)h * a.hd_v + 4 * col;
            quantize_lanes8x4(o, attn_act_q(a, t, i), attn_act_ds(a, t, i));
        }
    }
}

/* ---- the kernel table --------------------------------------------------------------
 * One row per (T, NCK, NCV, GB) instantiation; attn_pick derives the wanted
 * row from the shapes and finds it here. This is the file's one
 * runtime-to-template switch. To support a larger head dim, raise ATTN_MAX_HD
 * and add the NC = 3.. rows, keeping GB * (NCK + NCV) <= 16. */
typedef void (*attn_kernel_fn)(attn_params);

typedef struct attn_row {
    int T, nck, ncv, gb;
    int step_rows;       /* rows a CTA covers per step: (ATTN_THREADS / T) * R */
    attn_kernel_fn fn;
    attn_kernel_fn fn_cl; /* the same, its splits merged through a cluster (sm_90) */
    const char *kernel;  /* for error messages */
} attn_row;

#define ATTN_ROW(T, NK, NV, GB)                                                                             \
    {T, NK, NV, GB, (ATTN_THREADS / T) * attn_rows_per_step(NK + NV, GB), attn_split<T, NK, NV, GB, false>, \
     attn_split<T, NK, NV, GB, true>, "attn_split<" #T "," #NK "," #NV "," #GB ">"}
#define ATTN_ROWS_GB4(T, NK, NV) ATTN_ROW(T, NK, NV, 1), ATTN_ROW(T, NK, NV, 2), ATTN_ROW(T, NK, NV, 4)

static const attn_row attn_rows[] = {
    ATTN_ROWS_GB4(8, 1, 1),  ATTN_ROW(8, 1, 1, 8),    /* head dims <= 64 */
    ATTN_ROWS_GB4(16, 1, 1), ATTN_ROW(16, 1, 1, 8),   /* <= 128 */
    ATTN_ROWS_GB4(32, 1, 1), ATTN_ROW(32, 1, 1, 8),   /* <= 256 */
    ATTN_ROWS_GB4(32, 1, 2), ATTN_ROWS_GB4(32, 2, 1), /* one of them > 256 */
    ATTN_ROWS_GB4(32, 2, 2),                          /* both <= 512 */
};

/* GB: the group rounded up to a power of two, capped by the register budget
 * (8 for head dims <= 256, 4 above), for one token at 4 (see the top), and
 * at gb_cap. */
static const attn_row *attn_pick(int hd_k, int hd_v, int group, int n_tok, int gb_cap) {
    const int vecs = (hd_k > hd_v ? hd_k : hd_v) / 8;
    const int T = vecs <= 8 ? 8 : vecs <= 16 ? 16 : 32;
    const int nck = CEIL_DIV(hd_k / 8, T), ncv = CEIL_DIV(hd_v / 8, T);
    const int gb_max = nck + ncv <= 2 && n_tok > 1 ? ATTN_GB_MAX : 4;
    int gb = 1;
    while (gb < group && gb < gb_max && gb < gb_cap) gb *= 2;
    for (size_t i = 0; i < sizeof attn_rows / sizeof attn_rows[0]; i++) {
        const attn_row *r = &attn_rows[i];
        if (r->T == T && r->nck == nck && r->ncv == ncv && r->gb == gb) return r;
    }
    return NULL;
}

/* ---- chunk, scratch, launcher, op entry ---------------------------------------------- */

/* The smallest power of two >= max(ATTN_CHUNK_MIN, one step of the kernel)
 * with n_tok * n_split <= ATTN_SPLITS_PER_TOKEN, at most ATTN_CHUNK_MAX. */
static int attn_chunk(const attn_row *r, int n_tok, int max_len) {
    int c = ATTN_CHUNK_MIN;
    while (c < r->step_rows) c *= 2;
    while (c < ATTN_CHUNK_MAX && (int64_t)n_tok * CEIL_DIV(max_len, c) > ATTN_SPLITS_PER_TOKEN) c *= 2;
    return c;
}

/* An upper bound on n_tok * n_split over every call with this n_tok (or
 * fewer) and this max_len (or less), whatever the shapes: n_split <=
 * ceil(max_len / ATTN_CHUNK_MIN) always, and n_tok * n_split <=
 * ATTN_SPLITS_PER_TOKEN unless the chunk is ATTN_CHUNK_MAX. Both terms grow
 * with n_tok and max_len, so a scratch sized for the largest batch and bucket
 * serves them all. */
static uint64_t attn_token_splits_max(int n_tok, int max_len) {
    const uint64_t small = (uint64_t)n_tok * (uint64_t)CEIL_DIV(max_len, ATTN_CHUNK_MIN);
    uint64_t big = (uint64_t)n_tok * (uint64_t)CEIL_DIV(max_len, ATTN_CHUNK_MAX);
    if (big < ATTN_SPLITS_PER_TOKEN) big = ATTN_SPLITS_PER_TOKEN;
    return small < big ? small : big;
}

/* Counters, then (m, l) pairs rounded up to 256 bytes, then the acc floats
 * (both float4-aligned): `parts` (token, head, split) triples. */
static bool attn_scratch_layout(uint64_t parts, int hd_v, uint64_t *ml_end, uint64_t *total) {
    uint64_t ml = 0, acc = 0;
    if (!nib_mul_u64(parts, sizeof(float2), &ml) || !nib_add_u64(ml, ATTN_COUNTER_BYTES + 255, &ml) ||
        !nib_mul_u64(parts, (uint64_t)hd_v * sizeof(float), &acc))
        return false;
    ml &= ~(uint64_t)255;
    if (!nib_add_u64(ml, acc, total) || !nib_add_u64(*total, 255, total) || *total > SIZE_MAX) return false;
    *total &= ~(uint64_t)255;
    *ml_end = ml;
    return true;
}

extern "C" size_t nib_cuda_attention_scratch_bytes(int n_tok, int n_head, int hd_v, int max_len) {
    if (n_tok < 1 || n_head < 1 || hd_v < 1 || max_len < 1) return 0;
    if (max_len <= ATTN_CHUNK_MIN) return 0;  /* always one split: it writes out directly */
    uint64_t parts = 0, ml = 0, total = 0;
    if (!nib_mul_u64(attn_token_splits_max(n_tok, max_len), (uint64_t)n_head, &parts) ||
        !attn_scratch_layout(parts, hd_v, &ml, &total))
        return SIZE_MAX;
    return (size_t)total;
}

/* attn_split is a programmatic dependent launch: its launch, *pos and the
 * rows below it overlap qkv_rope. It lets the kernel after it launch only
 * once its rows are walked; triggered at its top, as every other kernel of
 * the step does, PDL made the step slower (v13: 8B Q4_K_M 384 -> 366 t/s).
 * With the late trigger and the rows ahead, tg128 on the H200 (notes v23):
 * Qwen2.5-0.5B Q4_K_M 1,492 -> 1,546, Llama-3-8B Q4_K_M 428 -> 436,
 * Llama-3.2-1B 1,382 -> 1,416. attn_merge (long contexts) is a plain launch. */
static nib_status attn_launch(const attn_params *p, const attn_row *r, bool cluster, cudaStream_t stream,
                              nib_error *err) {
    const dim3 grid((unsigned)p->n_split, (unsigned)(p->n_head_kv * p->n_slices), (unsigned)p->n_tok);
    cudaError_t e = cluster ? pdl_launch_cluster(r->fn_cl, grid, dim3(ATTN_THREADS), 0, stream, p->n_split, *p)
                            : pdl_launch(r->fn, grid, dim3(ATTN_THREADS), 0, stream, *p);
    if (e == cudaSuccess && p->merge_kernel) {
        attn_merge<<<dim3((unsigned)p->n_head, (unsigned)p->n_tok), ATTN_MERGE_THREADS, 0, stream>>>(*p);
        e = cudaGetLastError();
        if (e != cudaSuccess) r = NULL;  /* name the merge below */
    }
    if (e != cudaSuccess) {
        char what[256];
        snprintf(what, sizeof what,
                 "launch of %s%s (n_tok %d, n_head %d, n_head_kv %d, hd_k %d, hd_v %d, max_len %d, %d splits of %d)",
                 r ? r->kernel : "attn_merge", r && cluster ? " as clusters" : "", p->n_tok, p->n_head, p->n_head_kv, p->hd_k, p->hd_v, p->max_len,
                 p->n_split, p->chunk);
        cuda_ok(e, "cudaGetLastError()", what, err);
        return err ? err->status : NIB_ERR_IO;
    }
    return NIB_OK;
}

/* Whether the splits may merge through a cluster: compute capability 9.0+
 * (asked once), unless NIB_CUDA_ATTN_CLUSTER=0 (read at every call: tests
 * and benches take both paths in one process). */
static bool attn_clusters_on(void) {
    static int major = -1;
    const char *env = getenv("NIB_CUDA_ATTN_CLUSTER");
    if (env && env[0] == '0') return false;
    if (major < 0) {
        int dev = 0, m = 0;
        major = cudaGetDevice(&dev) == cudaSuccess &&
                        cudaDeviceGetAttribute(&m, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess
                    ? m
                    : 0;
    }
    return major >= 9;
}

static bool misaligned(const void *p) { return ((uintptr_t)p & 15) != 0; }

extern "C" nib_status nib_cuda_attention(const nib_cuda_attn *a, void *stream, nib_error *err) {
#define ATTN_ARG(cond, ...) \
    if (cond) return nib_error_set(err, NIB_ERR_ARG, "nib_cuda_attention: " __VA_ARGS__)
    ATTN_ARG(!a, "NULL arguments");
    ATTN_ARG(!a->q || !a->k || !a->v || !a->out || !a->pos, "NULL %s", !a->q ? "q" : !a->k ? "k" : !a->v ? "v" : !a->out ? "out" : "pos");
    ATTN_ARG(a->n_tok < 1 || a->n_tok > ATTN_MAX_TOK, "n_tok %d outside [1, %d]", a->n_tok, ATTN_MAX_TOK);
    ATTN_ARG(a->n_head < 1 || a->n_head_kv < 1, "n_head %d, n_head_kv %d: both must be >= 1", a->n_head, a->n_head_kv);
    ATTN_ARG(a->n_head % a->n_head_kv != 0, "n_head %d is not a multiple of n_head_kv %d (GQA)", a->n_head, a->n_head_kv);
    ATTN_ARG(a->hd_k < 32 || a->hd_k > ATTN_MAX_HD || a->hd_k % 32 != 0, "hd_k %d is not a multiple of 32 in [32, %d]",
             a->hd_k, ATTN_MAX_HD);
    ATTN_ARG(a->hd_v < 32 || a->hd_v > ATTN_MAX_HD || a->hd_v % 32 != 0, "hd_v %d is not a multiple of 32 in [32, %d]",
             a->hd_v, ATTN_MAX_HD);
    ATTN_ARG(a->n_ctx < 1, "n_ctx %d < 1", a->n_ctx);
    ATTN_ARG(a->max_len < 1 || a->max_len > a->n_ctx, "max_len %d outside [1, n_ctx %d]", a->max_len, a->n_ctx);
    ATTN_ARG(a->max_len < a->n_tok, "max_len %d < n_tok %d: the batch cannot fit", a->max_len, a->n_tok);
    ATTN_ARG(a->window < 0, "window %d < 0 (0 means no window)", a->window);
    ATTN_ARG(!isfinite(a->scale), "scale is not finite");
    ATTN_ARG(!(a->softcap >= 0.0f) || !isfinite(a->softcap), "softcap %g must be 0 (off) or a finite positive value",
             (double)a->softcap);
    ATTN_ARG(misaligned(a->q) || misaligned(a->k) || misaligned(a->v) || misaligned(a->out),
             "q, k, v and out must be 16-byte aligned (the kernels load 16-byte vectors)");

    const attn_row *r = attn_pick(a->hd_k, a->hd_v, a->n_head / a->n_head_kv, a->n_tok, ATTN_GB_MAX);
    ATTN_ARG(!r, "no kernel for hd_k %d, hd_v %d", a->hd_k, a->hd_v);  /* not reachable with the checks above */
    /* One token: a query head a CTA (GB 1, the group's heads as head slices,
     * each re-reading the rows from L2) where the grid stays within
     * ATTN_ONE_HEAD_CTAS. At short and middle contexts the CTAs' serial work
     * (GB scores a row, a rescale of GB accumulators) is what the step waits
     * for, not the rows' bytes: tg128 Llama-3-8B Q4_K_M +5.5%, Qwen2.5-0.5B
     * +8.9%, Llama-3.2-1B +5.0%; at depth 4096 the 8B +5.7% (1,024 CTAs),
     * Qwen +9.5%; at 16384 Qwen +5% (896 CTAs) but the 8B -11% (2,048 CTAs:
     * there the four slices' L2 reads of every row cost more than the work
     * they spread). bench/gpu-decode-notes.md v87. */
    if (a->n_tok == 1 && r->gb > 1) {
        const attn_row *r1 = attn_pick(a->hd_k, a->hd_v, a->n_head / a->n_head_kv, 1, 1);
        if (r1 && (int64_t)a->n_head * CEIL_DIV(a->max_len, attn_chunk(r1, 1, a->max_len)) <= ATTN_ONE_HEAD_CTAS) r = r1;
    }
    attn_params p;
    memset(&p, 0, sizeof p);
    p.q = a->q, p.k = a->k, p.v = a->v, p.out = a->out, p.pos = a->pos, p.sinks = a->sinks;
    p.n_tok = a->n_tok, p.n_head = a->n_head, p.n_head_kv = a->n_head_kv, p.hd_k = a->hd_k, p.hd_v = a->hd_v;
    p.group = a->n_head / a->n_head_kv;
    p.n_slices = CEIL_DIV(p.group, r->gb);
    p.window = a->window, p.max_len = a->max_len;
    p.chunk = attn_chunk(r, a->n_tok, a->max_len);
    while (1 << p.chunk_log2 < p.chunk) p.chunk_log2++;
    p.n_split = CEIL_DIV(a->max_len, p.chunk);
    p.scale = a->scale, p.softcap = a->softcap;
    /* The quantized output from the kernels' own epilogue where a CTA writes
     * at most ATTN_FOLD_MAX dims a token; beyond that its serial quantize
     * costs more than a kernel of its own (tg128 in one build, fold against
     * separate: Llama-3-8B 512 dims a CTA +0.7%, Qwen2.5-0.5B 256 +3.6%;
     * Gemma 3 270M, one KV head, 4 x 256 = 1024 dims in one CTA, -1.8%:
     * bench/gpu-decode-notes.md v30, v32). */
    const bool fold = a->act_out && (int64_t)(r->gb < p.group ? r->gb : p.group) * a->hd_v <= ATTN_FOLD_MAX;
    if (a->act_out) ATTN_ARG(misaligned(a->act_out), "act_out must be 16-byte aligned");
    if (fold) {
        const int64_t n = (int64_t)a->n_head * a->hd_v;
        p.act_q = (int8_t *)a->act_out;
        p.act_stride = (int)cuda_act_qs_stride(n);
        p.act_ds = (float2 *)((uint8_t *)a->act_out + cuda_act_qs_stride(n) * (size_t)a->n_tok);
        p.act_sc = (act_scale *)((uint8_t *)a->act_out + cuda_act_scale_off(n, a->n_tok));
    }
    ATTN_ARG((int64_t)a->n_head_kv * p.n_slices > 65535, "n_head_kv %d x %d head slices exceeds the grid's 65535",
             a->n_head_kv, p.n_slices);
    if (p.n_split > 1) {
        ATTN_ARG(!a->scratch, "scratch is NULL but max_len %d needs %d splits (nib_cuda_attention_scratch_bytes)",
                 a->max_len, p.n_split);
        ATTN_ARG(misaligned(a->scratch), "scratch must be 16-byte aligned");
        uint64_t parts = (uint64_t)p.n_tok * (uint64_t)p.n_head * (uint64_t)p.n_split, ml = 0, total = 0;
        ATTN_ARG(!attn_scratch_layout(parts, p.hd_v, &ml, &total), "scratch size overflows");
        p.counters = (unsigned *)a->scratch;
        p.part_ml = (float2 *)((uint8_t *)a->scratch + ATTN_COUNTER_BYTES);
        p.part_acc = (float *)((uint8_t *)a->scratch + ml);
        /* the last CTA merges when it can read every split with one lane and
         * every (token, head slice) has a counter; else attn_merge does */
        p.merge_kernel = p.n_split > ATTN_FUSED_MAX_SPLITS ||
                         (int64_t)p.n_tok * p.n_head_kv * p.n_slices > ATTN_COUNTERS;
    }
    /* one token (decode): a cluster of the splits merges them in DSMEM (no
     * partials, counters or second launch) where the device has clusters and
     * they fit one. Not for batches: with 512 tokens a split waiting at the
     * cluster barrier for its twin holds its SM, and pp512 lost 5-6% (Llama-3-8B
     * and Qwen2.5-0.5B Q4_0, bench/gpu-decode-notes.md v59) */
    const bool cluster = a->n_tok == 1 && p.n_split >= 2 && p.n_split <= ATTN_CLUSTER_MAX && attn_clusters_on();
    if (cluster) p.merge_kernel = 0;
#undef ATTN_ARG
    nib_status s = attn_launch(&p, r, cluster, (cudaStream_t)stream, err);
    if (s == NIB_OK && a->act_out && !fold)
        s = nib_cuda_act_quantize(a->out, (int64_t)a->n_head * a->hd_v, a->n_tok, a->act_out, stream, err);
    return s;
}
