/* BPE pre-tokenizers: tokenizer.ggml.pre names -> the regexes that cut text
 * into words before merging, compiled once with PCRE2 (UTF + UCP, so \p{L},
 * \p{N} and \s are Unicode-aware).
 *
 * The regex strings are llama.cpp's (src/llama-vocab.cpp, llm_tokenizer_bpe),
 * character for character: they decide token ids, so they are facts, not
 * style. llama.cpp runs some of them through hand-written matchers
 * (unicode_regex_split_custom_*) and the rest through std::regex over a text
 * where every non-ASCII code point is collapsed to its category; both give the
 * same pieces as a real Unicode regex engine for these patterns, which is what
 * PCRE2 is here. Where a match leaves a gap, the gap is a piece of its own, as
 * in llama.cpp's unicode_regex_split_stl. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tok_internal.h"

/* The contractions part of the llama-3 family, made case-insensitive by hand
 * as llama.cpp does ((?i:...) in the original tokenizer.json). */
#define RE_LLAMA3                                                                               \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|" \
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN2                                                                                \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|" \
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN35                                                                                      \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|" \
    "\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* GPT-2's own pattern. llama.cpp's string has no final "|\s+"; a lone
 * whitespace character it leaves unmatched becomes a gap piece, the same
 * piece the trailing \s+ would have made. */
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RE_TEKKEN                                                                          \
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?" \
    "((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|"   \
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_BLOOM " ?[^(\\s|.,!?\xe2\x80\xa6\xe3\x80\x82\xef\xbc\x8c\xe3\x80\x81\xe0\xa5\xa4\xdb\x94\xd8\x8c)]+"

/* To add a pre-tokenizer: one row, with the names llama.cpp accepts for it
 * and its regex list in order; then a golden file from a model that uses it. */
static const tok_pretok_row pretok_rows[] = {
    {(const char *const[]){"default", NULL},
     {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}, false, false},
    {(const char *const[]){"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                           "midm-2.0", "lfm2", "jina-v5-nano", NULL},
     {RE_LLAMA3}, true, true},
    {(const char *const[]){"dbrx", "smaug-bpe", NULL}, {RE_LLAMA3}, false, false},
    {(const char *const[]){"gpt-2", "gpt2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es",
                           "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "mpt", "olmo", "jais",
                           "trillion", "granite-docling", "exaone4", NULL},
     {RE_GPT2}, false, false},
    {(const char *const[]){"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2",
                           "hunyuan", "solar-open", NULL},
     {RE_QWEN2}, false, false},
    {(const char *const[]){"qwen35", NULL}, {RE_QWEN35}, false, false},
    {(const char *const[]){"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone",
                           "minerva-7b", "mellum2", NULL},
     {"\\p{N}", RE_GPT2}, false, false},
    {(const char *const[]){"falcon", NULL},
     {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]"}, false, false},
    {(const char *const[]){"tekken", NULL}, {RE_TEKKEN}, true, true},
    {(const char *const[]){"bloom", "poro-chat", "gpt3-finnish", NULL}, {RE_BLOOM}, false, false},
    {(const char *const[]){"viking", NULL}, {RE_BLOOM, "\\p{N}"}, false, false},
};

const tok_pretok_row *tok_pretok_find(const char *name, size_t len) {
    for (size_t r = 0; r < sizeof pretok_rows / sizeof pretok_rows[0]; r++)
        for (const char *const *n = pretok_rows[r].names; *n; n++)
            if (strlen(*n) == len && memcmp(*n, name, len) == 0) return &pretok_rows[r];
    return NULL;
}

/* ---- what PCRE2 reads ----------------------------------------------------------
 * llama.cpp classifies code points with its own tables (Unicode 15.1, whitespace =
 * the White_Space property). PCRE2 10.42 carries Unicode 14 and a \s of its own.
 * So PCRE2 reads a twin of the text in which each code point it would class
 * differently is swapped for a stand-in of llama.cpp's class and of the same
 * UTF-8 length (piece offsets then hold for both). At the time of writing, every
 * code point U+0000..U+10FFFF was checked against llama.cpp's unicode-data.cpp
 * for \p{L} \p{N} \p{M} \p{P} \p{S} and \s: no difference is left with PCRE2
 * 10.42. A newer PCRE2 only makes the table below redundant; an older one
 * (Unicode 13, before 10.39) would need more rows. */

/* What that comparison found: the characters Unicode 15.0 and 15.1 assigned
 * (unassigned in Unicode 14), by general category. */
static const struct {
    uint32_t first, last;
    char cat;
} unicode15[] = {
    {0x00CF3, 0x00CF3, 'M'}, {0x00ECE, 0x00ECE, 'M'}, {0x02FFC, 0x02FFF, 'S'}, {0x031EF, 0x031EF, 'S'},
    {0x10EFD, 0x10EFF, 'M'}, {0x1123F, 0x11240, 'L'}, {0x11241, 0x11241, 'M'}, {0x11B00, 0x11B09, 'P'},
    {0x11F00, 0x11F01, 'M'}, {0x11F02, 0x11F02, 'L'}, {0x11F03, 0x11F03, 'M'}, {0x11F04, 0x11F10, 'L'},
    {0x11F12, 0x11F33, 'L'}, {0x11F34, 0x11F3A, 'M'}, {0x11F3E, 0x11F42, 'M'}, {0x11F43, 0x11F4F, 'P'},
    {0x11F50, 0x11F59, 'N'}, {0x1342F, 0x1342F, 'L'}, {0x13440, 0x13440, 'M'}, {0x13441, 0x13446, 'L'},
    {0x13447, 0x13455, 'M'}, {0x1B132, 0x1B132, 'L'}, {0x1B155, 0x1B155, 'L'}, {0x1D2C0, 0x1D2D3, 'N'},
    {0x1DF25, 0x1DF2A, 'L'}, {0x1E030, 0x1E06D, 'L'}, {0x1E08F, 0x1E08F, 'M'}, {0x1E4D0, 0x1E4EB, 'L'},
    {0x1E4EC, 0x1E4EF, 'M'}, {0x1E4F0, 0x1E4F9, 'N'}, {0x1F6DC, 0x1F6DC, 'S'}, {0x1F774, 0x1F776, 'S'},
    {0x1F77B, 0x1F77F, 'S'}, {0x1F7D9, 0x1F7D9, 'S'}, {0x1FA75, 0x1FA77, 'S'}, {0x1FA87, 0x1FA88, 'S'},
    {0x1FAAD, 0x1FAAF, 'S'}, {0x1FABB, 0x1FABD, 'S'}, {0x1FABF, 0x1FABF, 'S'}, {0x1FACE, 0x1FACF, 'S'},
    {0x1FADA, 0x1FADB, 'S'}, {0x1FAE8, 0x1FAE8, 'S'}, {0x1FAF7, 0x1FAF8, 'S'}, {0x2B739, 0x2B739, 'L'},
    {0x2EBF0, 0x2EE5D, 'L'}, {0x31350, 0x323AF, 'L'},
};

/* Stand-ins that Unicode 14 already classes that way: 3-byte and 4-byte forms. */
static const struct {
    char cat;
    uint32_t three, four;
} stand_ins[] = {
    {'L', 0x4E00, 0x10000},  /* CJK ideograph one; Linear B syllable a */
    {'N', 0x2160, 0x10107},  /* Roman numeral one; Aegean number one */
    {'M', 0x0900, 0x101FD},  /* Devanagari inverted candrabindu; Phaistos disc oblique stroke */
    {'P', 0x3001, 0x10100},  /* ideographic comma; Aegean word separator line */
    {'S', 0x2FF0, 0x1F600},  /* ideographic description character; grinning face */
};

uint32_t tok_pretok_stand_in(uint32_t cpt) {
    if (cpt < 0x85) return cpt;
    if (cpt == 0x85) return 0xA0;        /* NEL: White_Space for llama.cpp, not PCRE2's \s; NBSP is both's \s, 2 bytes */
    if (cpt == 0x180E) return 0x200B;    /* Mongolian vowel separator: PCRE2's \s (an old \h), not White_Space; ZWSP is Cf */
    if (cpt >= 0xD800 && cpt <= 0xDFFF) return 0xE000;  /* surrogates (llama.cpp lets them through): private use, \p{C} */
    if (cpt > 0x10FFFF) return 0xF0000;  /* past Unicode (from F4..F7 leads): private use, 4 bytes */
    size_t lo = 0, hi = sizeof unicode15 / sizeof unicode15[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cpt > unicode15[mid].last) lo = mid + 1;
        else hi = mid;
    }
    if (lo == sizeof unicode15 / sizeof unicode15[0] || cpt < unicode15[lo].first) return cpt;
    for (size_t i = 0; i < sizeof stand_ins / sizeof stand_ins[0]; i++)
        if (stand_ins[i].cat == unicode15[lo].cat) return cpt >= 0x10000 ? stand_ins[i].four : stand_ins[i].three;
    return cpt;
}

nib_status tok_regexes_compile(tok_regexes *r, const tok_pretok_row *row, nib_error *err) {
    memset(r, 0, sizeof *r);
    for (int i = 0; i < TOK_MAX_REGEX && row->regex[i]; i++) {
        int code;
        PCRE2_SIZE at;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)row->regex[i], PCRE2_ZERO_TERMINATED,
                                       PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
        if (!re) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(code, msg, sizeof msg);
            tok_regexes_free(r);
            return nib_error_set(err, NIB_ERR_UNSUPPORTED, "pre-tokenizer regex %d does not compile at %zu: %s",
                                 i, (size_t)at, (const char *)msg);
        }
        /* JIT makes splitting several times faster; without it the
         * interpreter gives the same matches, so a JIT failure is not an error */
        (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
        r->code[r->n++] = re;
    }
    return NIB_OK;
}

void tok_regexes_free(tok_regexes *r) {
    for (int i = 0; i < r->n; i++) pcre2_code_free((pcre2_code *)r->code[i]);
    memset(r, 0, sizeof *r);
}

/* One regex over one piece: the piece is the whole subject (so lookaheads and
 * the end of the subject stop at the piece's end, as in llama.cpp); matches and
 * the gaps between them become the new pieces. */
static nib_status split_piece(pcre2_code *re, pcre2_match_data *md, const char *subject, tok_span piece,
                              tok_spans *out, nib_error *err) {
    PCRE2_SPTR s = (PCRE2_SPTR)(subject + piece.off);
    size_t pos = 0, last = 0;
    nib_status st;
    while (pos < piece.len) {
        int rc = pcre2_match(re, s, piece.len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        /* JIT's machine stack is small (32 KiB); a pattern that repeats a group
         * (tekken's) runs out of it on a long word. The interpreter keeps its
         * backtracking on the heap: slower, same matches. */
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
            rc = pcre2_match(re, s, piece.len, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return nib_error_set(err, NIB_ERR_UNSUPPORTED, "pre-tokenizer regex failed: %s", (const char *)msg);
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t a = ov[0], b = ov[1];
        if (b == a) {
            /* none of the table's patterns can match empty; step over one
             * character rather than loop if a future one does */
            pos = a + 1;
            while (pos < piece.len && (s[pos] & 0xC0) == 0x80) pos++;
            continue;
        }
        if (a > last && (st = tok_spans_push(out, piece.off + last, a - last, err))) return st;
        if ((st = tok_spans_push(out, piece.off + a, b - a, err))) return st;
        pos = last = b;
    }
    if (last < piece.len && (st = tok_spans_push(out, piece.off + last, piece.len - last, err))) return st;
    return NIB_OK;
}

nib_status tok_regexes_split(const tok_regexes *r, const char *subject, size_t n, tok_spans *pieces,
                             nib_error *err) {
    pieces->n = 0;
    nib_status st = tok_spans_push(pieces, 0, n, err);
    if (st) return st;
    tok_spans next = {0};
    for (int i = 0; i < r->n && st == NIB_OK; i++) {
        pcre2_code *re = (pcre2_code *)r->code[i];
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
        if (!md) {
            st = nib_error_set(err, NIB_ERR_NOMEM, "out of memory for regex match data");
            break;
        }
        next.n = 0;
        for (size_t p = 0; p < pieces->n && st == NIB_OK; p++)
            st = split_piece(re, md, subject, pieces->v[p], &next, err);
        pcre2_match_data_free(md);
        tok_spans tmp = *pieces;
        *pieces = next;
        next = tmp;
    }
    free(next.v);
    return st;
}
