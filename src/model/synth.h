/* Synthetic models: a real architecture's shapes with random, valid weights.
 *
 * For speed measurements of big models without downloading them: decode speed
 * depends on the shapes and formats, not on what the weights say. The file is
 * a GGUF that nib and llama.cpp both load (same hyperparameter keys, tensor
 * names and shapes as llama.cpp's converter writes, a placeholder SentencePiece
 * vocabulary of the right size), quantized with llama.cpp's mix for the chosen
 * file type (e.g. Q4_K_M: Q6_K on attn_v/ffn_down of some layers, fallbacks
 * for rows that are not whole 256-blocks).
 *
 * Weights are random bytes whose per-block scales are then set so that every
 * matrix dequantizes to values of standard deviation about 1/sqrt(n_in) (the
 * activations stay finite through any number of layers); norms are 1 + small
 * noise, biases small. Nothing is quantized: an 8B model is written at the
 * speed of the PRNG and the page cache.
 *
 *     const nib_synth_shape *sh = nib_synth_shape_find("llama3-8b");
 *     const nib_synth_ftype *ft = nib_synth_ftype_find("Q4_K_M");
 *     nib_synth_stats st;
 *     if (nib_synth_write("l8b.gguf", sh, ft, 1, pool, &st, &err) != NIB_OK) ...
 */
#ifndef NIB_MODEL_SYNTH_H
#define NIB_MODEL_SYNTH_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu/cpu.h"
#include "model/model.h"
#include "nib.h"

typedef struct nib_synth_shape {
    const char *name;     /* "llama3-8b" */
    const char *arch;     /* general.architecture: "llama", "qwen2" or "gemma3" */
    int32_t n_vocab;
    int32_t n_embd;
    int32_t n_layer;
    int32_t n_head;
    int32_t n_head_kv;
    int32_t head_dim;
    int32_t n_ff;
    int32_t n_ctx;        /* context_length (training context) */
    float rope_base;
    float norm_eps;
    bool tied;            /* no output.weight: the LM head is token_embd */
    bool qkv_bias;        /* attn_{q,k,v}.bias (qwen2) */
    int32_t window;       /* gemma2/3: attention.sliding_window, and the post-norms; 0 otherwise */
    /* mixture of experts (0: dense): expert_count, expert_used_count,
     * expert_feed_forward_length; every layer's FFN is the router and the experts */
    int32_t n_expert, n_expert_used, n_ff_exp;
} nib_synth_shape;

/* A llama.cpp file type: the base format of the matrices and its mix rules. */
typedef struct nib_synth_ftype {
    const char *name;     /* "Q4_K_M" */
    nib_type base;        /* most 2-D weights */
    uint32_t file_type;   /* general.file_type: llama.cpp's llama_ftype number (file format) */
    bool mixed;           /* llama_tensor_get_type applies: LM head upgrade, per-tensor rules (synth.c
                           * mix_rules), fallbacks */
} nib_synth_ftype;

int nib_synth_n_shapes(void);
const nib_synth_shape *nib_synth_shape_at(int i);
const nib_synth_shape *nib_synth_shape_find(const char *name);  /* NULL if unknown */
int nib_synth_n_ftypes(void);
const nib_synth_ftype *nib_synth_ftype_at(int i);
const nib_synth_ftype *nib_synth_ftype_find(const char *name);  /* case-insensitive; NULL if unknown */

/* Bytes of tensor data (the figure llama.cpp prints as "model size") and of the
 * parameters; for --list. */
nib_status nib_synth_sizes(const nib_synth_shape *sh, const nib_synth_ftype *ft, uint64_t *data_bytes,
                           uint64_t *n_params, nib_error *err);

typedef struct nib_synth_stats {
    int64_t n_tensors;
    uint64_t data_bytes;     /* tensor data */
    uint64_t file_bytes;
    int64_t rows_checked;    /* rows dequantized by the self-check */
    double std_ratio_min;    /* sampled std / (1/sqrt(n_in)) over the 2-D tensors */
    double std_ratio_max;
} nib_synth_stats;

/* Write the model to path, then reopen it and check a sample of rows of every
 * tensor (dequantized through the format table: all finite, std near
 * 1/sqrt(n_in), norms near 1). The bytes depend only on (shape, ftype, seed),
 * not on the thread count. pool may be NULL (one thread). stats may be NULL.
 * Peak memory: a 1 MiB buffer per thread and the metadata (~3 MB for a 150k
 * vocabulary); the weights go to the file through the page cache. */
nib_status nib_synth_write(const char *path, const nib_synth_shape *sh, const nib_synth_ftype *ft, uint64_t seed,
                           nib_pool *pool, nib_synth_stats *stats, nib_error *err);

/* The same model, loaded: written to a temporary file in $TMPDIR (or /tmp),
 * mapped, and unlinked at once (the mapping keeps the data; nothing is left
 * behind when the process ends). The GGUF writer writes only files, hence the
 * detour; on a tmpfs $TMPDIR the model lives in RAM, elsewhere in the page cache. */
nib_model *nib_synth_model(const nib_synth_shape *sh, const nib_synth_ftype *ft, uint64_t seed, nib_pool *pool,
                           nib_error *err);

#endif
