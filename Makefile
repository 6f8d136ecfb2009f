# nib: one command builds everything (`make`), one runs every CPU test (`make test`).
#
#   make            libnib.a, libnib.so (for the Python oracle tests) and the nib CLI
#   make test       build and run every test that needs no GPU
#   make run        fetch SmolLM2-135M-Instruct (once) and answer a sample prompt
#
# The reference kernels must compute exactly what their definitions say, so
# floating-point contraction (FMA fusion) is off and -ffast-math is never used.

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
# golden: the llama.cpp venv (tools/setup_llama_venv.sh), the models, new golden
#   files from llama.cpp, then test-e2e against them.
LLAMA_VENV := .venv-llama
.PHONY: test-e2e golden

test-e2e: $(BUILD)/libnib.so venv
	$(PY) tests/e2e/test_models.py --lib $(BUILD)/libnib.so

golden: $(BUILD)/libnib.so venv
	sh tools/setup_llama_venv.sh $(LLAMA_VENV)
	sh tools/fetch_models.sh
	$(LLAMA_VENV)/bin/python tools/gen_golden_models.py
	$(PY) tests/e2e/test_models.py --lib $(BUILD)/libnib.so

clean:
	rm -rf $(BUILD)

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d)
