/* nib tokenize MODEL -p TEXT: the ids the model's tokenizer gives for TEXT,
 * with the model's own BOS rule and special tokens parsed, as llama.cpp's
 * `llama-tokenize --ids` (so the two can be diffed). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "nib.h"
#include "tokenizer/tokenizer.h"

#define MAX_PROMPT_FILE_BYTES (256u << 20)  /* a prompt file larger than this is a mistake */

static void usage(FILE *f) {
    fprintf(f,
            "usage: nib tokenize MODEL.gguf (-p TEXT | -f FILE) [options]\n"
            "  -m FILE               the model file, as the positional MODEL\n"
            "  -p TEXT               text to tokenize\n"
            "  -f FILE               read the text from FILE (bytes as they are)\n"
            "  --pieces              one token per line: id and the bytes it stands for\n"
            "  --no-bos              do not add BOS/EOS even if the model asks for them\n"
            "  --no-parse-special    treat <|im_start|>, <bos>... as plain text\n"
            "prints the ids on one line, separated by spaces.\n");
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        if (cap >= MAX_PROMPT_FILE_BYTES) {
            free(buf);
            buf = NULL;
            break;
        }
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) free(buf);
        buf = bigger;
        cap *= 2;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Bytes of the complete UTF-8 character at p (n available), or 0: a token
 * often holds part of a character, and those bytes are shown escaped. */
static size_t utf8_char_len(const unsigned char *p, size_t n) {
    size_t len = p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC2 && p[0] < 0xE0 ? 2 : 0;
    if (len == 0 || len > n) return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    return len;
}

/* A piece on one line: printable text as it is, the rest escaped. */
static void print_piece(const char *p, size_t n) {
    putchar('\'');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        size_t k;
        if (c == '\n') fputs("\\n", stdout);
        else if (c == '\r') fputs("\\r", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c == '\\' || c == '\'') printf("\\%c", c);
        else if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
        else if (c < 0x80) putchar(c);
        else if ((k = utf8_char_len((const unsigned char *)p + i, n - i)) > 0) fwrite(p + i, 1, k, stdout), i += k - 1;
        else printf("\\x%02x", c);
    }
    putchar('\'');
}

int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL, *file = NULL;
    bool pieces = false, bos = true, parse_special = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(a, "-p") || !strcmp(a, "--prompt")) && i + 1 < argc) {
            text = argv[++i];
        } else if ((!strcmp(a, "-f") || !strcmp(a, "--file")) && i + 1 < argc) {
            file = argv[++i];
        } else if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && i + 1 < argc && !model) {
            model = argv[++i];
        } else if (!strcmp(a, "--pieces")) {
            pieces = true;
        } else if (!strcmp(a, "--no-bos")) {
            bos = false;
        } else if (!strcmp(a, "--no-parse-special")) {
            parse_special = false;
        } else if (a[0] != '-' && !model) {
            model = a;
        } else {
            fprintf(stderr, "nib tokenize: unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!model || (!text == !file)) {
        usage(stderr);
        return 2;
    }
    size_t len = 0;
    char *owned = NULL;
    if (file) {
        owned = read_file(file, &len);
        if (!owned) {
            fprintf(stderr, "nib tokenize: cannot read '%s'\n", file);
            return 1;
        }
        text = owned;
    } else {
        len = strlen(text);
    }

    nib_error err;
    int rc = 1;
    nib_tokenizer *tok = NULL;
    int32_t *ids = NULL;
    int64_t n = 0;
    nib_gguf *g = nib_gguf_open_split(model, &err);
    if (!g) {
        fprintf(stderr, "nib tokenize: %s\n", err.msg);
        goto done;
    }
    tok = nib_tokenizer_load(g, &err);
    if (!tok) {
        fprintf(stderr, "nib tokenize: %s: %s\n", model, err.msg);
        goto done;
    }
    if (nib_tokenize(tok, text, len, bos, parse_special, &ids, &n, &err) != NIB_OK) {
        fprintf(stderr, "nib tokenize: %s\n", err.msg);
        goto done;
    }
    if (pieces) {
        size_t cap = nib_tokenizer_max_piece_len(tok) + 1;
        char *buf = malloc(cap);
        if (!buf) {
            fprintf(stderr, "nib tokenize: out of memory\n");
            goto done;
        }
        for (int64_t i = 0; i < n; i++) {
            size_t k = nib_token_to_piece(tok, ids[i], true, buf, cap);
            printf("%6d -> ", ids[i]);
            print_piece(buf, k);
            putchar('\n');
        }
        free(buf);
    } else {
        for (int64_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
        putchar('\n');
    }
    rc = 0;
done:
    free(ids);
    nib_tokenizer_free(tok);
    nib_gguf_close(g);
    free(owned);
    return rc;
}
