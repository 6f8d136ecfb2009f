/* What the GPU tests share: the opening probe, and random valid weight rows
 * of any format.
 *
 * Random rows: random bytes,
 * then every fp16 scale field replaced by a finite random value of either sign
 * (never zero), so the numbers are those of a real file without running a
 * quantizer. Float formats get normal values. Include after test.h (it uses
 * the test's random numbers). */
#ifndef NIB_TESTS_GPU_TEST_H
#define NIB_TESTS_GPU_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/fp16.h"
#include "cuda/cuda.h"
#include "nib.h"

/* The opening of every GPU test: without a usable GPU, prints the skip with
 * the reason, counts it and returns false (main then returns
 * test_summary()); with one, prints the device and returns true. */
static inline bool gpu_test_start(const char *what) {
    char why[256];
    if (!nib_cuda_probe(why, sizeof why)) {
        printf("SKIP %s: %s\n", what, why);
        test_skipped++;
        return false;
    }
    nib_cuda_device_info info;
    if (nib_cuda_device_get(0, &info, why, sizeof why))
        printf("device 0: %s, compute capability %d.%d, %d SMs\n", info.name, info.cc_major, info.cc_minor,
               info.sm_count);
    return true;
}

/* Device buffers for a test: an allocation that says why it failed (NULL,
 * and the test's checks on it fail), and copies each way that say so when
 * they fail (the copy back waits for the device first). */
static inline void *gpu_alloc(size_t bytes) {
    nib_error err;
    void *p = nib_cuda_alloc(bytes, &err);
    if (!p) fprintf(stderr, "  alloc: %s\n", err.msg);
    return p;
}
static inline void gpu_upload(void *d, const void *h, size_t n) {
    nib_error err;
    if (nib_cuda_copy_to_device(d, h, n, &err)) fprintf(stderr, "  upload: %s\n", err.msg);
}
static inline void gpu_download(void *h, const void *d, size_t n) {
    nib_error err;
    if (nib_cuda_sync(&err) || nib_cuda_copy_to_host(h, d, n, &err)) fprintf(stderr, "  copy back: %s\n", err.msg);
}

/* Every n-th scale is an fp16 subnormal (0: never), which decoders must read
 * exactly too; tests whose error bounds assume normal scales leave it 0. */
static int random_blocks_subnormal_every = 0;

/* Where each format keeps its fp16 scales: byte offsets in the block (-1 ends). */
typedef struct scale_fields {
    nib_type type;
    int half_off[3];
} scale_fields;

static const scale_fields fields[] = {
    {NIB_TYPE_Q4_0, {0, -1}},       {NIB_TYPE_Q4_1, {0, 2, -1}},   {NIB_TYPE_Q5_0, {0, -1}},
    {NIB_TYPE_Q5_1, {0, 2, -1}},    {NIB_TYPE_Q8_0, {0, -1}},      {NIB_TYPE_Q2_K, {80, 82, -1}},
    {NIB_TYPE_Q3_K, {108, -1}},     {NIB_TYPE_Q4_K, {0, 2, -1}},   {NIB_TYPE_Q5_K, {0, 2, -1}},
    {NIB_TYPE_Q6_K, {208, -1}},     {NIB_TYPE_IQ4_NL, {0, -1}},    {NIB_TYPE_IQ4_XS, {0, -1}},
    {NIB_TYPE_IQ2_XXS, {0, -1}},    {NIB_TYPE_IQ2_XS, {0, -1}},    {NIB_TYPE_IQ2_S, {0, -1}},
    {NIB_TYPE_IQ3_XXS, {0, -1}},    {NIB_TYPE_IQ3_S, {0, -1}},     {NIB_TYPE_IQ1_S, {0, -1}},
    {NIB_TYPE_TQ1_0, {52, -1}},     {NIB_TYPE_TQ2_0, {64, -1}},
};

/* A finite fp16 of random sign, magnitude in [2^-8, 2^-2): never zero (or,
 * see random_blocks_subnormal_every, a subnormal). */
static inline uint16_t rand_scale(void) {
    if (random_blocks_subnormal_every > 0 && rng_u64() % (uint64_t)random_blocks_subnormal_every == 0) return (uint16_t)((1 + rng_u64() % 1023) | ((rng_u64() & 1) << 15));
    double mag = ldexp(1.0 + rng_uniform(), -8 + (int)(rng_u64() % 6));
    return nib_f32_to_fp16((float)((rng_u64() & 1) ? -mag : mag));
}

static inline void random_rows(nib_type t, void *dst, int64_t n_in, int64_t n_out) {
    size_t rb = 0;
    nib_row_bytes(t, n_in, &rb);
    uint8_t *p = dst;
    rng_bytes(p, rb * (size_t)n_out);
    const size_t bb = nib_type_block_bytes(t);
    const int64_t n_blocks = (int64_t)(rb * (size_t)n_out / bb);
    if (t == NIB_TYPE_F32 || t == NIB_TYPE_F16 || t == NIB_TYPE_BF16) {
        for (int64_t i = 0; i < n_in * n_out; i++) {
            const float v = (float)rng_normal();
            if (t == NIB_TYPE_F32) memcpy(p + 4 * i, &v, 4);
            else {
                const uint16_t h = t == NIB_TYPE_F16 ? nib_f32_to_fp16(v) : nib_f32_to_bf16(v);
                memcpy(p + 2 * i, &h, 2);
            }
        }
        return;
    }
    if (t == NIB_TYPE_MXFP4) { /* E8M0 exponent near 1.0 (2^(e-127), e in 120..134), and e = 0, 1 now and then */
        for (int64_t i = 0; i < n_blocks; i++)
            p[(size_t)i * bb] = (uint8_t)(i % 11 == 5 ? (int)(i % 2) : 120 + (int)(rng_u64() % 15));
        return;
    }
    if (t == NIB_TYPE_IQ1_M) { /* the fp16 d is the top nibbles of the four u16 words of scales[] at 48 */
        for (int64_t i = 0; i < n_blocks; i++) {
            const uint16_t h = rand_scale();
            for (int k = 0; k < 4; k++) {
                uint8_t *hi = p + (size_t)i * bb + 48 + 2 * k + 1;
                *hi = (uint8_t)((*hi & 0x0F) | ((h >> (4 * k)) & 0xF) << 4);
            }
        }
        return;
    }
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
        if (fields[f].type != t) continue;
        for (int64_t i = 0; i < n_blocks; i++)
            for (int k = 0; k < 3 && fields[f].half_off[k] >= 0; k++) {
                uint16_t h = rand_scale();
                memcpy(p + (size_t)i * bb + (size_t)fields[f].half_off[k], &h, 2);
            }
        return;
    }
    fprintf(stderr, "  (test has no scale-field row for %s: blocks left as random bytes)\n", nib_type_name(t));
}

#endif
