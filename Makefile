# nib: one command builds everything (`make`), one runs every CPU test (`make test`).
#
#   make            libnib.a, libnib.so (for the Python oracle tests) and the nib CLI
#   make test       build and run every test that needs no GPU
#   make run        (arrives with model support)
#
# The reference kernels must compute exactly what their definitions say, so
# floating-point contraction (FMA fusion) is off and -ffast-math is never used.

CC      ?= cc
BUILD   ?= build
OPT     ?= -O2
CFLAGS  := -std=c11 $(OPT) -g -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wvla -ffp-contract=off -fno-fast-math -fPIC \
           -D_DEFAULT_SOURCE -D_FILE_OFFSET_BITS=64 -Iinclude -Isrc $(EXTRA_CFLAGS)
LDLIBS  := -lm

LIB_SRC := $(sort $(wildcard src/core/*.c src/gguf/*.c src/quant/*.c))
CLI_SRC := $(sort $(wildcard src/cli/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)

TEST_C   := $(sort $(wildcard tests/test_*.c))
TEST_BIN := $(TEST_C:tests/%.c=$(BUILD)/tests/%)

.PHONY: all lib test test-c test-oracle clean venv run
all: $(BUILD)/libnib.a $(BUILD)/libnib.so $(BUILD)/nib

lib: $(BUILD)/libnib.a

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

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

clean:
	rm -rf $(BUILD)

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d)
