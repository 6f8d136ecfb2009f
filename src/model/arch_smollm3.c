/* smollm3: SmolLM3. A llama block whose every fourth layer (3, 7, 11, ...)
 * uses no position encoding at all (NoPE): its queries and keys are not
 * rotated. llama.cpp fixes the interval at 4 (the file states no key for it),
 * and so does nib. */
#include "model/arch.h"

#define SMOLLM3_NO_ROPE_STEP 4

nib_status nib_arch_smollm3_bind(nib_loader *ld, nib_model *m, int il, nib_layer *l) {
    (void)ld, (void)m;
    l->no_rope = (il + 1) % SMOLLM3_NO_ROPE_STEP == 0;
    return NIB_OK;
}
