/* Synthetic models (see synth.h): shapes, llama.cpp's quantization mix, random
 * valid blocks, a placeholder vocabulary, and a self-check.
 *
 * How a file is made, and why this way:
 *   1. a plan: every tensor's name, format and shape, in llama.cpp's naming;
 *   2. the GGUF writer writes the header and zero-filled tensor data (it takes
 *      data pointers, so every tensor points into one read-only anonymous
 *      mapping: zero pages, no memory). The writer only writes whole files
 *      from memory; a streaming entry point (header only, or a fill callback)
 *      would save this pass over the file;
 *   3. the thread pool fills the tensors in 1 MiB chunks with pwrite: random
 *      bytes from a PRNG seeded by (seed, tensor, chunk), so the bytes do not
 *      depend on the thread count, then each block's fp16 scale fields are
 *      overwritten with finite values of the right size (the table below);
 *   4. the file is reopened, loaded by the strict binder, and a sample of rows
 *      of every tensor is dequantized through the format table and checked.
 * Peak memory: one chunk buffer per thread plus the metadata (the vocabulary
 * strings, ~3 MB at 150k tokens, held twice: ours and the writer's copy).
 */
#include "model/synth.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fp16.h"
#include "quant/blocks.h"

/* ---- shapes --------------------------------------------------------------------
 * One row per shape, numbers from the model's config.json (Hugging Face):
 * vocab_size, hidden_size, num_hidden_layers, num_attention_heads,
 * num_key_value_heads, head_dim (hidden/heads), intermediate_size,
 * max_position_embeddings, rope_theta, rms_norm_eps, tie_word_embeddings, and
 * whether q/k/v have biases (qwen2); for gemma2 and gemma3 the sliding window
 * (config.json's sliding_window), which also brings the norms after attention
 * and FFN (and gemma3's QK-norms; gemma2's soft-capping keys). To add a shape:
 * add a row; the arch must be one nib_arch_find knows and the tensors it needs
 * must be the ones the plan below makes (llama-style blocks, optional QKV
 * biases, the gemmas' norms, QK-norms for qwen3/gemma3, the experts'
 * router and 3-D expert matrices). */
static const nib_synth_shape shapes[] = {
    /*  name            arch     vocab   embd  lay head kv  hd  ff     ctx     rope       eps   tied   bias  window */
    {"tiny-llama",     "llama", 512,    256,  2,  4,   2,  64, 512,   2048,   10000.0f,  1e-5f, false, false, 0, 0, 0, 0},
    {"tiny-qwen2",     "qwen2", 512,    192,  2,  3,   1,  64, 512,   2048,   1000000.0f, 1e-6f, true, true, 0, 0, 0, 0},
    {"tiny-qwen3",     "qwen3", 512,    128,  2,  4,   2,  32, 384,   2048,   1000000.0f, 1e-6f, true, false, 0, 0, 0, 0},
    {"tiny-gemma3",    "gemma3", 512,   128,  7,  2,   1,  64, 256,   2048,   1000000.0f, 1e-6f, true, false, 16, 0, 0, 0},
    {"tiny-gemma2",    "gemma2", 512,   128,  4,  2,   1,  64, 256,   2048,   10000.0f,  1e-6f, true,  false, 16, 0, 0, 0},
    {"tiny-phi3",      "phi3",  512,    256,  2,  4,   2,  64, 512,   4096,   10000.0f,  1e-5f, false, false, 0, 0, 0, 0},
    {"tiny-smollm3",   "smollm3", 512,  256,  8,  4,   2,  64, 512,   4096,   5000000.0f, 1e-6f, true, false, 0, 0, 0, 0},
    {"tiny-granite",   "granite", 512,  256,  2,  4,   2,  64, 512,   4096,   10000.0f,  1e-5f, true,  false, 0, 0, 0, 0},
    {"tiny-granitemoe", "granitemoe", 512, 128, 2, 4,  2,  32, 64,    4096,   10000.0f,  1e-6f, true,  false, 0, 8, 2, 64},
    {"smollm2-135m",   "llama", 49152,  576,  30, 9,   3,  64, 1536,  8192,   100000.0f, 1e-5f, true,  false, 0, 0, 0, 0},
    {"gemma3-270m",    "gemma3", 262144, 640, 18, 4,   1,  256, 2048, 32768,  1000000.0f, 1e-6f, true, false, 512, 0, 0, 0},
    {"gemma2-2b",      "gemma2", 256000, 2304, 26, 8,  4,  256, 9216, 8192,   10000.0f,  1e-6f, true,  false, 4096, 0, 0, 0},
    {"qwen2.5-0.5b",   "qwen2", 151936, 896,  24, 14,  2,  64, 4864,  32768,  1000000.0f, 1e-6f, true, true, 0, 0, 0, 0},
    {"llama3.2-1b",    "llama", 128256, 2048, 16, 32,  8,  64, 8192,  131072, 500000.0f, 1e-5f, true,  false, 0, 0, 0, 0},
    {"phi3-mini-4k",   "phi3",  32064,  3072, 32, 32,  32, 96, 8192,  4096,   10000.0f,  1e-5f, false, false, 0, 0, 0, 0},
    {"smollm3-3b",     "smollm3", 128256, 2048, 36, 16, 4, 128, 11008, 65536, 5000000.0f, 1e-6f, true, false, 0, 0, 0, 0},
    {"granite3.1-2b",  "granite", 49155, 2048, 40, 32, 8,  64, 8192,  131072, 5000000.0f, 1e-5f, true, false, 0, 0, 0, 0},
    {"qwen2.5-7b",     "qwen2", 152064, 3584, 28, 28,  4,  128, 18944, 32768, 1000000.0f, 1e-6f, false, true, 0, 0, 0, 0},
    {"llama3-8b",      "llama", 128256, 4096, 32, 32,  8,  128, 14336, 8192,  500000.0f, 1e-5f, false, false, 0, 0, 0, 0},
    {"gemma3-12b",     "gemma3", 262144, 3840, 48, 16, 8,  256, 15360, 131072, 1000000.0f, 1e-6f, true, false, 1024, 0, 0, 0},
    {"gemma3-27b",     "gemma3", 262144, 5376, 62, 32, 16, 128, 21504, 131072, 1000000.0f, 1e-6f, true, false, 1024, 0, 0, 0},
    /* mixtures of experts:                                                                     experts used ff_exp */
    {"tiny-mixtral",   "llama", 512,    128,  2,  4,   2,  32, 256,   2048,   1000000.0f, 1e-5f, false, false, 0,  4, 2, 256},
    {"tiny-qwen3moe",  "qwen3moe", 512, 128,  2,  4,   2,  32, 384,   2048,   1000000.0f, 1e-6f, false, false, 0,  8, 3, 64},
    {"tiny-gpt-oss",   "gpt-oss", 512,  128,  2,  4,   2,  32, 64,    4096,   150000.0f, 1e-5f, false, true, 16,  8, 2, 64},
    {"gpt-oss-20b",    "gpt-oss", 201088, 2880, 24, 64, 8, 64, 2880,  131072, 150000.0f, 1e-5f, false, true, 128, 32, 4, 2880},
    {"tiny-olmoe",     "olmoe", 512,    128,  2,  4,   4,  32, 64,    4096,   10000.0f,  1e-5f, false, false, 0,  8, 3, 64},
    {"tiny-olmo2",     "olmo2", 512,    256,  2,  4,   4,  64, 512,   4096,   500000.0f, 1e-6f, false, false, 0, 0, 0, 0},
    {"olmo2-7b",       "olmo2", 100352, 4096, 32, 32,  32, 128, 11008, 4096,  500000.0f, 1e-6f, false, false, 0, 0, 0, 0},
    {"olmoe-1b-7b",    "olmoe", 50304,  2048, 16, 16,  16, 128, 1024, 4096,   10000.0f,  1e-5f, false, false, 0, 64, 8, 1024},
    {"qwen3-30b-a3b",  "qwen3moe", 151936, 2048, 48, 32, 4, 128, 6144, 40960, 1000000.0f, 1e-6f, false, false, 0, 128, 8, 768},
    {"mixtral-8x7b",   "llama", 32000,  4096, 32, 32,  8,  128, 14336, 32768, 1000000.0f, 1e-5f, false, false, 0,  8, 2, 14336},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

/* ---- file types ------------------------------------------------------------------
 * file_type is llama.cpp's llama_ftype (LLAMA_FTYPE_MOSTLY_*). F16 is not
 * "mixed": llama.cpp runs its per-tensor rules only for quantized targets. */
static const nib_synth_ftype ftypes[] = {
    /* name     base           ftype mixed */
    {"F16",    NIB_TYPE_F16,  1,    false},
    {"Q8_0",   NIB_TYPE_Q8_0, 7,    true},
    {"Q4_0",   NIB_TYPE_Q4_0, 2,    true},
    {"Q4_K_M", NIB_TYPE_Q4_K, 15,   true},
    {"Q4_1",   NIB_TYPE_Q4_1, 3,    true},
    {"Q5_0",   NIB_TYPE_Q5_0, 8,    true},
    {"Q5_1",   NIB_TYPE_Q5_1, 9,    true},
    {"Q5_K_M", NIB_TYPE_Q5_K, 17,   true},
    {"Q6_K",   NIB_TYPE_Q6_K, 18,   true},
    {"Q3_K_M", NIB_TYPE_Q3_K, 12,   true},
    {"Q2_K",   NIB_TYPE_Q2_K, 10,   true},
    /* the IQ and ternary types: the base format for every layer matrix and
     * the LM head in Q6_K; llama.cpp's per-tensor rules for them (which give
     * some attention and FFN matrices more bits) are not reproduced */
    {"IQ4_XS", NIB_TYPE_IQ4_XS, 30,   true},
    {"IQ4_NL", NIB_TYPE_IQ4_NL, 25,   true},
    {"IQ3_XXS", NIB_TYPE_IQ3_XXS, 23, true},
    {"IQ3_S",  NIB_TYPE_IQ3_S, 26,    true},
    {"IQ2_XXS", NIB_TYPE_IQ2_XXS, 19, true},
    {"IQ2_XS", NIB_TYPE_IQ2_XS, 20,   true},
    {"IQ2_S",  NIB_TYPE_IQ2_S, 28,    true},
    {"IQ1_S",  NIB_TYPE_IQ1_S, 24,    true},
    {"TQ2_0",  NIB_TYPE_TQ2_0, 37,    true},
    {"TQ1_0",  NIB_TYPE_TQ1_0, 36,    true},
    {"MXFP4",  NIB_TYPE_MXFP4, 38,    true},  /* llama.cpp's MXFP4_MOE: every 2-D weight MXFP4 here */
};
#define N_FTYPES ((int)(sizeof ftypes / sizeof ftypes[0]))

int nib_synth_n_shapes(void) { return N_SHAPES; }
const nib_synth_shape *nib_synth_shape_at(int i) { return i >= 0 && i < N_SHAPES ? &shapes[i] : NULL; }
const nib_synth_shape *nib_synth_shape_find(const char *name) {
    for (int i = 0; i < N_SHAPES; i++)
        if (!strcmp(shapes[i].name, name)) return &shapes[i];
    return NULL;
}
int nib_synth_n_ftypes(void) { return N_FTYPES; }
const nib_synth_ftype *nib_synth_ftype_at(int i) { return i >= 0 && i < N_FTYPES ? &ftypes[i] : NULL; }
const nib_synth_ftype *nib_synth_ftype_find(const char *name) {
    for (int i = 0; i < N_FTYPES; i++)
        if (!strcasecmp(ftypes[i].name, name)) return &ftypes[i];
    return NULL;
}

/* ---- random blocks ------------------------------------------------------------------
 * One row per block format synth writes: where the fp16 scale d sits, and the
 * second fp16 field (Q4_1/Q5_1's min m, the K-quants' dmin) set to min_mul*|d|
 * so that the block's values are centred on zero for random quants:
 *   Q4_1  x = d*q + m,            q in 0..15, mean 7.5d   -> m = -7.5|d|
 *   Q4_K  x = d*sc*q - dmin*mn,   sc, mn random 6-bit     -> dmin = 7.5|d|
 * Symmetric formats (x = d*(q - offset)) get a random sign on d instead, which
 * cancels the -0.5d mean of q - 8 in Q4_0. The scale's magnitude is the
 * tensor's base times a jitter in [0.75, 1.25]; both sign and jitter come from
 * the random bits the scale field held, so they cost no PRNG calls. How large
 * the values are for a base of 1 is measured, not derived (calibrate()). */
typedef struct fill_row {
    nib_type type;
    uint16_t d_off;
    int16_t m_off;     /* -1: none */
    float min_mul;
    bool signed_d;
    bool e8m0;         /* the scale is one E8M0 byte (2^(e - 127)), not an fp16 d: MXFP4 */
} fill_row;

static const fill_row fill_table[] = {
    {NIB_TYPE_Q2_K, offsetof(block_q2_K, d), offsetof(block_q2_K, dmin), 1.5f, false, false},
    {NIB_TYPE_Q3_K, offsetof(block_q3_K, d), -1, 0.0f, true, false},  /* x = d*(sc-32)*(q-4 or q) */
    {NIB_TYPE_IQ4_NL, offsetof(block_iq4_nl, d), -1, 0.0f, true, false},  /* Q2_K/Q3_K's fallback */
    {NIB_TYPE_Q4_0, offsetof(block_q4_0, d), -1, 0.0f, true, false},
    {NIB_TYPE_Q4_1, offsetof(block_q4_1, d), offsetof(block_q4_1, m), -7.5f, false, false},
    {NIB_TYPE_Q5_0, offsetof(block_q5_0, d), -1, 0.0f, true, false},
    {NIB_TYPE_Q5_1, offsetof(block_q5_1, d), offsetof(block_q5_1, m), -15.5f, false, false},
    {NIB_TYPE_Q8_0, offsetof(block_q8_0, d), -1, 0.0f, true, false},
    {NIB_TYPE_Q4_K, offsetof(block_q4_K, d), offsetof(block_q4_K, dmin), 7.5f, false, false},
    {NIB_TYPE_Q5_K, offsetof(block_q5_K, d), offsetof(block_q5_K, dmin), 15.5f, false, false},
    {NIB_TYPE_Q6_K, offsetof(block_q6_K, d), -1, 0.0f, true, false},  /* x = d*sc*(q-32), sc random int8 */
    /* the lattices' codebooks and the trits are symmetric about zero */
    {NIB_TYPE_IQ4_XS, offsetof(block_iq4_xs, d), -1, 0.0f, true, false},
    {NIB_TYPE_IQ3_XXS, offsetof(block_iq3_xxs, d), -1, 0.0f, true, false},
    {NIB_TYPE_IQ3_S, offsetof(block_iq3_s, d), -1, 0.0f, true, false},
    {NIB_TYPE_IQ2_XXS, offsetof(block_iq2_xxs, d), -1, 0.0f, true, false},
    {NIB_TYPE_IQ2_XS, offsetof(block_iq2_xs, d), -1, 0.0f, true, false},
    {NIB_TYPE_IQ2_S, offsetof(block_iq2_s, d), -1, 0.0f, true, false},
    {NIB_TYPE_IQ1_S, offsetof(block_iq1_s, d), -1, 0.0f, true, false},
    {NIB_TYPE_TQ2_0, offsetof(block_tq2_0, d), -1, 0.0f, true, false},
    {NIB_TYPE_TQ1_0, offsetof(block_tq1_0, d), -1, 0.0f, true, false},
    {NIB_TYPE_MXFP4, offsetof(block_mxfp4, e), -1, 0.0f, false, true},  /* signs are in the codes */
};

static const fill_row *fill_find(nib_type t) {
    for (size_t i = 0; i < sizeof fill_table / sizeof fill_table[0]; i++)
        if (fill_table[i].type == t) return &fill_table[i];
    return NULL;
}

/* splitmix64 (Steele, Lea, Flood 2014): two multiplies per 8 bytes, passes
 * BigCrush; plenty for weights nobody reads. As a counter-based stream seeded
 * per (tensor, chunk), any chunk can be made by any thread. */
static inline uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t stream_seed(uint64_t seed, uint64_t tensor, uint64_t chunk) {
    uint64_t s = seed;
    uint64_t a = splitmix64(&s) ^ (tensor * 0xD1B54A32D192ED03ull);
    return splitmix64(&a) ^ (chunk * 0x8CB92BA72F3D8DD7ull);
}

/* A uniform in (-1, 1) from 16 random bits (never 0: no exact-zero weights). */
static inline float unit_uniform(uint32_t u16) { return ((float)u16 + 0.5f) * (2.0f / 65536.0f) - 1.0f; }
#define SQRT3 1.7320508f

/* n random bytes; writes whole 8-byte words, so buf must have 7 bytes of slack
 * after n (a fixed-size memcpy is one store; a variable one is a call). */
static void fill_random(uint8_t *buf, size_t n, uint64_t *state) {
    uint64_t s = *state;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t r = splitmix64(&s);
        memcpy(buf + i, &r, 8);
    }
    *state = s;
}

/* n_blocks random blocks of a quantized format with scales of magnitude base.
 * The 256 possible scales (and mins) are converted to fp16 once per call: a
 * block is then two table loads, which keeps this at the speed of the PRNG
 * even for Q4_0's 18-byte blocks. */
static void fill_blocks(const fill_row *fr, size_t block_bytes, uint8_t *buf, int64_t n_blocks, float base,
                        uint64_t *state) {
    uint16_t d_tab[256], m_tab[256];
    for (int j = 0; j < 256; j++) {
        d_tab[j] = nib_f32_to_fp16(base * (0.75f + (float)j * (0.5f / 256.0f)));
        m_tab[j] = nib_f32_to_fp16(fr->min_mul * nib_fp16_to_f32(d_tab[j]));
    }
    uint16_t sign_mask = fr->signed_d ? 0x8000 : 0;
    fill_random(buf, (size_t)n_blocks * block_bytes, state);
    if (fr->e8m0) {
        /* powers of two: 2^f or 2^(f + 1) around base = 2^(f + r), the upper
         * one with probability p = (4^r - 1) / 3 (the byte's random bits), so
         * that the mean square of the scales is base^2 */
        const float l = log2f(base), f = floorf(l);
        const int p256 = (int)lrintf((powf(4.0f, l - f) - 1.0f) / 3.0f * 256.0f);
        for (int64_t b = 0; b < n_blocks; b++) {
            uint8_t *e = buf + (size_t)b * block_bytes + fr->d_off;
            const int v = 127 + (int)f + ((int)*e < p256 ? 1 : 0);
            *e = (uint8_t)(v < 1 ? 1 : v > 254 ? 254 : v);
        }
        return;
    }
    for (int64_t b = 0; b < n_blocks; b++) {
        uint8_t *blk = buf + (size_t)b * block_bytes;
        uint16_t r;
        memcpy(&r, blk + fr->d_off, 2);
        uint16_t d = (uint16_t)(d_tab[r & 0xFF] | (r & sign_mask));
        memcpy(blk + fr->d_off, &d, 2);
        if (fr->m_off >= 0) memcpy(blk + fr->m_off, &m_tab[r & 0xFF], 2);
    }
}

/* rms of the dequantized values of random blocks with base 1: the factor that
 * turns a target std into a base. 64k values measured once per write. */
static nib_status calibrate(nib_type t, float *rms_unit, nib_error *err) {
    const fill_row *fr = fill_find(t);
    int64_t blk = nib_type_block_elems(t), n = 65536;
    size_t bb = nib_type_block_bytes(t);
    uint8_t *q = malloc((size_t)(n / blk) * bb + 8);  /* + fill_random's slack */
    float *x = malloc((size_t)n * sizeof *x);
    nib_status s = NIB_OK;
    if (!q || !x) {
        s = nib_error_set(err, NIB_ERR_NOMEM, "synth: out of memory");
    } else {
        uint64_t state = 0x5EED5EEDull + (uint64_t)t;
        fill_blocks(fr, bb, q, n / blk, 1.0f, &state);
        s = nib_dequantize_row(t, q, x, n);
        double ss = 0;
        for (int64_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
        *rms_unit = (float)sqrt(ss / (double)n);
        if (s == NIB_OK && !(*rms_unit > 0.0f && isfinite(*rms_unit)))
            s = nib_error_set(err, NIB_ERR_FORMAT, "synth: %s calibration gave rms %g", nib_type_name(t),
                              (double)*rms_unit);
    }
    free(q);
    free(x);
    return s;
}

/* ---- the plan: every tensor, named as llama.cpp names it -------------------------------- */

typedef enum synth_kind { KIND_MATRIX, KIND_NORM, KIND_BIAS } synth_kind;
typedef enum synth_role {
    ROLE_TOKEN_EMBD, ROLE_OUTPUT, ROLE_ATTN_K, ROLE_ATTN_V, ROLE_ATTN_QKV, ROLE_ATTN_OUTPUT, ROLE_FFN_DOWN, ROLE_ROUTER,
    ROLE_OTHER,
} synth_role;
typedef enum synth_dim {
    DIM_NONE, DIM_EMBD, DIM_Q, DIM_KV, DIM_QKV, DIM_FF, DIM_FF_UP, DIM_VOCAB, DIM_HEAD, DIM_N_HEAD, DIM_FF_EXP, DIM_EXPERT
} synth_dim;
/* which shapes have the tensor */
typedef enum synth_only {
    ALL, BIAS, PRE_NORM, FFN_NORM, POST_ATTN, POST_FFW, QK_NORM, QK_NORM_FULL, SPLIT_QKV, FUSED_QKV, DENSE, DENSE_GATE,
    EXPERTS, GPT_OSS
} synth_only;

/* One row per tensor of a block, in the order they are written. */
static const struct {
    const char *suffix;
    synth_kind kind;
    synth_role role;
    synth_dim ne0, ne1;  /* ne1 DIM_NONE: a vector */
    synth_only only;     /* which shapes have it: has_rows() */
} layer_rows[] = {
    {"attn_norm.weight",           KIND_NORM,   ROLE_OTHER,    DIM_EMBD, DIM_NONE, PRE_NORM},
    {"attn_qkv.weight",            KIND_MATRIX, ROLE_ATTN_QKV, DIM_EMBD, DIM_QKV,  FUSED_QKV},
    {"attn_q.weight",              KIND_MATRIX, ROLE_OTHER,    DIM_EMBD, DIM_Q,    SPLIT_QKV},
    {"attn_q.bias",                KIND_BIAS,   ROLE_OTHER,    DIM_Q,    DIM_NONE, BIAS},
    {"attn_k.weight",              KIND_MATRIX, ROLE_ATTN_K,   DIM_EMBD, DIM_KV,   SPLIT_QKV},
    {"attn_k.bias",                KIND_BIAS,   ROLE_OTHER,    DIM_KV,   DIM_NONE, BIAS},
    {"attn_v.weight",              KIND_MATRIX, ROLE_ATTN_V,   DIM_EMBD, DIM_KV,   SPLIT_QKV},
    {"attn_v.bias",                KIND_BIAS,   ROLE_OTHER,    DIM_KV,   DIM_NONE, BIAS},
    {"attn_q_norm.weight",         KIND_NORM,   ROLE_OTHER,    DIM_HEAD, DIM_NONE, QK_NORM},
    {"attn_k_norm.weight",         KIND_NORM,   ROLE_OTHER,    DIM_HEAD, DIM_NONE, QK_NORM},
    {"attn_q_norm.weight",         KIND_NORM,   ROLE_OTHER,    DIM_Q,    DIM_NONE, QK_NORM_FULL},
    {"attn_k_norm.weight",         KIND_NORM,   ROLE_OTHER,    DIM_KV,   DIM_NONE, QK_NORM_FULL},
    {"attn_output.weight",         KIND_MATRIX, ROLE_ATTN_OUTPUT, DIM_Q, DIM_EMBD, ALL},
    {"attn_output.bias",           KIND_BIAS,   ROLE_OTHER,    DIM_EMBD, DIM_NONE, GPT_OSS},
    {"attn_sinks.weight",          KIND_NORM,   ROLE_OTHER,    DIM_N_HEAD, DIM_NONE, GPT_OSS},
    {"post_attention_norm.weight", KIND_NORM,   ROLE_OTHER,    DIM_EMBD, DIM_NONE, POST_ATTN},
    {"ffn_norm.weight",            KIND_NORM,   ROLE_OTHER,    DIM_EMBD, DIM_NONE, FFN_NORM},
    {"ffn_gate.weight",            KIND_MATRIX, ROLE_OTHER,    DIM_EMBD, DIM_FF,   DENSE_GATE},
    {"ffn_up.weight",              KIND_MATRIX, ROLE_OTHER,    DIM_EMBD, DIM_FF_UP, DENSE},
    {"ffn_down.weight",            KIND_MATRIX, ROLE_FFN_DOWN, DIM_FF,   DIM_EMBD, DENSE},
    {"ffn_gate_inp.weight",        KIND_MATRIX, ROLE_ROUTER,   DIM_EMBD, DIM_EXPERT, EXPERTS},
    {"ffn_gate_inp.bias",          KIND_BIAS,   ROLE_OTHER,    DIM_EXPERT, DIM_NONE, GPT_OSS},
    {"ffn_gate_exps.bias",         KIND_BIAS,   ROLE_OTHER,    DIM_FF_EXP, DIM_EXPERT, GPT_OSS},
    {"ffn_up_exps.bias",           KIND_BIAS,   ROLE_OTHER,    DIM_FF_EXP, DIM_EXPERT, GPT_OSS},
    {"ffn_down_exps.bias",         KIND_BIAS,   ROLE_OTHER,    DIM_EMBD, DIM_EXPERT, GPT_OSS},
    {"ffn_gate_exps.weight",       KIND_MATRIX, ROLE_OTHER,    DIM_EMBD, DIM_FF_EXP, EXPERTS},
    {"ffn_up_exps.weight",         KIND_MATRIX, ROLE_OTHER,    DIM_EMBD, DIM_FF_EXP, EXPERTS},
    {"ffn_down_exps.weight",       KIND_MATRIX, ROLE_FFN_DOWN, DIM_FF_EXP, DIM_EMBD, EXPERTS},
    {"post_ffw_norm.weight",       KIND_NORM,   ROLE_OTHER,    DIM_EMBD, DIM_NONE, POST_FFW},
};
#define N_LAYER_ROWS ((int)(sizeof layer_rows / sizeof layer_rows[0]))

typedef struct synth_tensor {
    char name[64];
    synth_kind kind;
    nib_type type;
    uint32_t n_dims;
    int64_t ne[3];           /* ne[1]: all rows (of every expert, for a 3-D tensor: ne[1] * ne[2] as written) */
    int64_t n_mats;          /* 1, or the experts of a 3-D tensor */
    uint64_t n_bytes;
    /* filled before writing */
    float base;              /* block formats: scale magnitude; F16/F32: value std */
    int64_t blocks_per_chunk;
    uint64_t n_chunks;
    uint64_t first_chunk;    /* global index of its first chunk */
    uint64_t file_off;       /* absolute, from the reopened skeleton */
} synth_tensor;

typedef struct synth_plan {
    synth_tensor *t;  /* (n) */
    int64_t n;
    uint64_t data_bytes, n_params;
} synth_plan;

static int64_t dim_of(const nib_synth_shape *sh, synth_dim d) {
    switch (d) {  /* shape arithmetic, the one place it lives */
    case DIM_EMBD: return sh->n_embd;
    case DIM_Q: return (int64_t)sh->n_head * sh->head_dim;
    case DIM_KV: return (int64_t)sh->n_head_kv * sh->head_dim;
    case DIM_QKV: return (int64_t)(sh->n_head + 2 * sh->n_head_kv) * sh->head_dim;
    case DIM_FF: return sh->n_ff;
    case DIM_FF_UP: return strcmp(sh->arch, "phi3") ? sh->n_ff : 2 * (int64_t)sh->n_ff; /* phi3: gate and up fused */
    case DIM_VOCAB: return sh->n_vocab;
    case DIM_HEAD: return sh->head_dim;
    case DIM_N_HEAD: return sh->n_head;
    case DIM_FF_EXP: return sh->n_ff_exp;
    case DIM_EXPERT: return sh->n_expert;
    default: return 1;
    }
}

/* llama.cpp's use_more_bits (llama-quant.cpp): the first and last eighth of
 * the layers and every third one between get more bits. Its counters run in
 * layer order (the loader sorts weights by layer), so i is the layer index. */
static bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* llama_tensor_get_type's per-tensor choices for the mixed file types we
 * offer (llama-family layouts: no experts, not Falcon, not 70B): a matrix of
 * that role in that file type becomes `yes` where the condition holds on its
 * layer, else `no` (NIB_TYPE_COUNT: the file type's base). attn_v's counter
 * there is the layer index here (one attn_v a layer). */
typedef enum mix_when { WHEN_ALWAYS, WHEN_MORE_BITS, WHEN_FIRST_2, WHEN_FIRST_16TH, WHEN_GQA_4 } mix_when;
static const struct {
    uint32_t file_type;
    synth_role role;
    mix_when when;
    nib_type yes, no;
} mix_rules[] = {
    {15, ROLE_ATTN_V, WHEN_MORE_BITS, NIB_TYPE_Q6_K, NIB_TYPE_COUNT},     /* Q4_K_M */
    {15, ROLE_FFN_DOWN, WHEN_MORE_BITS, NIB_TYPE_Q6_K, NIB_TYPE_COUNT},
    {15, ROLE_ATTN_QKV, WHEN_ALWAYS, NIB_TYPE_Q5_K, NIB_TYPE_COUNT},
    {17, ROLE_ATTN_V, WHEN_MORE_BITS, NIB_TYPE_Q6_K, NIB_TYPE_COUNT},     /* Q5_K_M */
    {17, ROLE_ATTN_QKV, WHEN_ALWAYS, NIB_TYPE_Q6_K, NIB_TYPE_COUNT},
    {12, ROLE_ATTN_QKV, WHEN_ALWAYS, NIB_TYPE_Q4_K, NIB_TYPE_COUNT},      /* Q3_K_M */
    {17, ROLE_FFN_DOWN, WHEN_MORE_BITS, NIB_TYPE_Q6_K, NIB_TYPE_COUNT},
    {12, ROLE_ATTN_V, WHEN_FIRST_2, NIB_TYPE_Q5_K, NIB_TYPE_Q4_K},        /* Q3_K_M */
    {12, ROLE_FFN_DOWN, WHEN_FIRST_16TH, NIB_TYPE_Q5_K, NIB_TYPE_Q4_K},
    {12, ROLE_ATTN_OUTPUT, WHEN_ALWAYS, NIB_TYPE_Q4_K, NIB_TYPE_COUNT},
    {10, ROLE_ATTN_V, WHEN_GQA_4, NIB_TYPE_Q4_K, NIB_TYPE_Q3_K},          /* Q2_K */
    {10, ROLE_FFN_DOWN, WHEN_ALWAYS, NIB_TYPE_Q3_K, NIB_TYPE_COUNT},
    {10, ROLE_ATTN_OUTPUT, WHEN_ALWAYS, NIB_TYPE_Q3_K, NIB_TYPE_COUNT},
};

static bool mix_holds(mix_when w, const nib_synth_shape *sh, int il) {
    switch (w) {
    case WHEN_MORE_BITS: return use_more_bits(il, sh->n_layer);
    case WHEN_FIRST_2: return il < 2;
    case WHEN_FIRST_16TH: return il < sh->n_layer / 16;
    case WHEN_GQA_4: return sh->n_head_kv > 0 && sh->n_head / sh->n_head_kv >= 4;
    default: return true;
    }
}

/* The format of a matrix, as llama_tensor_get_type picks it for the file types
 * we offer, then its fallback when rows are not whole blocks (qwen2.5-0.5b's
 * 896, smollm2's 576). NIB_TYPE_COUNT: llama.cpp would refuse too. */
static nib_type pick_type(const nib_synth_ftype *ft, const nib_synth_shape *sh, synth_role role, int il, int64_t n_in) {
    nib_type t = ft->base;
    if (role == ROLE_ROUTER) return NIB_TYPE_F32; /* llama.cpp never quantizes ffn_gate_inp */
    if (!ft->mixed) return t;
    bool head = role == ROLE_OUTPUT || (role == ROLE_TOKEN_EMBD && sh->tied);  /* tied: the embedding is the head */
    if (head) {
        if (n_in % nib_type_block_elems(t) != 0) t = NIB_TYPE_Q8_0;
        else if (t != NIB_TYPE_Q8_0) t = NIB_TYPE_Q6_K;
    } else {
        for (size_t i = 0; i < sizeof mix_rules / sizeof mix_rules[0]; i++)
            if (mix_rules[i].file_type == ft->file_type && mix_rules[i].role == role) {
                const nib_type pick = mix_holds(mix_rules[i].when, sh, il) ? mix_rules[i].yes : mix_rules[i].no;
                if (pick != NIB_TYPE_COUNT) t = pick;
            }
        /* llama.cpp: "for the 8-expert model, bumping this to Q8_0 trades just ~128MB" */
        if (sh->n_expert == 8 && (role == ROLE_ATTN_V || role == ROLE_ATTN_K)) t = NIB_TYPE_Q8_0;
    }
    if (n_in % nib_type_block_elems(t) == 0) return t;
    static const struct { nib_type from, to; } fallback[] = {
        {NIB_TYPE_Q4_K, NIB_TYPE_Q5_0}, {NIB_TYPE_Q5_K, NIB_TYPE_Q5_1}, {NIB_TYPE_Q6_K, NIB_TYPE_Q8_0},
        {NIB_TYPE_Q3_K, NIB_TYPE_IQ4_NL}, {NIB_TYPE_Q2_K, NIB_TYPE_IQ4_NL}, {NIB_TYPE_IQ4_XS, NIB_TYPE_IQ4_NL},
        {NIB_TYPE_IQ3_XXS, NIB_TYPE_IQ4_NL}, {NIB_TYPE_IQ3_S, NIB_TYPE_IQ4_NL}, {NIB_TYPE_IQ2_XXS, NIB_TYPE_IQ4_NL},
        {NIB_TYPE_IQ2_XS, NIB_TYPE_IQ4_NL}, {NIB_TYPE_IQ2_S, NIB_TYPE_IQ4_NL}, {NIB_TYPE_IQ1_S, NIB_TYPE_IQ4_NL},
        {NIB_TYPE_TQ2_0, NIB_TYPE_IQ4_NL}, {NIB_TYPE_TQ1_0, NIB_TYPE_IQ4_NL},
    };
    for (size_t i = 0; i < sizeof fallback / sizeof fallback[0]; i++)
        if (fallback[i].from == t) {
            t = fallback[i].to;
            return n_in % nib_type_block_elems(t) == 0 ? t : NIB_TYPE_F16;
        }
    return NIB_TYPE_COUNT;
}

static nib_status plan_add(synth_plan *p, const nib_synth_shape *sh, const nib_synth_ftype *ft, const char *name,
                           synth_kind kind, synth_role role, int il, int64_t ne0, int64_t ne1, int64_t n_mats,
                           nib_error *err) {
    synth_tensor *t = &p->t[p->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->kind = kind;
    /* matrices 2-D (3-D: the experts'), norms 1-D, biases 1-D or 2-D (gpt-oss's experts': a row each) */
    t->n_dims = kind == KIND_MATRIX ? (n_mats > 1 ? 3 : 2) : kind == KIND_BIAS && ne1 > 1 ? 2 : 1;
    t->n_mats = n_mats;
    t->ne[0] = ne0;
    t->ne[1] = kind == KIND_MATRIX ? ne1 * n_mats : kind == KIND_BIAS ? ne1 : 1;
    t->ne[2] = 1;
    t->type = kind == KIND_MATRIX ? pick_type(ft, sh, role, il, ne0) : NIB_TYPE_F32;
    if (t->type == NIB_TYPE_COUNT)
        return nib_error_set(err, NIB_ERR_UNSUPPORTED, "synth: %s: rows of %lld are not whole %s blocks", name,
                             (long long)ne0, nib_type_name(ft->base));
    size_t row;
    uint64_t bytes;
    if (!nib_row_bytes(t->type, ne0, &row) || !nib_mul_u64(row, (uint64_t)t->ne[1], &bytes))
        return nib_error_set(err, NIB_ERR_ARG, "synth: %s: bad size", name);
    t->n_bytes = bytes;
    p->data_bytes += bytes;
    p->n_params += (uint64_t)ne0 * (uint64_t)t->ne[1];
    return NIB_OK;
}

/* Whether a shape has the layer rows marked `only`: the architectures' layouts. */
static bool has_rows(const nib_synth_shape *sh, synth_only only) {
    const char *a = sh->arch;
    const bool olmo2 = !strcmp(a, "olmo2"), gpt_oss = !strcmp(a, "gpt-oss"), fused = !strcmp(a, "phi3");
    switch (only) {
    case BIAS: return sh->qkv_bias;
    case PRE_NORM: return !olmo2;                                  /* OLMo 2 norms after only */
    case FFN_NORM: return !olmo2 && !gpt_oss;                      /* gpt-oss's is post_attention_norm */
    case POST_ATTN: return sh->window > 0 || olmo2;                /* the gemmas, OLMo 2, gpt-oss */
    case POST_FFW: return (sh->window > 0 && !gpt_oss) || olmo2;
    case QK_NORM: return !strcmp(a, "gemma3") || !strcmp(a, "qwen3") || !strcmp(a, "qwen3moe");
    case QK_NORM_FULL: return !strcmp(a, "olmoe") || olmo2;
    case SPLIT_QKV: return !fused;
    case FUSED_QKV: return fused;
    case DENSE: return sh->n_expert == 0;
    case DENSE_GATE: return sh->n_expert == 0 && !fused;
    case EXPERTS: return sh->n_expert > 0;
    case GPT_OSS: return gpt_oss;
    default: return true;
    }
}

static nib_status plan_build(synth_plan *p, const nib_synth_shape *sh, const nib_synth_ftype *ft, nib_error *err) {
    memset(p, 0, sizeof *p);
    if (!nib_arch_find(sh->arch))
        return nib_error_set(err, NIB_ERR_UNSUPPORTED, "synth: shape %s: architecture '%s' is not supported", sh->name,
                             sh->arch);
    p->t = calloc((size_t)sh->n_layer * N_LAYER_ROWS + 3, sizeof *p->t);
    if (!p->t) return nib_error_set(err, NIB_ERR_NOMEM, "synth: out of memory");
    nib_status s;
    int64_t e = sh->n_embd, v = sh->n_vocab;
    if ((s = plan_add(p, sh, ft, "token_embd.weight", KIND_MATRIX, ROLE_TOKEN_EMBD, -1, e, v, 1, err))) return s;
    for (int il = 0; il < sh->n_layer; il++)
        for (int r = 0; r < N_LAYER_ROWS; r++) {
            const synth_only only = layer_rows[r].only;
            if (!has_rows(sh, only)) continue;
            char name[64];
            snprintf(name, sizeof name, "blk.%d.%s", il, layer_rows[r].suffix);
            /* the experts' matrices: n_expert of them in one 3-D tensor (the router is 2-D) */
            const int64_t n_mats = only == EXPERTS && layer_rows[r].role != ROLE_ROUTER ? sh->n_expert : 1;
            if ((s = plan_add(p, sh, ft, name, layer_rows[r].kind, layer_rows[r].role, il, dim_of(sh, layer_rows[r].ne0),
                              dim_of(sh, layer_rows[r].ne1), n_mats, err)))
                return s;
        }
    if ((s = plan_add(p, sh, ft, "output_norm.weight", KIND_NORM, ROLE_OTHER, -1, e, 1, 1, err))) return s;
    if (!sh->tied && (s = plan_add(p, sh, ft, "output.weight", KIND_MATRIX, ROLE_OUTPUT, -1, e, v, 1, err))) return s;
    return NIB_OK;
}

nib_status nib_synth_sizes(const nib_synth_shape *sh, const nib_synth_ftype *ft, uint64_t *data_bytes,
                           uint64_t *n_params, nib_error *err) {
    synth_plan p;
    nib_status s = plan_build(&p, sh, ft, err);
    if (s == NIB_OK) {
        if (data_bytes) *data_bytes = p.data_bytes;
        if (n_params) *n_params = p.n_params;
    }
    free(p.t);
    return s;
}

/* ---- metadata -------------------------------------------------------------------------- */

/* The placeholder vocabulary: a SentencePiece ("llama") model as llama.cpp
 * and nib's loader expect one: <unk> <s> </s>, the 256 byte tokens <0xNN>
 * (type 6, so any text encodes by byte fallback), then "▁t0", "▁t1", ...
 * (normal, decreasing scores). */
#define N_SPECIAL 3
#define N_BYTE 256
enum { TOKEN_NORMAL = 1, TOKEN_UNKNOWN = 2, TOKEN_CONTROL = 3, TOKEN_BYTE = 6 };  /* gguf-py TokenType */

static nib_status add_vocab(nib_gguf_writer *w, const nib_synth_shape *sh, nib_error *err) {
    int32_t n = sh->n_vocab;
    if (n < N_SPECIAL + N_BYTE)
        return nib_error_set(err, NIB_ERR_ARG, "synth: shape %s: vocabulary of %d is below the %d fixed tokens",
                             sh->name, n, N_SPECIAL + N_BYTE);
    char *text = malloc((size_t)n * 16);
    const char **strs = malloc((size_t)n * sizeof *strs);
    float *scores = malloc((size_t)n * sizeof *scores);
    int32_t *types = malloc((size_t)n * sizeof *types);
    nib_status s = NIB_OK;
    if (!text || !strs || !scores || !types) {
        s = nib_error_set(err, NIB_ERR_NOMEM, "synth: out of memory for the vocabulary");
        goto done;
    }
    static const char *const special[N_SPECIAL] = {"<unk>", "<s>", "</s>"};
    static const int32_t special_type[N_SPECIAL] = {TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_CONTROL};
    for (int32_t i = 0; i < n; i++) {
        char *t = text + (size_t)i * 16;
        if (i < N_SPECIAL) snprintf(t, 16, "%s", special[i]), types[i] = special_type[i], scores[i] = 0.0f;
        else if (i < N_SPECIAL + N_BYTE) snprintf(t, 16, "<0x%02X>", i - N_SPECIAL), types[i] = TOKEN_BYTE, scores[i] = 0.0f;
        else snprintf(t, 16, "\xe2\x96\x81t%d", i - N_SPECIAL - N_BYTE), types[i] = TOKEN_NORMAL, scores[i] = -(float)i;
        strs[i] = t;
    }
    /* Phi-3's chat tokens, last (llama.cpp's vocabulary loader looks <|end|> up in a phi3 file) */
    static const char *const phi3_tokens[] = {"<|endoftext|>", "<|assistant|>", "<|end|>", "<|system|>", "<|user|>"};
    const int n_phi3 = (int)(sizeof phi3_tokens / sizeof phi3_tokens[0]);
    if (!strcmp(sh->arch, "phi3") && n >= N_SPECIAL + N_BYTE + n_phi3)
        for (int k = 0; k < n_phi3; k++) {
            char *t = text + (size_t)(n - n_phi3 + k) * 16;
            snprintf(t, 16, "%s", phi3_tokens[k]);
            types[n - n_phi3 + k] = TOKEN_CONTROL, scores[n - n_phi3 + k] = 0.0f;
        }
    if ((s = nib_gguf_writer_add_str(w, "tokenizer.ggml.model", "llama", err)) ||
        (s = nib_gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", strs, (uint64_t)n, err)) ||
        (s = nib_gguf_writer_add_array(w, "tokenizer.ggml.scores", NIB_GGUF_FLOAT32, scores, (uint64_t)n, err)) ||
        (s = nib_gguf_writer_add_array(w, "tokenizer.ggml.token_type", NIB_GGUF_INT32, types, (uint64_t)n, err)) ||
        (s = nib_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", 1, err)) ||
        (s = nib_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", 2, err)) ||
        (s = nib_gguf_writer_add_u32(w, "tokenizer.ggml.unknown_token_id", 0, err)) ||
        (s = nib_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", true, err)) ||
        (s = nib_gguf_writer_add_bool(w, "tokenizer.ggml.add_eos_token", false, err)))
        goto done;
done:
    free(text);
    free(strs);
    free(scores);
    free(types);
    return s;
}

/* The keys llama.cpp's loader reads for llama, qwen2 and gemma3 (LLM_KV_* names). */
static nib_status add_metadata(nib_gguf_writer *w, const nib_synth_shape *sh, const nib_synth_ftype *ft,
                               uint64_t seed, nib_error *err) {
    char name[128], key[128];
    snprintf(name, sizeof name, "synth %s %s seed %llu", sh->name, ft->name, (unsigned long long)seed);
    nib_status s;
    if ((s = nib_gguf_writer_add_str(w, "general.architecture", sh->arch, err)) ||
        (s = nib_gguf_writer_add_str(w, "general.name", name, err)) ||
        (s = nib_gguf_writer_set_alignment(w, NIB_GGUF_DEFAULT_ALIGNMENT, err)) ||
        (s = nib_gguf_writer_add_u32(w, "general.file_type", ft->file_type, err)) ||
        (s = nib_gguf_writer_add_u32(w, "general.quantization_version", 2, err)) ||
        (s = nib_gguf_writer_add_str(w, "nib.synth.shape", sh->name, err)) ||
        (s = nib_gguf_writer_add_u64(w, "nib.synth.seed", seed, err)))
        return s;
    static const struct {
        const char *suffix;
        size_t off;  /* offsetof(nib_synth_shape, <int32 field>) */
    } ints[] = {
        {"context_length", offsetof(nib_synth_shape, n_ctx)},
        {"embedding_length", offsetof(nib_synth_shape, n_embd)},
        {"block_count", offsetof(nib_synth_shape, n_layer)},
        {"feed_forward_length", offsetof(nib_synth_shape, n_ff)},
        {"attention.head_count", offsetof(nib_synth_shape, n_head)},
        {"attention.head_count_kv", offsetof(nib_synth_shape, n_head_kv)},
        {"attention.key_length", offsetof(nib_synth_shape, head_dim)},
        {"attention.value_length", offsetof(nib_synth_shape, head_dim)},
        {"rope.dimension_count", offsetof(nib_synth_shape, head_dim)},
        {"vocab_size", offsetof(nib_synth_shape, n_vocab)},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        int32_t v;
        memcpy(&v, (const char *)sh + ints[i].off, sizeof v);
        snprintf(key, sizeof key, "%s.%s", sh->arch, ints[i].suffix);
        if ((s = nib_gguf_writer_add_u32(w, key, (uint32_t)v, err))) return s;
    }
    snprintf(key, sizeof key, "%s.rope.freq_base", sh->arch);
    if ((s = nib_gguf_writer_add_f32(w, key, sh->rope_base, err))) return s;
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", sh->arch);
    if ((s = nib_gguf_writer_add_f32(w, key, sh->norm_eps, err))) return s;
    if (sh->window) { /* gemma3: every 6th layer global; gemma2: every other (llama.cpp and nib alike) */
        snprintf(key, sizeof key, "%s.attention.sliding_window", sh->arch);
        if ((s = nib_gguf_writer_add_u32(w, key, (uint32_t)sh->window, err))) return s;
    }
    if (sh->n_expert) { /* llama.cpp reads expert_feed_forward_length for qwen3moe; for llama, feed_forward_length */
        static const char *const keys[3] = {"expert_count", "expert_used_count", "expert_feed_forward_length"};
        const int32_t vals[3] = {sh->n_expert, sh->n_expert_used, sh->n_ff_exp};
        for (int i = 0; i < 3; i++) {
            snprintf(key, sizeof key, "%s.%s", sh->arch, keys[i]);
            if ((s = nib_gguf_writer_add_u32(w, key, (uint32_t)vals[i], err))) return s;
        }
    }
    if (!strncmp(sh->arch, "granite", 7)) { /* Granite 3.1 2B's config.json multipliers */
        static const char *const keys[4] = {"embedding_scale", "residual_scale", "attention.scale", "logit_scale"};
        static const float vals[4] = {12.0f, 0.22f, 0.015625f, 8.0f};
        for (int i = 0; i < 4; i++) {
            snprintf(key, sizeof key, "%s.%s", sh->arch, keys[i]);
            if ((s = nib_gguf_writer_add_f32(w, key, vals[i], err))) return s;
        }
    }
    if (!strcmp(sh->arch, "gpt-oss")) { /* YaRN over 4096 positions, as the released files */
        snprintf(key, sizeof key, "%s.rope.scaling.type", sh->arch);
        if ((s = nib_gguf_writer_add_str(w, key, "yarn", err))) return s;
        snprintf(key, sizeof key, "%s.rope.scaling.factor", sh->arch);
        if ((s = nib_gguf_writer_add_f32(w, key, 32.0f, err))) return s;
        snprintf(key, sizeof key, "%s.rope.scaling.original_context_length", sh->arch);
        if ((s = nib_gguf_writer_add_u32(w, key, 4096, err))) return s;
    }
    if (!strcmp(sh->arch, "gemma2")) { /* config.json's attn_logit_softcapping and final_logit_softcapping */
        snprintf(key, sizeof key, "%s.attn_logit_softcapping", sh->arch);
        if ((s = nib_gguf_writer_add_f32(w, key, 50.0f, err))) return s;
        snprintf(key, sizeof key, "%s.final_logit_softcapping", sh->arch);
        if ((s = nib_gguf_writer_add_f32(w, key, 30.0f, err))) return s;
    }
    return add_vocab(w, sh, err);
}

/* ---- filling the tensors ------------------------------------------------------------------ */

#define CHUNK_BYTES (1u << 20)  /* per work item: big enough to amortise pwrite, small enough for L2 */

typedef struct fill_job {
    const synth_plan *p;
    uint64_t seed;
    int fd;
    uint64_t n_chunks;
    atomic_uint_fast64_t next;
    atomic_int error;  /* first errno (or ENOMEM) */
} fill_job;

static size_t chunk_bytes(const synth_tensor *t, uint64_t c, int64_t *n_blocks) {
    int64_t total = (int64_t)(t->n_bytes / nib_type_block_bytes(t->type));
    int64_t first = (int64_t)c * t->blocks_per_chunk;
    *n_blocks = total - first < t->blocks_per_chunk ? total - first : t->blocks_per_chunk;
    return (size_t)*n_blocks * nib_type_block_bytes(t->type);
}

/* One chunk of tensor t into buf: the bytes depend on (seed, tensor, chunk) only. */
static void gen_chunk(const synth_tensor *t, uint64_t ti, uint64_t c, uint64_t seed, uint8_t *buf, int64_t n_blocks) {
    uint64_t state = stream_seed(seed, ti, c);
    const fill_row *fr = fill_find(t->type);
    if (fr) {
        fill_blocks(fr, nib_type_block_bytes(t->type), buf, n_blocks, t->base, &state);
        return;
    }
    /* F16 matrices and F32 vectors: uniform values, std t->base (around 1 for norms) */
    float amp = SQRT3 * t->base, centre = t->kind == KIND_NORM ? 1.0f : 0.0f;
    for (int64_t i = 0; i < n_blocks; i += 4) {
        uint64_t r = splitmix64(&state);
        for (int64_t k = 0; k < 4 && i + k < n_blocks; k++) {
            float x = centre + amp * unit_uniform((uint32_t)(r >> (16 * k)) & 0xFFFF);
            if (t->type == NIB_TYPE_F16) {
                uint16_t h = nib_f32_to_fp16(x);
                memcpy(buf + 2 * (i + k), &h, 2);
            } else {
                memcpy(buf + 4 * (i + k), &x, 4);
            }
        }
    }
}

static int pwrite_all(int fd, const uint8_t *buf, size_t n, uint64_t off) {
    while (n > 0) {
        ssize_t k = pwrite(fd, buf, n, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return k < 0 ? errno : EIO;
        buf += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

static void fill_worker(void *ctx, int ith, int nth) {
    (void)ith, (void)nth;
    fill_job *j = ctx;
    uint8_t *buf = malloc(CHUNK_BYTES + 64);  /* + slack: fill_random writes whole 8-byte words */
    if (!buf) {
        int zero = 0;
        atomic_compare_exchange_strong(&j->error, &zero, ENOMEM);
        return;
    }
    /* chunks are claimed in order; the tensor index only moves forward */
    int64_t ti = 0;
    for (;;) {
        uint64_t c = atomic_fetch_add(&j->next, 1);
        if (c >= j->n_chunks || atomic_load(&j->error)) break;
        while (c >= j->p->t[ti].first_chunk + j->p->t[ti].n_chunks) ti++;
        const synth_tensor *t = &j->p->t[ti];
        uint64_t lc = c - t->first_chunk;
        int64_t n_blocks;
        size_t n = chunk_bytes(t, lc, &n_blocks);
        gen_chunk(t, (uint64_t)ti, lc, j->seed, buf, n_blocks);
        int e = pwrite_all(j->fd, buf, n, t->file_off + lc * (uint64_t)t->blocks_per_chunk * nib_type_block_bytes(t->type));
        if (e) {
            int zero = 0;
            atomic_compare_exchange_strong(&j->error, &zero, e);
            break;
        }
    }
    free(buf);
}

/* ---- the self-check --------------------------------------------------------------------- */

#define CHECK_ELEMS 16384
#define CHECK_ROWS_MAX 64

/* Dequantize a few rows of every tensor: all finite; matrices with std within
 * [0.75, 1.33] of 1/sqrt(n_in); norms near 1; biases small and non-zero. */
static nib_status check_file(int fd, const synth_plan *p, uint64_t seed, nib_synth_stats *st, nib_error *err) {
    int64_t max_ne0 = 1;
    size_t max_row = 1;
    for (int64_t i = 0; i < p->n; i++) {
        max_ne0 = p->t[i].ne[0] > max_ne0 ? p->t[i].ne[0] : max_ne0;
        size_t rb = (size_t)(p->t[i].n_bytes / (uint64_t)p->t[i].ne[1]);
        max_row = rb > max_row ? rb : max_row;
    }
    float *x = malloc((size_t)max_ne0 * sizeof *x);
    uint8_t *row = malloc(max_row);
    if (!x || !row) {
        free(x);
        free(row);
        return nib_error_set(err, NIB_ERR_NOMEM, "synth: out of memory");
    }
    nib_status s = NIB_OK;
    st->std_ratio_min = INFINITY;
    st->std_ratio_max = 0.0;
    uint64_t state = seed ^ 0xC0FFEEull;
    for (int64_t i = 0; i < p->n && s == NIB_OK; i++) {
        const synth_tensor *pt = &p->t[i];
        int64_t rows = pt->ne[1], n = pt->ne[0];
        /* the first and last rows and random ones, at least CHECK_ELEMS values
         * (short rows: the std of 4 rows of 256 is too noisy to judge) */
        int64_t want = (CHECK_ELEMS + n - 1) / n;
        int n_pick = (int)(rows < want ? rows : want < 4 ? 4 : want > CHECK_ROWS_MAX ? CHECK_ROWS_MAX : want);
        if (n_pick > rows) n_pick = (int)rows;
        int64_t pick[CHECK_ROWS_MAX];
        for (int k = 0; k < n_pick; k++)
            pick[k] = k == 0 ? 0 : k == 1 ? rows - 1 : (int64_t)(splitmix64(&state) % (uint64_t)rows);
        size_t row_bytes = (size_t)(pt->n_bytes / (uint64_t)rows);
        double sum = 0, ss = 0;
        float lo = INFINITY, hi = -INFINITY;
        for (int k = 0; k < n_pick && s == NIB_OK; k++) {
            /* pread, not the mapping: faulting rows in would map whole large folios
             * of page cache into our RSS (hundreds of MB for a few rows) */
            uint64_t off = pt->file_off + (uint64_t)pick[k] * row_bytes;
            ssize_t got = pread(fd, row, row_bytes, (off_t)off);
            if (got != (ssize_t)row_bytes) {
                s = nib_error_set(err, NIB_ERR_IO, "synth self-check: reading %s row %lld: %s", pt->name,
                                  (long long)pick[k], got < 0 ? strerror(errno) : "short read");
                break;
            }
            s = nib_dequantize_row(pt->type, row, x, n);
            for (int64_t e = 0; e < n && s == NIB_OK; e++) {
                if (!isfinite(x[e]))
                    s = nib_error_set(err, NIB_ERR_FORMAT, "synth self-check: %s row %lld element %lld is %g",
                                      pt->name, (long long)pick[k], (long long)e, (double)x[e]);
                sum += x[e];
                ss += (double)x[e] * x[e];
                lo = x[e] < lo ? x[e] : lo;
                hi = x[e] > hi ? x[e] : hi;
            }
            st->rows_checked++;
        }
        if (s != NIB_OK) break;
        double cnt = (double)n * n_pick, mean = sum / cnt, sd = sqrt(fmax(ss / cnt - mean * mean, 0.0));
        if (pt->kind == KIND_MATRIX) {
            double ratio = sd * sqrt((double)n);
            st->std_ratio_min = fmin(st->std_ratio_min, ratio);
            st->std_ratio_max = fmax(st->std_ratio_max, ratio);
            if (!(ratio > 0.75 && ratio < 1.33))
                s = nib_error_set(err, NIB_ERR_FORMAT,
                                  "synth self-check: %s (%s) has std %.3g, %.2fx the 1/sqrt(%lld) it should have",
                                  pt->name, nib_type_name(pt->type), sd, ratio, (long long)n);
        } else if (pt->kind == KIND_NORM ? !(lo > 0.5f && hi < 1.5f) : !(fabsf(lo) < 0.1f && fabsf(hi) < 0.1f)) {
            s = nib_error_set(err, NIB_ERR_FORMAT, "synth self-check: %s spans [%g, %g]", pt->name, (double)lo,
                              (double)hi);
        }
    }
    free(x);
    free(row);
    return s;
}

/* ---- writing --------------------------------------------------------------------------- */

static void *zero_map(uint64_t bytes) {
    void *p = mmap(NULL, (size_t)(bytes ? bytes : 1), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

nib_status nib_synth_write(const char *path, const nib_synth_shape *sh, const nib_synth_ftype *ft, uint64_t seed,
                           nib_pool *pool, nib_synth_stats *stats, nib_error *err) {
    nib_synth_stats st_local;
    nib_synth_stats *st = stats ? stats : &st_local;
    memset(st, 0, sizeof *st);
    synth_plan p;
    nib_gguf_writer *w = NULL;
    nib_gguf *g = NULL;
    void *zeros = NULL;
    uint64_t max_bytes = 0;
    int fd = -1;
    nib_status s = plan_build(&p, sh, ft, err);
    if (s) goto done;

    /* scales: base = target std / rms at base 1, per format */
    float rms_unit[NIB_TYPE_COUNT] = {0};
    uint64_t n_chunks = 0;
    for (int64_t i = 0; i < p.n; i++) {
        synth_tensor *t = &p.t[i];
        float target = t->kind == KIND_MATRIX ? 1.0f / sqrtf((float)t->ne[0]) : t->kind == KIND_NORM ? 0.1f : 0.02f;
        if (fill_find(t->type)) {
            if (rms_unit[t->type] == 0.0f && (s = calibrate(t->type, &rms_unit[t->type], err))) goto done;
            t->base = target / rms_unit[t->type];
        } else {
            t->base = target;
        }
        t->blocks_per_chunk = (int64_t)(CHUNK_BYTES / nib_type_block_bytes(t->type));
        uint64_t n_blocks = t->n_bytes / nib_type_block_bytes(t->type);
        t->n_chunks = (n_blocks + (uint64_t)t->blocks_per_chunk - 1) / (uint64_t)t->blocks_per_chunk;
        t->first_chunk = n_chunks;
        n_chunks += t->n_chunks;
        if (t->n_bytes > max_bytes) max_bytes = t->n_bytes;
    }

    /* 2. the skeleton: header and zeros */
    w = nib_gguf_writer_new();
    zeros = zero_map(max_bytes);
    if (!w || !zeros) {
        s = nib_error_set(err, NIB_ERR_NOMEM, "synth: out of memory");
        goto done;
    }
    if ((s = add_metadata(w, sh, ft, seed, err))) goto done;
    for (int64_t i = 0; i < p.n; i++) {
        const synth_tensor *t = &p.t[i];
        const int64_t ne[3] = {t->ne[0], t->ne[1] / t->n_mats, t->n_mats};
        if ((s = nib_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, ne, zeros, err))) goto done;
    }
    if ((s = nib_gguf_writer_write(w, path, err))) goto done;
    nib_gguf_writer_free(w);
    w = NULL;
    munmap(zeros, (size_t)(max_bytes ? max_bytes : 1));
    zeros = NULL;

    /* where each tensor landed: read back, so the writer's layout is the only one */
    if (!(g = nib_gguf_open(path, err))) {
        s = err ? err->status : NIB_ERR_IO;
        goto done;
    }
    if (nib_gguf_n_tensors(g) != p.n) {
        s = nib_error_set(err, NIB_ERR_FORMAT, "synth: %s: %lld tensors read back, %lld written", path,
                          (long long)nib_gguf_n_tensors(g), (long long)p.n);
        goto done;
    }
    for (int64_t i = 0; i < p.n; i++) {
        const nib_gguf_tensor *t = nib_gguf_tensor_at(g, i);
        if (t->n_bytes != p.t[i].n_bytes || t->name.len != strlen(p.t[i].name) ||
            memcmp(t->name.ptr, p.t[i].name, t->name.len) != 0) {
            s = nib_error_set(err, NIB_ERR_FORMAT, "synth: %s: tensor %lld read back differs from '%s'", path,
                              (long long)i, p.t[i].name);
            goto done;
        }
        p.t[i].file_off = nib_gguf_data_offset(g) + t->offset;
    }
    st->file_bytes = nib_gguf_file_size(g);
    nib_gguf_close(g);
    g = NULL;

    /* 3. fill */
    fd = open(path, O_WRONLY);
    if (fd < 0) {
        s = nib_error_set(err, NIB_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
        goto done;
    }
    fill_job job = {.p = &p, .seed = seed, .fd = fd, .n_chunks = n_chunks};
    atomic_init(&job.next, 0);
    atomic_init(&job.error, 0);
    nib_pool_run(pool, fill_worker, &job);
    int e = atomic_load(&job.error);
    if (close(fd) != 0 && !e) e = errno;
    fd = -1;
    if (e) {
        s = nib_error_set(err, e == ENOMEM ? NIB_ERR_NOMEM : NIB_ERR_IO, "%s: write failed: %s", path, strerror(e));
        goto done;
    }

    /* 4. check: sampled rows look right, and the strict binder accepts the file */
    fd = open(path, O_RDONLY);
    if (fd < 0) {
        s = nib_error_set(err, NIB_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        goto done;
    }
    s = check_file(fd, &p, seed, st, err);
    close(fd);
    fd = -1;
    if (s) goto done;
    if (!(g = nib_gguf_open(path, err))) {
        s = err ? err->status : NIB_ERR_IO;
        goto done;
    }
    nib_model *m = nib_model_load_gguf(g, path, err);  /* takes g */
    g = NULL;
    if (!m) {
        s = err ? err->status : NIB_ERR_FORMAT;
        goto done;
    }
    nib_model_free(m);
    st->n_tensors = p.n;
    st->data_bytes = p.data_bytes;
done:
    if (fd >= 0) close(fd);
    if (zeros) munmap(zeros, (size_t)(max_bytes ? max_bytes : 1));
    nib_gguf_writer_free(w);
    nib_gguf_close(g);
    free(p.t);
    return s;
}

nib_model *nib_synth_model(const nib_synth_shape *sh, const nib_synth_ftype *ft, uint64_t seed, nib_pool *pool,
                           nib_error *err) {
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    char path[4096];
    if (snprintf(path, sizeof path, "%s/nib-synth-XXXXXX", dir) >= (int)sizeof path) {
        nib_error_set(err, NIB_ERR_ARG, "synth: TMPDIR is too long");
        return NULL;
    }
    int fd = mkstemp(path);
    if (fd < 0) {
        nib_error_set(err, NIB_ERR_IO, "synth: cannot create a temporary file in %s: %s", dir, strerror(errno));
        return NULL;
    }
    close(fd);
    nib_gguf *g = NULL;
    if (nib_synth_write(path, sh, ft, seed, pool, NULL, err) == NIB_OK) g = nib_gguf_open(path, err);
    unlink(path);  /* the mapping keeps the data alive */
    if (!g) return NULL;
    char label[128];
    snprintf(label, sizeof label, "synth:%s:%s", sh->name, ft->name);
    return nib_model_load_gguf(g, label, err);
}
