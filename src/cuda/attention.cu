/* Decode attention over an f16 KV cache: split-K "flash decoding".
 *
 * Three layers (STYLE.md, CUDA): nib_cuda_attention validates and unpacks ->
 * attn_launch picks the kernel row, grid and stream -> attn_split (one chunk of
 * the cache per CTA) and attn_merge (combines the chunks).
 *
 * Work split. The cache range [0, max_len) is cut into ATTN_CHUNK-row chunks;
 * CTA (split, kv head [, head slice], token) runs an online softmax (running
 * max m, sum l, unnormalised acc) over the rows of its chunk that lie inside
 * the token's [j0, p], for the GB query heads of one GQA group slice at once,
 * and writes (m, l, acc[hd_v]) per head to scratch. attn_merge rescales the
 * partials by exp(m_i - M), adds the sink to the denominator and writes out.
 * With one split (max_len <= ATTN_CHUNK) attn_split normalises and writes out
 * itself: no merge launch and no scratch.
 *
 * The grid depends on max_len (host-known), never on *pos (device-only): a
 * CTA reads *pos, finds its chunk empty and leaves. That is what lets one
 * captured graph serve every position of a context bucket.
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
 * At the end the teams of a warp combine by shuffles, the 4 warps through
 * shared memory.
 *
 * Why ATTN_CHUNK = 256. At a long context the grid must give each of the
 * H200's 132 SMs several CTAs so that enough loads are in flight: with 8 KV
 * heads and one token, 256-row chunks give 8 * ceil(L / 256) CTAs, 4 per SM
 * from L = 16k and 1 per SM at L = 4k; below that the whole cache read is
 * under 16 MB (~4 us) and launch overhead dominates anyway. Halving the chunk
 * doubles the partials (written and re-read by the merge: about 2 * 4 * G *
 * (hd_v + 2) bytes per chunk against 2 * 256 * (hd_k + hd_v) bytes of K/V, 3%
 * at 256 rows, G = 4, hd 128) and each CTA's fixed cost (q load, team and
 * warp combine). It also makes every context of 256 or fewer rows a single
 * launch. Not yet measured against 128 and 512 on the H200: the next thing to
 * try in a lab run.
 *
 * Register budget. q + acc are GB * (NCK + NCV) * 8 floats per lane; GB is
 * capped so that is at most 128 (GB <= 8 when NCK + NCV = 2, i.e. head dims
 * <= 256; GB <= 4 for 512), and R so the in-flight K/V vectors stay <= 32
 * registers. Larger GQA groups run as several head slices (grid y), each
 * re-reading the rows (from L2 mostly).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cuda_fp16.h>

#include "cuda/cuda_attention.h"
#include "cuda/cuda_internal.h"

#define ATTN_CHUNK 256           /* cache rows per split (see above) */
#define ATTN_WARPS 4             /* warps per attn_split CTA */
#define ATTN_THREADS (ATTN_WARPS * 32)
#define ATTN_MERGE_THREADS 256   /* attn_merge: float4 columns x groups of splits */
#define ATTN_MAX_TOK 65535       /* grid z */
#define ATTN_MAX_HD 512
#define LOG2E_F 1.4426950408889634f

/* What the kernels get: the op entry has checked every field. */
typedef struct attn_params {
    const float *q;          /* (n_tok, n_head, hd_k) */
    const uint16_t *k;       /* (n_ctx, n_head_kv, hd_k) f16 */
    const uint16_t *v;       /* (n_ctx, n_head_kv, hd_v) f16 */
    float *out;              /* (n_tok, n_head, hd_v) */
    const int32_t *pos;      /* device: position of token 0 */
    const float *sinks;      /* (n_head) or NULL */
    float2 *part_ml;         /* (n_tok, n_head, n_split) scratch: (m in log2 units, l) */
    float *part_acc;         /* (n_tok, n_head, n_split, hd_v) scratch: unnormalised acc */
    int n_tok, n_head, n_head_kv, hd_k, hd_v;
    int group;               /* n_head / n_head_kv */
    int n_slices;            /* ceil(group / GB): CTAs per KV head along grid y */
    int window, max_len, n_split;
    float scale, softcap;
} attn_params;

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

/* ---- kernel 1: one chunk of the cache, GB heads of one GQA group ----------------- */

template <int T, int NCK, int NCV, int GB>
__global__ void __launch_bounds__(ATTN_THREADS) attn_split(const attn_params a) {
    constexpr int TEAMS = ATTN_THREADS / T;
    constexpr int R = attn_rows_per_step(NCK + NCV, GB);
    const int split = blockIdx.x, t = blockIdx.z;
    const int kvh = blockIdx.y / a.n_slices, slice = blockIdx.y - kvh * a.n_slices;
    const int h0 = kvh * a.group + slice * GB;           /* first query head of this CTA */
    const int n_h = min(GB, a.group - slice * GB);       /* heads it owns (the rest are padding) */
    const bool single = a.n_split == 1;
    const int p = *a.pos + t;

    if (p < 0 || p >= a.max_len) {  /* the host bound is broken: NaN out (see cuda_attention.h) */
        if (single)
            for (int i = threadIdx.x; i < n_h * a.hd_v; i += ATTN_THREADS)
                a.out[((size_t)t * a.n_head + h0) * a.hd_v + i] = NAN;
        return;  /* with splits, attn_merge writes the NaN */
    }
    const int j0 = a.window > 0 ? max(0, p - a.window + 1) : 0;
    const int lo = max(split * ATTN_CHUNK, j0), hi = min(split * ATTN_CHUNK + ATTN_CHUNK, p + 1);
    if (lo >= hi) {  /* chunk outside [j0, p]: an empty state (the merge skips it anyway) */
        if (!single && threadIdx.x < n_h)
            a.part_ml[((size_t)t * a.n_head + h0 + threadIdx.x) * a.n_split + split] = make_float2(-INFINITY, 0.0f);
        return;
    }

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int tl = lane % T, team = threadIdx.x / T;
    const int ck = a.hd_k / 8, cv = a.hd_v / 8;  /* 16-byte vectors per row */

    /* this lane's slice of the GB query vectors, pre-scaled (one rounding per
     * element, instead of a multiply per score) */
    float qr[GB][NCK * 8];
#pragma unroll
    for (int g = 0; g < GB; g++)
#pragma unroll
        for (int i = 0; i < NCK; i++) {
            const int c = tl + i * T;
            float4 x0 = make_float4(0.f, 0.f, 0.f, 0.f), x1 = x0;
            if (g < n_h && c < ck) {
                const float4 *src = (const float4 *)(a.q + ((size_t)t * a.n_head + h0 + g) * a.hd_k) + 2 * c;
                x0 = __ldg(src), x1 = __ldg(src + 1);
            }
            qr[g][i * 8 + 0] = x0.x * a.scale, qr[g][i * 8 + 1] = x0.y * a.scale;
            qr[g][i * 8 + 2] = x0.z * a.scale, qr[g][i * 8 + 3] = x0.w * a.scale;
            qr[g][i * 8 + 4] = x1.x * a.scale, qr[g][i * 8 + 5] = x1.y * a.scale;
            qr[g][i * 8 + 6] = x1.z * a.scale, qr[g][i * 8 + 7] = x1.w * a.scale;
        }

    float m[GB], l[GB], acc[GB][NCV * 8];
#pragma unroll
    for (int g = 0; g < GB; g++) {
        m[g] = -INFINITY, l[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < NCV * 8; e++) acc[g][e] = 0.0f;
    }

    const size_t k_row = (size_t)a.n_head_kv * a.hd_k, v_row = (size_t)a.n_head_kv * a.hd_v;  /* elements */
    const uint16_t *kb = a.k + (size_t)kvh * a.hd_k, *vb = a.v + (size_t)kvh * a.hd_v;

    /* The trip count depends only on lo and hi, so every lane of the CTA runs
     * the same steps and the shuffles below always see their whole warp; rows
     * past hi are predicated off (no load: rows past p may hold anything). */
    for (int base = lo; base < hi; base += TEAMS * R) {
        uint4 kr[R][NCK], vr[R][NCV];
        bool ok[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int row = base + team * R + r;
            ok[r] = row < hi;
#pragma unroll
            for (int i = 0; i < NCK; i++) {
                const int c = tl + i * T;
                kr[r][i] = ok[r] && c < ck ? __ldg((const uint4 *)(kb + row * k_row) + c) : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int i = 0; i < NCV; i++) {
                const int c = tl + i * T;
                vr[r][i] = ok[r] && c < cv ? __ldg((const uint4 *)(vb + row * v_row) + c) : make_uint4(0, 0, 0, 0);
            }
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
                if (a.softcap > 0.0f) x = a.softcap * tanhf(x / a.softcap);
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
        if (single) {
            /* lo < hi here, so M is finite; the sink joins max and denominator */
            if (a.sinks) {
                const float s2 = __ldg(a.sinks + h) * LOG2E_F, Ms = fmaxf(M, s2), f = exp2f(M - Ms);
                A *= f;
                L = L * f + exp2f(s2 - Ms);
            }
            a.out[((size_t)t * a.n_head + h) * a.hd_v + d] = A / L;
        } else {
            const size_t th = ((size_t)t * a.n_head + h) * a.n_split + split;
            a.part_acc[th * a.hd_v + d] = A;
            if (d == 0) a.part_ml[th] = make_float2(M, L);
        }
    }
}

/* ---- kernel 2: merge the splits of one (token, head) ------------------------------ */

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
 * nothing. Threads are (hd_v / 4 float4 columns) x (groups that take every
 * n_grp-th split), so a long context's hundreds of splits are walked by
 * several groups at once; the groups then add up through shared memory. */
__global__ void __launch_bounds__(ATTN_MERGE_THREADS) attn_merge(const attn_params a) {
    __shared__ float red[ATTN_MERGE_THREADS / 32];
    __shared__ float4 part[ATTN_MERGE_THREADS];
    const int h = blockIdx.x, t = blockIdx.y, tid = threadIdx.x;
    const int p = *a.pos + t;
    float *dst = a.out + ((size_t)t * a.n_head + h) * a.hd_v;
    if (p < 0 || p >= a.max_len) {  /* the host bound is broken: NaN out (see cuda_attention.h) */
        for (int d = tid; d < a.hd_v; d += ATTN_MERGE_THREADS) dst[d] = NAN;
        return;
    }
    const int j0 = a.window > 0 ? max(0, p - a.window + 1) : 0;
    const int s_lo = j0 / ATTN_CHUNK, s_hi = p / ATTN_CHUNK;
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
        ((float4 *)dst)[col] = make_float4(A.x * inv, A.y * inv, A.z * inv, A.w * inv);
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
    attn_kernel_fn fn;
    const char *kernel;  /* for error messages */
} attn_row;

#define ATTN_ROW(T, NK, NV, GB) {T, NK, NV, GB, attn_split<T, NK, NV, GB>, "attn_split<" #T "," #NK "," #NV "," #GB ">"}
#define ATTN_ROWS_GB4(T, NK, NV) ATTN_ROW(T, NK, NV, 1), ATTN_ROW(T, NK, NV, 2), ATTN_ROW(T, NK, NV, 4)

static const attn_row attn_rows[] = {
    ATTN_ROWS_GB4(8, 1, 1),  ATTN_ROW(8, 1, 1, 8),    /* head dims <= 64 */
    ATTN_ROWS_GB4(16, 1, 1), ATTN_ROW(16, 1, 1, 8),   /* <= 128 */
    ATTN_ROWS_GB4(32, 1, 1), ATTN_ROW(32, 1, 1, 8),   /* <= 256 */
    ATTN_ROWS_GB4(32, 1, 2), ATTN_ROWS_GB4(32, 2, 1), /* one of them > 256 */
    ATTN_ROWS_GB4(32, 2, 2),                          /* both <= 512 */
};

static const attn_row *attn_pick(int hd_k, int hd_v, int group) {
    const int vecs = (hd_k > hd_v ? hd_k : hd_v) / 8;
    const int T = vecs <= 8 ? 8 : vecs <= 16 ? 16 : 32;
    const int nck = CEIL_DIV(hd_k / 8, T), ncv = CEIL_DIV(hd_v / 8, T);
    const int gb_max = nck + ncv <= 2 ? 8 : 4;
    int gb = 1;
    while (gb < group && gb < gb_max) gb *= 2;
    for (size_t i = 0; i < sizeof attn_rows / sizeof attn_rows[0]; i++) {
        const attn_row *r = &attn_rows[i];
        if (r->T == T && r->nck == nck && r->ncv == ncv && r->gb == gb) return r;
    }
    return NULL;
}

/* ---- scratch, launcher, op entry ------------------------------------------------------- */

static int attn_n_split(int max_len) { return CEIL_DIV(max_len, ATTN_CHUNK); }

/* (m, l) pairs first, rounded up to 256 bytes so the acc floats start float4-aligned */
static bool attn_scratch_layout(int n_tok, int n_head, int hd_v, int max_len, uint64_t *ml_bytes, uint64_t *total) {
    const int n_split = attn_n_split(max_len);
    uint64_t parts = 0, ml = 0, acc = 0;
    if (!nib_mul_u64((uint64_t)n_tok, (uint64_t)n_head, &parts) || !nib_mul_u64(parts, (uint64_t)n_split, &parts) ||
        !nib_mul_u64(parts, sizeof(float2), &ml) || !nib_add_u64(ml, 255, &ml) ||
        !nib_mul_u64(parts, (uint64_t)hd_v * sizeof(float), &acc))
        return false;
    ml &= ~(uint64_t)255;
    if (!nib_add_u64(ml, acc, total) || *total > SIZE_MAX) return false;
    *ml_bytes = ml;
    return true;
}

extern "C" size_t nib_cuda_attention_scratch_bytes(int n_tok, int n_head, int hd_v, int max_len) {
    if (n_tok < 1 || n_head < 1 || hd_v < 1 || max_len < 1) return 0;
    if (attn_n_split(max_len) == 1) return 0;  /* the single-split path writes out directly */
    uint64_t ml = 0, total = 0;
    if (!attn_scratch_layout(n_tok, n_head, hd_v, max_len, &ml, &total)) return SIZE_MAX;
    return (size_t)total;
}

static nib_status attn_launch(const attn_params *p, const attn_row *r, cudaStream_t stream, nib_error *err) {
    const dim3 grid((unsigned)p->n_split, (unsigned)(p->n_head_kv * p->n_slices), (unsigned)p->n_tok);
    r->fn<<<grid, ATTN_THREADS, 0, stream>>>(*p);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess && p->n_split > 1) {
        attn_merge<<<dim3((unsigned)p->n_head, (unsigned)p->n_tok), ATTN_MERGE_THREADS, 0, stream>>>(*p);
        e = cudaGetLastError();
        if (e != cudaSuccess) r = NULL;  /* name the merge below */
    }
    if (e != cudaSuccess) {
        char what[224];
        snprintf(what, sizeof what, "launch of %s (n_tok %d, n_head %d, n_head_kv %d, hd_k %d, hd_v %d, max_len %d, %d splits)",
                 r ? r->kernel : "attn_merge", p->n_tok, p->n_head, p->n_head_kv, p->hd_k, p->hd_v, p->max_len,
                 p->n_split);
        cuda_ok(e, "cudaGetLastError()", what, err);
        return err ? err->status : NIB_ERR_IO;
    }
    return NIB_OK;
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

    const attn_row *r = attn_pick(a->hd_k, a->hd_v, a->n_head / a->n_head_kv);
    ATTN_ARG(!r, "no kernel for hd_k %d, hd_v %d", a->hd_k, a->hd_v);  /* not reachable with the checks above */
    attn_params p;
    memset(&p, 0, sizeof p);
    p.q = a->q, p.k = a->k, p.v = a->v, p.out = a->out, p.pos = a->pos, p.sinks = a->sinks;
    p.n_tok = a->n_tok, p.n_head = a->n_head, p.n_head_kv = a->n_head_kv, p.hd_k = a->hd_k, p.hd_v = a->hd_v;
    p.group = a->n_head / a->n_head_kv;
    p.n_slices = CEIL_DIV(p.group, r->gb);
    p.window = a->window, p.max_len = a->max_len, p.n_split = attn_n_split(a->max_len);
    p.scale = a->scale, p.softcap = a->softcap;
    ATTN_ARG((int64_t)a->n_head_kv * p.n_slices > 65535, "n_head_kv %d x %d head slices exceeds the grid's 65535",
             a->n_head_kv, p.n_slices);
    if (p.n_split > 1) {
        ATTN_ARG(!a->scratch, "scratch is NULL but max_len %d needs %d splits (nib_cuda_attention_scratch_bytes)",
                 a->max_len, p.n_split);
        ATTN_ARG(misaligned(a->scratch), "scratch must be 16-byte aligned");
        uint64_t ml = 0, total = 0;
        ATTN_ARG(!attn_scratch_layout(p.n_tok, p.n_head, p.hd_v, p.max_len, &ml, &total), "scratch size overflows");
        p.part_ml = (float2 *)a->scratch;
        p.part_acc = (float *)((uint8_t *)a->scratch + ml);
    }
#undef ATTN_ARG
    return attn_launch(&p, r, (cudaStream_t)stream, err);
}
