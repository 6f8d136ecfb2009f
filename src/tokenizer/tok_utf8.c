/* UTF-8 as llama.cpp's unicode.cpp decodes it (lenient), and strict checks
 * for the streaming detokenizer. */
#include "tokenizer/tok_utf8.h"

static int is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

uint32_t tok_utf8_decode(const char *str, size_t n, size_t *pos) {
    const unsigned char *s = (const unsigned char *)str + *pos;
    size_t left = n - *pos;
    unsigned char c = s[0];
    if (!(c & 0x80)) {
        *pos += 1;
        return c;
    }
    /* mirrors unicode_cpt_from_utf8: the lead byte's bits alone pick the form;
     * overlong forms and surrogates pass, as there */
    if ((c & 0x40) && !(c & 0x20)) {
        if (left >= 2 && is_cont(s[1])) {
            *pos += 2;
            return ((uint32_t)(c & 0x1F) << 6) | (s[1] & 0x3F);
        }
    } else if ((c & 0x40) && !(c & 0x10)) {
        if (left >= 3 && is_cont(s[1]) && is_cont(s[2])) {
            *pos += 3;
            return ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        }
    } else if ((c & 0x40) && !(c & 0x08)) {
        if (left >= 4 && is_cont(s[1]) && is_cont(s[2]) && is_cont(s[3])) {
            *pos += 4;
            return ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
                   ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
        }
    }
    *pos += 1;
    return TOK_CPT_REPLACEMENT;
}

size_t tok_utf8_encode(uint32_t cpt, char *out) {
    unsigned char *o = (unsigned char *)out;
    if (cpt <= 0x7F) {
        o[0] = (unsigned char)cpt;
        return 1;
    }
    if (cpt <= 0x7FF) {
        o[0] = (unsigned char)(0xC0 | (cpt >> 6));
        o[1] = (unsigned char)(0x80 | (cpt & 0x3F));
        return 2;
    }
    if (cpt <= 0xFFFF) {
        o[0] = (unsigned char)(0xE0 | (cpt >> 12));
        o[1] = (unsigned char)(0x80 | ((cpt >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cpt & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | ((cpt >> 18) & 0x07));
    o[1] = (unsigned char)(0x80 | ((cpt >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cpt >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cpt & 0x3F));
    return 4;
}

int tok_utf8_strict(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    int need;
    unsigned char lo = 0x80, hi = 0xBF;  /* range of the second byte (RFC 3629 table) */
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c == 0xE0) need = 3, lo = 0xA0;
    else if (c == 0xED) need = 3, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) need = 3;
    else if (c == 0xF0) need = 4, lo = 0x90;
    else if (c == 0xF4) need = 4, hi = 0x8F;
    else if (c >= 0xF1 && c <= 0xF3) need = 4;
    else return -1;
    for (int i = 1; i < need; i++) {
        if ((size_t)i >= n) return 0;
        unsigned char b = s[i];
        if (i == 1 ? (b < lo || b > hi) : !is_cont(b)) return -i;  /* the bytes before b are one bad run */
    }
    return need;
}
