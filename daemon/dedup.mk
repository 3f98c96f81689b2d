# SPDX-License-Identifier: GPL-2.0
#
# dmaplaned's deduplication engine (daemon/dedup.[ch]): included by the
# top-level Makefile.  Needs libxxhash-dev and libb2-dev (scripts/deps.sh).
#
#   make dedup          the object, the test (ASan+UBSan), the benchmark tools
#   make dedup-check    run the test, then the unsanitized build under valgrind
#   make dedup-bench    generate the data (BENCHDIR, default /tmp/dedup-bench)
#                       and run daemon/bench/run.sh against rsync
#
# The test is built as $(BUILD)/tests/host/dedup_test, so make tests builds
# it and tests/run-check.sh runs it with the other host tests (TAP).

DEDUP_LIBS   := $(shell pkg-config --libs libxxhash libb2 2>/dev/null || echo -lxxhash -lb2)
DEDUP_CFLAGS := -std=gnu11 $(CFLAGS) $(WARN) -D_GNU_SOURCE
# The harness is not -Wextra clean: the test builds as the other host
# tests do (-Wall -Werror); dedup.o gets the full warnings and -Werror.
DEDUP_TCFLAGS := -std=gnu11 $(CFLAGS) -Wall -Wshadow -Werror -D_GNU_SOURCE
DEDUP_SAN    := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
# The kselftest harness: KSFT_DIR as for the other host tests, else the
# cached test kernel's, so make dedup works on its own.
DEDUP_KSFT   := $(or $(KSFT_DIR),$(firstword $(filter-out %.tmp/linux/tools/testing/selftests,\
		$(wildcard /var/cache/dmaplane/kernel-*/linux/tools/testing/selftests))))

DEDUP_OBJ    := $(BUILD)/daemon/dedup.o
DEDUP_TEST   := $(BUILD)/tests/host/dedup_test
DEDUP_TEST_VG := $(BUILD)/daemon/tests/dedup_test-valgrind
DEDUP_BENCH  := $(BUILD)/daemon/bench/dedup-bench $(BUILD)/daemon/bench/dedup-gen
BENCHDIR     ?= /tmp/dedup-bench

.PHONY: dedup dedup-check dedup-bench
dedup: $(DEDUP_OBJ) $(DEDUP_TEST) $(DEDUP_TEST_VG) $(DEDUP_BENCH)
tests: $(DEDUP_TEST)

$(DEDUP_OBJ): daemon/dedup.c daemon/dedup.h
	@mkdir -p $(dir $@)
	$(CC) $(DEDUP_CFLAGS) -Werror -fPIC -c -o $@ $<

define dedup_test_rule
	@test -n "$(DEDUP_KSFT)" || { echo "KSFT_DIR= not set (see tests/run-check.sh)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(CC) $(DEDUP_TCFLAGS) -I$(DEDUP_KSFT) $(1) -o $@ \
		daemon/tests/dedup_test.c daemon/dedup.c $(DEDUP_LIBS)
endef

$(DEDUP_TEST): daemon/tests/dedup_test.c daemon/dedup.c daemon/dedup.h
	$(call dedup_test_rule,$(DEDUP_SAN))
$(DEDUP_TEST_VG): daemon/tests/dedup_test.c daemon/dedup.c daemon/dedup.h
	$(call dedup_test_rule,)

$(BUILD)/daemon/bench/dedup-bench: daemon/bench/dedup_bench.c $(DEDUP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(DEDUP_CFLAGS) -Idaemon -o $@ $< $(DEDUP_OBJ) $(DEDUP_LIBS)
$(BUILD)/daemon/bench/dedup-gen: daemon/bench/dedup_gen.c
	@mkdir -p $(dir $@)
	$(CC) $(DEDUP_CFLAGS) -o $@ $< -lm

dedup-check: $(DEDUP_TEST) $(DEDUP_TEST_VG)
	$(DEDUP_TEST)
	valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
		$(DEDUP_TEST_VG)

dedup-bench: $(DEDUP_BENCH)
	daemon/bench/run.sh $(BUILD)/daemon/bench $(BENCHDIR)

# dmaplaned calls the engine (deduplicated moves, daemon/move.c): link
# dedup.c and libb2 into it.  The daemon's recipe expands these when it
# runs, after this file is read.
DAEMON_SRCS  += daemon/dedup.c
DAEMON_PKGS  += libb2
$(BUILD)/dmaplaned $(BUILD)/dmaplaned-asan: daemon/dedup.c daemon/dedup.h
