/* The architecture table. To add an architecture: write arch_<name>.c with
 * its read_hparams (and bind_layer for optional tensors), declare it below,
 * add a row. */
#include <string.h>

#include "model/arch.h"

static const nib_arch_desc arch_table[] = {
    /* name     experts  hyperparameters           layer's own tensors */
    {"llama",    true,  nib_arch_llama_hparams,   NULL},  /* Mixtral: llama with experts */
    {"smollm3",  false, nib_arch_llama_hparams,   nib_arch_smollm3_bind},
    {"qwen2",    false, nib_arch_qwen2_hparams,   nib_arch_qwen2_bind},
    {"qwen3",    false, nib_arch_qwen3_hparams,   nib_arch_qwen3_bind},
    {"qwen3moe", true,  nib_arch_qwen3moe_hparams, nib_arch_qwen3_bind},
    {"phi3",     false, nib_arch_phi3_hparams,    NULL},
    {"olmoe",    true,  nib_arch_olmoe_hparams,   nib_arch_olmoe_bind},
    {"gpt-oss",  true,  nib_arch_gpt_oss_hparams, nib_arch_gpt_oss_bind},
    {"olmo2",    false, nib_arch_olmo2_hparams,   nib_arch_olmo2_bind},
    {"granite",  false, nib_arch_granite_hparams, NULL},
    {"granitemoe", true, nib_arch_granite_hparams, NULL},
    {"gemma2",   false, nib_arch_gemma2_hparams,  nib_arch_gemma2_bind},
    {"gemma3",   false, nib_arch_gemma3_hparams,  nib_arch_gemma3_bind},
};

const nib_arch_desc *nib_arch_find(const char *name) {
    for (size_t i = 0; i < sizeof arch_table / sizeof arch_table[0]; i++)
        if (!strcmp(arch_table[i].name, name)) return &arch_table[i];
    return NULL;
}

const char *nib_arch_supported_list(void) { return "llama (Llama, SmolLM2, Mistral, Mixtral), smollm3, qwen2, qwen3, qwen3moe, phi3, olmoe, olmo2, gpt-oss, granite, granitemoe, gemma2, gemma3"; }
