/* nib inspect FILE: metadata, tensor table and totals by type.
 * nib inspect --types: every format nib knows, with its geometry and coverage. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cpu/cpu.h"
#include "cuda/cuda.h"
#include "nib.h"
#include "quant/types.h"

#define MAX_SHOWN_ELEMS 8   /* array elements printed before "..." */
#define MAX_SHOWN_CHARS 72  /* string characters printed before "..." */

static void usage(FILE *f) {
    fprintf(f,
            "usage: nib inspect FILE.gguf     metadata, tensors, totals by type\n"
            "       nib inspect --types       every supported format and its backends\n");
}

/* The bytes of s with control bytes escaped (a file's text must not drive the
 * terminal: no raw escape sequences), at most max of them; returns the
 * columns printed. */
static int print_escaped(nib_str s, uint64_t max) {
    uint64_t n = s.len < max ? s.len : max;
    int cols = 0;
    for (uint64_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c == '\n') cols += printf("\\n");
        else if (c == '\t') cols += printf("\\t");
        else if (c == '"' || c == '\\') cols += printf("\\%c", c);
        else if (c < 0x20 || c == 0x7f) cols += printf("\\x%02x", c);
        else putchar(c), cols += (c & 0xC0) != 0x80;  /* a UTF-8 character is one column */
    }
    return cols;
}

/* A string in quotes, cut at MAX_SHOWN_CHARS. */
static void print_str(nib_str s) {
    putchar('"');
    print_escaped(s, MAX_SHOWN_CHARS);
    putchar('"');
    if (s.len > MAX_SHOWN_CHARS) printf("... (%llu bytes)", (unsigned long long)s.len);
}

/* A key or tensor name, escaped, padded to width columns. */
static void print_name(nib_str s, int width) {
    int cols = print_escaped(s, 160);
    if (s.len > 160) cols += printf("...");
    for (; cols < width; cols++) putchar(' ');
}

static void print_scalar(nib_gguf_vtype t, const void *p) {
    union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
            float f32; uint64_t u64; int64_t i64; double f64; } v;
    memcpy(&v, p, nib_gguf_vtype_size(t));
    switch (t) {  /* printing is the one place each value type needs its own format */
    case NIB_GGUF_UINT8: printf("%u", v.u8); break;
    case NIB_GGUF_INT8: printf("%d", v.i8); break;
    case NIB_GGUF_UINT16: printf("%u", v.u16); break;
    case NIB_GGUF_INT16: printf("%d", v.i16); break;
    case NIB_GGUF_UINT32: printf("%u", v.u32); break;
    case NIB_GGUF_INT32: printf("%d", v.i32); break;
    case NIB_GGUF_FLOAT32: printf("%g", (double)v.f32); break;
    case NIB_GGUF_BOOL: printf("%s", v.u8 ? "true" : "false"); break;
    case NIB_GGUF_UINT64: printf("%llu", (unsigned long long)v.u64); break;
    case NIB_GGUF_INT64: printf("%lld", (long long)v.i64); break;
    case NIB_GGUF_FLOAT64: printf("%g", v.f64); break;
    default: printf("?"); break;
    }
}

static void print_kv(const nib_gguf_kv *kv) {
    printf("  ");
    print_name(kv->key, 44);
    putchar(' ');
    if (kv->type == NIB_GGUF_STRING) {
        /* from the kv itself: a key cut or holding a NUL cannot be looked up again */
        printf("%-8s ", "string");
        print_str(nib_gguf_kv_str(kv));
    } else if (kv->type == NIB_GGUF_ARRAY) {
        printf("[%s x %llu] [", nib_gguf_vtype_name(kv->elem_type), (unsigned long long)kv->n);
        uint64_t shown = kv->n < MAX_SHOWN_ELEMS ? kv->n : MAX_SHOWN_ELEMS;
        for (uint64_t i = 0; i < shown; i++) {
            if (i) printf(", ");
            if (kv->elem_type == NIB_GGUF_STRING) print_str(kv->strs[i]);
            else print_scalar(kv->elem_type, (const uint8_t *)kv->data + i * nib_gguf_vtype_size(kv->elem_type));
        }
        printf("%s]", kv->n > shown ? ", ..." : "");
    } else {
        printf("%-8s ", nib_gguf_vtype_name(kv->type));
        print_scalar(kv->type, kv->data);
    }
    putchar('\n');
}

static void print_bytes(uint64_t b, char *out, size_t n) {
    if (b >= (1ull << 30)) snprintf(out, n, "%.2f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20)) snprintf(out, n, "%.2f MiB", (double)b / (1ull << 20));
    else if (b >= (1ull << 10)) snprintf(out, n, "%.2f KiB", (double)b / (1ull << 10));
    else snprintf(out, n, "%llu B", (unsigned long long)b);
}

static int inspect_file(const char *path) {
    nib_error err;
    nib_gguf *g = nib_gguf_open_split(path, &err);
    if (!g) {
        fprintf(stderr, "nib inspect: %s\n", err.msg);
        return 1;
    }
    char size[32];
    print_bytes(nib_gguf_file_size(g), size, sizeof size);
    int n_splits = nib_gguf_n_splits(g);
    printf("%s: GGUF v%u, %lld metadata keys, %lld tensors, alignment %u, data at byte %llu, %s\n", path,
           nib_gguf_version(g), (long long)nib_gguf_n_kv(g), (long long)nib_gguf_n_tensors(g), nib_gguf_alignment(g),
           (unsigned long long)nib_gguf_data_offset(g), size);
    if (n_splits > 1)
        printf("split 1 of %d: the tensors of all %d files are listed, each offset within its own file's data section\n",
               n_splits, n_splits);
    printf("\n");

    printf("metadata:\n");
    for (int64_t i = 0; i < nib_gguf_n_kv(g); i++) print_kv(nib_gguf_kv_at(g, i));

    printf("\ntensors:\n  %5s  %-40s %-8s %-24s %12s %12s%s\n", "#", "name", "type", "shape", "bytes", "offset",
           n_splits > 1 ? "  split" : "");
    uint64_t bytes_by_type[NIB_TYPE_COUNT] = {0}, count_by_type[NIB_TYPE_COUNT] = {0};
    uint64_t elems_total = 0, bytes_total = 0;
    for (int64_t i = 0; i < nib_gguf_n_tensors(g); i++) {
        const nib_gguf_tensor *t = nib_gguf_tensor_at(g, i);
        char shape[64];
        int k = 0;
        uint64_t elems = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) {
            k += snprintf(shape + k, sizeof shape - (size_t)k, "%s%lld", d ? " x " : "", (long long)t->ne[d]);
            if (k >= (int)sizeof shape) k = (int)sizeof shape - 1;
        }
        for (int d = 0; d < NIB_GGUF_MAX_DIMS; d++) elems *= (uint64_t)t->ne[d];
        printf("  %5lld  ", (long long)i);
        print_name(t->name, 40);
        printf(" %-8s %-24s %12llu %12llu", nib_type_name(t->type), shape, (unsigned long long)t->n_bytes,
               (unsigned long long)t->offset);
        if (n_splits > 1) printf("  %5d", nib_gguf_tensor_split(g, i) + 1);
        printf("\n");
        bytes_by_type[t->type] += t->n_bytes;
        count_by_type[t->type]++;
        elems_total += elems;
        bytes_total += t->n_bytes;
    }
    printf("\ntotals by type:\n");
    for (int ty = 0; ty < NIB_TYPE_COUNT; ty++) {
        if (!count_by_type[ty]) continue;
        print_bytes(bytes_by_type[ty], size, sizeof size);
        printf("  %-8s %6llu tensors %14llu bytes  (%s)\n", nib_type_name((nib_type)ty),
               (unsigned long long)count_by_type[ty], (unsigned long long)bytes_by_type[ty], size);
    }
    print_bytes(bytes_total, size, sizeof size);
    printf("  %-8s %6lld tensors %14llu bytes  (%s), %llu parameters, %.2f bits per weight\n", "total",
           (long long)nib_gguf_n_tensors(g), (unsigned long long)bytes_total, size, (unsigned long long)elems_total,
           elems_total ? 8.0 * (double)bytes_total / (double)elems_total : 0.0);
    nib_gguf_close(g);
    return 0;
}

static int inspect_types(void) {
    printf("%-3s %-8s %6s %6s %7s  %-10s %-9s %-14s %s\n", "id", "type", "block", "bytes", "bits/w", "dequantize",
           "quantize", "vec_dot with", "backends");
    int n = 0;
    for (int t = 0; t < NIB_TYPE_COUNT; t++) {
        const nib_type_traits *tt = nib_type_traits_get(t);
        if (!tt) continue;
        n++;
        double bpw = 8.0 * (double)tt->block_bytes / (double)tt->block_elems;
        /* the CUDA backend says itself which formats it has a GEMV kernel for */
        const char *cuda_path = nib_cuda_gemv_path((nib_type)t);
        char cpu[192];
        nib_cpu_describe_kernels((nib_type)t, cpu, sizeof cpu);
        /* a format the device keeps as another (cuda/gpu_layout.h) */
        const nib_type dev = nib_cuda_device_type((nib_type)t);
        char as[32] = "";
        if (cuda_path && dev != (nib_type)t) snprintf(as, sizeof as, " (as %s)", nib_type_name(dev));
        printf("%-3d %-8s %6lld %6zu %7.4g  %-10s %-9s %-14s cpu %s%s%s%s\n", t, tt->name, (long long)tt->block_elems,
               tt->block_bytes, bpw, tt->dequantize ? "yes" : "no", tt->quantize ? "yes" : "no",
               nib_type_name(tt->vec_dot_type), cpu, cuda_path ? ", cuda gemv " : "",
               cuda_path ? cuda_path : "", as);
    }
    printf("\n%d formats.", n);
    printf(" 'quantize: no' means no reference quantizer:");
    for (int t = 0; t < NIB_TYPE_COUNT; t++) {
        const nib_type_traits *tt = nib_type_traits_get(t);
        if (tt && !tt->quantize) printf(" %s", tt->name);
    }
    const nib_type_traits *iq = nib_type_traits_get(NIB_TYPE_IQ2_XXS);
    printf(" (%s).\n", iq && iq->quantize_note ? iq->quantize_note : "");
    printf("Known, stored but not computed with: I8 I16 I32 I64 F64.\n");
    if (nib_cuda_compiled()) {
        printf("No CUDA kernel yet (these run on the CPU):");
        for (int t = 0; t < NIB_TYPE_COUNT; t++)
            if (nib_type_traits_get(t) && !nib_cuda_has_gemv((nib_type)t)) printf(" %s", nib_type_name((nib_type)t));
        printf(".\n");
    } else {
        printf("CUDA: not compiled into this build.\n");
    }
    return 0;
}

int cmd_inspect(int argc, char **argv) {
    if (argc != 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--types")) return inspect_types();
    return inspect_file(argv[1]);
}
