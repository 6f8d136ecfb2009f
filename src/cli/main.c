/* nib: entry point; looks the subcommand up in a table. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);  /* argv[0] is the subcommand */
    const char *summary;
} command;

/* To add a subcommand: write cmd_<name>.c with its own usage text, declare it
 * in cli.h, add a row here. */
static const command commands[] = {
    {"run", cmd_run, "generate text from a prompt"},
    {"chat", cmd_chat, "interactive chat with the model's template"},
    {"bench", cmd_bench, "prompt and generation speed with the decode roofline"},
    {"info", cmd_info, "build features: SIMD level, threads, CUDA"},
    {"inspect", cmd_inspect, "show a GGUF file's metadata and tensors; --types lists every format"},
    {"tokenize", cmd_tokenize, "the token ids (or pieces) a model's tokenizer gives for a text"},
    {"verify", cmd_verify, "greedy decoding on the CPU and the GPU side by side: where they differ"},
    {"synth", cmd_synth, "write a model of a real architecture's shapes with random weights (for speed tests)"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: nib COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nrun 'nib COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "nib: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
