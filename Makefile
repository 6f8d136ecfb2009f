# nib: one command builds everything (`make`), one runs every CPU test (`make test`).
#
#   make            libnib.a, libnib.so (for the Python oracle tests) and the nib CLI
#   make test       build and run every test that needs no GPU
#   make run        fetch SmolLM2-135M-Instruct (once) and answer a sample prompt
#   make fuzz       fuzz the reader, loader, tokenizer and chat templates (FUZZ_SECONDS each)
#
# The reference kernels must compute exactly what their definitions say, so
# floating-point contraction (FMA fusion) is off and -ffast-math is never used.

.DEFAULT_GOAL := all

CC      ?= cc
BUILD   ?= build
OPT     ?= -O2
CFLAGS  := -std=c11 $(OPT) -g -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wvla -ffp-contract=off -fno-fast-math -fPIC \
           -pthread -D_DEFAULT_SOURCE -D_FILE_OFFSET_BITS=64 -Iinclude -Isrc $(EXTRA_CFLAGS)
LDLIBS  := -lm -lpcre2-8 -pthread

# every folder under src/ but the CLI is the library
LIB_SRC := $(sort $(filter-out src/cli/%,$(wildcard src/*/*.c)))
CLI_SRC := $(sort $(wildcard src/cli/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)

# ---- CUDA backend (src/cuda/) ---------------------------------------------------------
# NIB_CUDA       1 when nvcc is on PATH (auto-detected); NIB_CUDA=0 builds without
#                CUDA even then. Without CUDA, src/cuda/cuda_stub.c answers every
#                nib_cuda_* call with "not compiled into this build".
# NIB_CUDA_ARCH  SASS targets, default 80 86 89 90, plus PTX of the last one so
#                newer GPUs JIT it; NIB_CUDA_ARCH=90 builds sm_90 (+PTX) only.
# The CUDA runtime is linked statically (-lcudart_static): a binary built with
# CUDA still starts on a machine with no NVIDIA driver and says why CUDA is off.
#   make test-gpu   the GPU tests (tests/gpu/); without a GPU: one SKIP with the reason
#   make gpu-lab    the GEMV kernel lab (dev/cuda/gemv_lab.cu), a standalone program, and the
#                   prompt decoder's lab (dev/cuda/dequant_lab.cu), which links the library
NVCC          ?= nvcc
NIB_CUDA      ?= $(if $(shell command -v $(NVCC) 2>/dev/null),1,0)
NIB_CUDA_ARCH ?= 80 86 89 90
GPU_TEST_BIN  := $(patsubst tests/gpu/%.c,$(BUILD)/tests/gpu/%,$(sort $(wildcard tests/gpu/test_*.c)))
CUDA_HDR      := $(wildcard src/cuda/*.h src/cuda/*.cuh) src/quant/blocks.h include/nib.h
.PHONY: test-gpu gpu-lab
ifeq ($(NIB_CUDA),1)
CUDA_HOME     ?= $(patsubst %/bin/,%,$(dir $(shell command -v $(NVCC))))
# --threads 0: one nvcc compiles its architectures in parallel (gemv.cu, the
# longest file, takes 4 min for five targets on one core, 2.2 min on two)
NVCCFLAGS     := --threads 0 -std=c++17 -O3 -lineinfo -Xcompiler -fPIC,-Wall -Iinclude -Isrc \
                 $(foreach a,$(NIB_CUDA_ARCH),-gencode arch=compute_$(a),code=sm_$(a)) \
                 -gencode arch=compute_$(lastword $(NIB_CUDA_ARCH)),code=compute_$(lastword $(NIB_CUDA_ARCH))
CUDA_OBJ      := $(patsubst %.cu,$(BUILD)/%.o,$(sort $(wildcard src/cuda/*.cu)))
LIB_OBJ       := $(filter-out $(BUILD)/src/cuda/cuda_stub.o,$(LIB_OBJ)) $(CUDA_OBJ)
LDLIBS        += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++
$(BUILD)/src/cuda/%.o: src/cuda/%.cu $(CUDA_HDR)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@
gpu-lab: $(BUILD)/dev/cuda/gemv_lab $(BUILD)/dev/cuda/dequant_lab
$(BUILD)/dev/cuda/gemv_lab: dev/cuda/gemv_lab.cu $(CUDA_HDR)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -o $@ $<
$(BUILD)/dev/cuda/dequant_lab: dev/cuda/dequant_lab.cu $(CUDA_HDR) $(BUILD)/libnib.a
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c -o $@.o $<
	$(CC) -o $@ $@.o $(BUILD)/libnib.a $(LDLIBS)
else
gpu-lab:
	@echo "gpu-lab: no nvcc (or NIB_CUDA=0): the kernel lab needs CUDA"
endif
$(BUILD)/tests/gpu/%: tests/gpu/%.c tests/test.h $(BUILD)/libnib.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -o $@ $< $(BUILD)/libnib.a $(LDLIBS)
$(BUILD)/tests/test_split: tests/tiny_model.h
test-gpu: $(GPU_TEST_BIN) $(BUILD)/nib
	@status=0; for t in $(GPU_TEST_BIN); do echo "-- $$t"; $$t || status=1; done; \
	echo "-- nib verify (models/)"; sh tests/gpu/verify_models.sh $(BUILD)/nib || status=1; exit $$status
# ---- end of the CUDA block --------------------------------------------------------------

TEST_C   := $(sort $(wildcard tests/test_*.c))
TEST_BIN := $(TEST_C:tests/%.c=$(BUILD)/tests/%)

.PHONY: all lib test test-c test-oracle clean venv run bench-cpu models
all: $(BUILD)/libnib.a $(BUILD)/libnib.so $(BUILD)/nib

lib: $(BUILD)/libnib.a

# Debian packages the build needs (PCRE2), installed once if missing
$(BUILD)/.deps-ok: tools/setup_deps.sh
	@sh tools/setup_deps.sh
	@mkdir -p $(BUILD) && touch $@

$(BUILD)/%.o: %.c | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# SIMD kernels: only these files get the wide instructions; the library stays
# baseline x86-64 and picks kernels at run time (src/cpu/cpu_kernels.c).
$(BUILD)/src/cpu/%_avx2.o: CFLAGS += -mavx2 -mfma -mf16c
$(BUILD)/src/ops/%_avx2.o: CFLAGS += -mavx2 -mfma -mf16c
$(BUILD)/src/cpu/%_avx512.o: CFLAGS += -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512vnni

$(BUILD)/libnib.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libnib.so: $(LIB_OBJ)
	$(CC) -shared -o $@ $^ $(LDLIBS)

$(BUILD)/nib: $(CLI_OBJ) $(BUILD)/libnib.a
	$(CC) -o $@ $(CLI_OBJ) $(BUILD)/libnib.a $(LDLIBS)

$(BUILD)/tests/%: tests/%.c tests/test.h $(BUILD)/libnib.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -o $@ $< $(BUILD)/libnib.a $(LDLIBS)

# CPU matmul kernel lab (a program, not a test): make bench-cpu && $(BUILD)/bench/cpu_matmul
bench-cpu: $(BUILD)/bench/cpu_matmul
$(BUILD)/bench/%: bench/%.c $(BUILD)/libnib.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libnib.a $(LDLIBS)

# ---- tests ------------------------------------------------------------------
# test-c: the C test runners (table walk, round trips, dots, GGUF reader/writer).
# test-oracle: the independent oracle (gguf-py's numpy code) in a project venv.
VENV := .venv
PY   := $(VENV)/bin/python

venv: $(VENV)/.ok
$(VENV)/.ok: tests/requirements.txt tools/setup_venv.sh
	sh tools/setup_venv.sh $(VENV) tests/requirements.txt
	@touch $@

test-c: $(TEST_BIN) $(BUILD)/nib
	@sh tests/run_c_tests.sh $(BUILD) $(TEST_BIN)

test-oracle: $(BUILD)/libnib.so $(BUILD)/nib venv
	$(PY) tests/oracle/test_oracle.py --lib $(BUILD)/libnib.so --nib $(BUILD)/nib

test: all
	@sh tests/run_all.sh "$(MAKE)"

# test-fuzz, test-hostile (both in `make test`) and `make fuzz`: hostile input
include tests/hostile.mk

# ---- running a model -------------------------------------------------------------
RUN_MODEL  ?= models/SmolLM2-135M-Instruct.Q4_1.gguf
RUN_PROMPT ?= <|im_start|>user\nWhat is the capital of France? Answer in one sentence.<|im_end|>\n<|im_start|>assistant\n

# pip comes from the project venv: a fresh Debian python3 may have none
models: venv
	@PYTHON=$(PY) sh tools/fetch_models.sh all

run: all venv
	@PYTHON=$(PY) sh tools/fetch_models.sh smollm2
	$(BUILD)/nib run $(RUN_MODEL) -p "$$(printf '$(RUN_PROMPT)')" -n 64 --temp 0

# ---- whole models against llama.cpp ---------------------------------------------
# test-e2e: nib against the committed golden files of tests/golden/models (the
#   models come from `sh tools/fetch_models.sh`; a model not there is skipped).
# golden: the models (make models), the llama.cpp venv (tools/setup_llama_venv.sh),
#   new golden files from llama.cpp, then the e2e test against them.
LLAMA_VENV := .venv-llama
.PHONY: test-e2e golden

test-e2e: $(BUILD)/libnib.so $(BUILD)/nib venv
	$(PY) tests/e2e/test_synth.py --lib $(BUILD)/libnib.so --nib $(BUILD)/nib
	$(PY) tests/e2e/test_models.py --lib $(BUILD)/libnib.so

golden: $(BUILD)/libnib.so $(BUILD)/nib models
	sh tools/setup_llama_venv.sh $(LLAMA_VENV)
	$(LLAMA_VENV)/bin/python tools/gen_golden_models.py
	$(LLAMA_VENV)/bin/python tools/gen_golden_synth.py --nib $(BUILD)/nib
	$(PY) tests/e2e/test_models.py --lib $(BUILD)/libnib.so

clean:
	rm -rf $(BUILD)

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d)
