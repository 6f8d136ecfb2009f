# ---- hostile input: sanitizer builds, fuzzing, the malformed-file corpus ---------------
# Included by the Makefile (after LIB_SRC and CLI_SRC).
#
#   make test-fuzz     replay tests/corpus/regress, then each libFuzzer harness for
#                      FUZZ_SMOKE_SECONDS (8): part of `make test`
#   make test-hostile  the malformed-file corpus through `nib inspect` and `nib run`
#                      (normal build under ulimit -v, and ASan/UBSan build), bad
#                      options and prompts, a short generation under the sanitizers
#   make fuzz          each harness for FUZZ_SECONDS (60), keeping its corpus in
#                      $(SAN)/fuzz/corpus, then the long sanitizer runs and more
#                      of the C unit tests under the sanitizers
#
# The sanitizer build is clang (SAN_CC) with -fsanitize=address,undefined into
# $(BUILD)/san: the library with libFuzzer's coverage instrumentation, the CLI,
# and tests/fuzz/fuzz_*.c linked with -fsanitize=fuzzer. CUDA is left out
# (cuda_stub.c). Without clang or its runtime, both tests print one SKIP.
SAN_CC       ?= clang
SAN          := $(BUILD)/san
SAN_FLAGS    := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# -O0 compiles 3.5x faster than -O1 (17 s against 59 s for the library on 2
# cores); the kernels (cpu, quant, ops) get -O1, without which a real model's
# decode under ASan crawls. No -Werror: gcc's build enforces the warnings; a
# clang-only one must not fail a test.
SAN_OPT       = -O0
SAN_CFLAGS    = $(filter-out -O% -Werror -fPIC,$(CFLAGS)) $(SAN_OPT) $(SAN_FLAGS) -fsanitize=fuzzer-no-link
SAN_LDLIBS   := -lm -lpcre2-8 -pthread
SAN_LIB_OBJ  := $(LIB_SRC:%.c=$(SAN)/%.o)
SAN_CLI_OBJ  := $(CLI_SRC:%.c=$(SAN)/%.o)
FUZZ_NAMES   := gguf model tokenizer chat
FUZZ_BIN     := $(FUZZ_NAMES:%=$(SAN)/fuzz/fuzz_%)
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 8
# "yes" when SAN_CC builds a libFuzzer program with both sanitizers (asked only by
# the recipes below, so other targets never run clang)
HAVE_FUZZ     = $(shell printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return (int)n * 0 + (d == 0); }' | \
                $(SAN_CC) -x c - -fsanitize=fuzzer,address,undefined -o /dev/null >/dev/null 2>&1 && echo yes)
HAVE_SAN      = $(shell printf 'int main(void) { return 0; }' | \
                $(SAN_CC) -x c - -fsanitize=address,undefined -o /dev/null >/dev/null 2>&1 && echo yes)

# the sanitizer build runs from a recipe (only when clang is there): in parallel
# on every core unless the make above already is
SAN_JOBS      = $(if $(findstring jobserver,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 2))

.PHONY: test-fuzz test-hostile fuzz san-nib

$(SAN)/%.o: %.c | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(SAN_CC) $(SAN_CFLAGS) -MMD -MP -c $< -o $@
$(SAN)/src/cpu/%.o $(SAN)/src/quant/%.o $(SAN)/src/ops/%.o: SAN_OPT = -O1
$(SAN)/src/cpu/%_avx2.o $(SAN)/src/ops/%_avx2.o: SAN_CFLAGS += -mavx2 -mfma -mf16c
$(SAN)/src/cpu/%_avx512.o: SAN_CFLAGS += -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512vnni

$(SAN)/libnib.a: $(SAN_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(SAN)/nib: $(SAN_CLI_OBJ) $(SAN)/libnib.a
	$(SAN_CC) $(SAN_FLAGS) -o $@ $(SAN_CLI_OBJ) $(SAN)/libnib.a $(SAN_LDLIBS)
san-nib: $(SAN)/nib

# C unit tests under the sanitizers: the reader's and the formats' in `make test`
# (a second or two each); in `make fuzz` also the chat templates, ops and CPU
# kernels. test_tokenizer is left out: its speed checks assume an optimised build.
SAN_TESTS_SHORT := $(SAN)/tests/test_gguf $(SAN)/tests/test_formats $(SAN)/tests/test_split
SAN_TESTS_LONG  := $(SAN_TESTS_SHORT) $(SAN)/tests/test_chat_template $(SAN)/tests/test_ops $(SAN)/tests/test_cpu
$(SAN)/tests/test_split: tests/tiny_model.h
$(SAN)/tests/%: tests/%.c tests/test.h $(SAN)/libnib.a
	@mkdir -p $(dir $@)
	$(SAN_CC) $(SAN_CFLAGS) -Itests -o $@ $< $(SAN)/libnib.a $(SAN_LDLIBS)

$(SAN)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h tests/tiny_model.h $(SAN)/libnib.a
	@mkdir -p $(dir $@)
	$(SAN_CC) $(SAN_CFLAGS) -Itests -fsanitize=fuzzer -o $@ $< $(SAN)/libnib.a $(SAN_LDLIBS)

# the generator of the malformed corpus and the seeds (normal build)
$(BUILD)/tests/gen_hostile: tests/tiny_model.h

test-fuzz: $(BUILD)/tests/gen_hostile
	@if [ "$(HAVE_FUZZ)" = yes ]; then \
	    $(MAKE) --no-print-directory -s $(SAN_JOBS) $(FUZZ_BIN) >/dev/null && \
	    sh tests/fuzz/run_fuzz.sh $(SAN) $(FUZZ_SMOKE_SECONDS) $(BUILD)/tests/gen_hostile smoke; \
	else \
	    echo "skip  fuzzing: '$(SAN_CC) -fsanitize=fuzzer,address,undefined' does not build (apt-get install clang libclang-rt-dev)"; \
	    echo "0 passed, 0 failed, 1 skipped"; \
	fi

test-hostile: $(BUILD)/nib $(BUILD)/tests/gen_hostile
	@if [ "$(HAVE_SAN)" = yes ] && $(MAKE) --no-print-directory -s $(SAN_JOBS) $(SAN)/nib $(SAN_TESTS_SHORT) >/dev/null; \
	then san=$(SAN)/nib; else san=-; fi; \
	HOSTILE_SAN_TESTS="$(SAN_TESTS_SHORT)" sh tests/test_hostile.sh $(BUILD)/nib $$san $(BUILD)/tests/gen_hostile short

fuzz: $(BUILD)/nib $(BUILD)/tests/gen_hostile $(FUZZ_BIN) $(SAN)/nib $(SAN_TESTS_LONG)
	sh tests/fuzz/run_fuzz.sh $(SAN) $(FUZZ_SECONDS) $(BUILD)/tests/gen_hostile long
	HOSTILE_SAN_TESTS="$(SAN_TESTS_LONG)" sh tests/test_hostile.sh $(BUILD)/nib $(SAN)/nib $(BUILD)/tests/gen_hostile long

-include $(SAN_LIB_OBJ:.o=.d) $(SAN_CLI_OBJ:.o=.d)
