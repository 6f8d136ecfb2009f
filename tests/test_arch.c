/* Architecture rules that a GGUF file does not state and that llama.cpp
 * applies by model size; each must give what llama.cpp computes for the real
 * models' hyperparameters (from their config.json).
 *
 * Gemma 3's attention scale: 1/sqrt(head_dim) for 270M, 1B, 4B and 12B;
 * 1/sqrt(n_embd / n_head) = 1/sqrt(168) for the 27B (62 layers), whose
 * head_dim is 128. A wrong scale is no crash: the 27B would run with logits
 * sharper than trained, so the value is checked exactly (the same float
 * operations as llama.cpp's). */
#include <math.h>
#include <string.h>

#include "model/arch.h"
#include "test.h"

typedef struct gemma3_size {
    const char *name;
    int n_layer, n_embd, n_head, head_dim;
    int scale_dim; /* the d of 1/sqrt(d) llama.cpp uses */
} gemma3_size;

static void test_gemma3_attn_scale(void) {
    static const gemma3_size sizes[] = {
        {"270M", 18, 640, 4, 256, 256},   {"1B", 26, 1152, 4, 256, 256},  {"4B", 34, 2560, 8, 256, 256},
        {"12B", 48, 3840, 16, 256, 256},  {"27B", 62, 5376, 32, 128, 168},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const gemma3_size *s = &sizes[i];
        nib_hparams hp;
        memset(&hp, 0, sizeof hp);
        hp.n_layer = s->n_layer, hp.n_embd = s->n_embd, hp.n_head = s->n_head, hp.head_dim_k = s->head_dim;
        const float want = 1.0f / sqrtf((float)s->scale_dim), got = nib_gemma3_attn_scale(&hp);
        CHECK(got == want, "gemma3 %s: attention scale %.9g, want 1/sqrt(%d) = %.9g", s->name, (double)got,
              s->scale_dim, (double)want);
    }
}

int main(void) {
    RUN(test_gemma3_attn_scale);
    return test_summary();
}
