/* UTF-8 the way llama.cpp's unicode.cpp reads and writes it. Its decoder is
 * lenient in specific ways that decide token ids, so nib copies them:
 *   - the length of a sequence comes from the lead byte's high nibble alone;
 *   - continuation bytes are checked, but overlong forms and surrogates are
 *     accepted as the code point they spell;
 *   - an invalid byte becomes U+FFFD and decoding resumes at the next byte. */
#ifndef NIB_TOKENIZER_TOK_UTF8_H
#define NIB_TOKENIZER_TOK_UTF8_H

#include <stddef.h>
#include <stdint.h>

#define TOK_CPT_REPLACEMENT 0xFFFDu

/* 1..4 from the lead byte alone (continuation bytes count as 1). */
static inline size_t tok_utf8_len(unsigned char lead) {
    static const unsigned char len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[lead >> 4];
}

/* Decodes the code point at s[*pos] (n bytes in all), advancing *pos; invalid
 * input gives U+FFFD and advances one byte. */
uint32_t tok_utf8_decode(const char *s, size_t n, size_t *pos);

/* Encodes cpt (up to 0x1FFFFF: llama.cpp's decoder can produce values past
 * U+10FFFF from F4..F7 lead bytes) into out[0..4); returns the length. */
size_t tok_utf8_encode(uint32_t cpt, char *out);

/* Length of the complete, strictly valid UTF-8 character at s (n bytes
 * available): 1..4; 0 if s holds only the start of a valid character (more
 * bytes may complete it); -k if the k bytes at s are an invalid run that
 * must be replaced (the "maximal subpart" of Unicode's U+FFFD practice). */
int tok_utf8_strict(const unsigned char *s, size_t n);

#endif
