/* Tokenizers read from a GGUF vocabulary: byte-level BPE (tokenizer.ggml.model
 * "gpt2", pre-tokenizer chosen by tokenizer.ggml.pre) and SentencePiece
 * ("llama": scores, byte fallback, Gemma's handling). */
#ifndef NIB_TOKENIZER_H
#define NIB_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nib.h"

typedef struct nib_tokenizer nib_tokenizer;

/* Reads tokenizer.* metadata; every id, array length and element type is
 * checked (a bad vocabulary is an error naming the key, never a crash). */
nib_tokenizer *nib_tokenizer_load(const nib_gguf *g, nib_error *err);
void nib_tokenizer_free(nib_tokenizer *tok);

int32_t nib_tokenizer_n_vocab(const nib_tokenizer *tok);
int32_t nib_tokenizer_bos(const nib_tokenizer *tok);   /* -1 if none */
int32_t nib_tokenizer_eos(const nib_tokenizer *tok);   /* -1 if none */
/* End of generation: EOS, EOT (<|im_end|>, <end_of_turn>, <|eot_id|>...) and the like. */
bool nib_tokenizer_is_eog(const nib_tokenizer *tok, int32_t id);
/* The model's own rule for adding BOS (tokenizer.ggml.add_bos_token, or the default of its type). */
bool nib_tokenizer_adds_bos(const nib_tokenizer *tok);
/* id of a token by its exact text, or -1 (e.g. "<|im_end|>"). */
int32_t nib_tokenizer_find(const nib_tokenizer *tok, const char *text);

int32_t nib_tokenizer_eot(const nib_tokenizer *tok);   /* -1 if none */
int32_t nib_tokenizer_unk(const nib_tokenizer *tok);   /* -1 if none */
bool nib_tokenizer_adds_eos(const nib_tokenizer *tok);
/* Control tokens (BOS, <start_of_turn>, ...) render as nothing unless asked for. */
bool nib_tokenizer_is_control(const nib_tokenizer *tok, int32_t id);
/* The token's text as stored in the vocabulary (GPT-2 characters, '▁', <0xNN>);
 * not NUL-terminated; NULL for an id outside the vocabulary. */
const char *nib_tokenizer_token_text(const nib_tokenizer *tok, int32_t id, size_t *len);
/* The longest nib_token_to_piece result: a buffer of 3 * this + 12 bytes always
 * holds what one nib_detok_push call has to write. */
size_t nib_tokenizer_max_piece_len(const nib_tokenizer *tok);

/* Encode len bytes of UTF-8 text. add_special: add BOS (and EOS) as the model's
 * rules say. parse_special: text of special/control tokens becomes those tokens
 * (otherwise it is tokenized as plain text). *ids is malloc'ed (caller frees). */
nib_status nib_tokenize(const nib_tokenizer *tok, const char *text, size_t len, bool add_special,
                        bool parse_special, int32_t **ids, int64_t *n_ids, nib_error *err);

/* The bytes a token stands for (BPE bytes decoded, SentencePiece '▁' as space,
 * <0xNN> as that byte). special: render control tokens as their text (else they
 * render as nothing). Returns the length; writes at most cap bytes (no NUL). */
size_t nib_token_to_piece(const nib_tokenizer *tok, int32_t id, bool special, char *buf, size_t cap);

/* Streaming detokenization: feed ids one by one, get only whole UTF-8
 * characters out; a character split across tokens is held until complete.
 * Start from a zeroed nib_detok ({0}). The output is always valid UTF-8: bytes
 * that can never form a character come out as U+FFFD (one per maximal invalid
 * run, as Python's errors="replace"). */
typedef struct nib_detok {
    char pending[8];
    int n_pending;
    uint64_t n_lost;  /* bytes dropped because out was too small (0 when sized as below) */
} nib_detok;
/* Writes the printable bytes for id to out and returns how many it wrote:
 * never more than cap, and always whole characters. What does not fit is
 * dropped (counted in d->n_lost): size out by 3 * nib_tokenizer_max_piece_len
 * + 12 and nothing ever is. */
size_t nib_detok_push(nib_detok *d, const nib_tokenizer *tok, int32_t id, bool special, char *out, size_t cap);
/* Whatever is still pending at the end (invalid UTF-8 comes out as U+FFFD);
 * returns the bytes written (at most 3, none when cap < 3). */
size_t nib_detok_flush(nib_detok *d, char *out, size_t cap);

#endif
