# Build-and-test pipeline for the PERF_SAMPLE_BUILD_ID_OFFSET series: the
# mainline series on Debian's Linux 7.3 (the repository's root: BASE,
# patches/ and the new files at their kernel paths; targets mainline-*)
# and its backport to Debian's Linux 6.12 (6.12/; the targets without a
# prefix).  `make demo` and `make check` are the two commands; README.md
# explains the rest.

REPO    := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD   ?= $(REPO)/build
BUILD   := $(abspath $(BUILD))
SRC     := $(BUILD)/src/linux
KOBJ    := $(BUILD)/obj/kernel
SOBJ    := $(BUILD)/obj/selftests
JOBS    ?= $(shell nproc)
# DEBUG=0 builds the guest kernel without the debug options (to measure
# what they cost); it gets its own object directory.
DEBUG   ?= 1
ifeq ($(DEBUG),0)
KOBJ    := $(BUILD)/obj/kernel-nodebug
FRAGS   := harness/config/guest.config harness/config/nodebug.config \
	harness/config/6.12.config
else
FRAGS   := harness/config/guest.config harness/config/debug.config \
	harness/config/6.12.config
endif
BZIMAGE := $(KOBJ)/arch/x86/boot/bzImage

export BUILD
# The line harness/tree.py and harness/export.py compose by default: the
# 6.12 backport; the mainline-* targets pass the repository's root.
export SERIES_DIR := $(REPO)/6.12
# ccache keys on paths relative to the build directory, so clones in other
# places share one cache (kept outside the repo, in ~/.cache/ccache).
export CCACHE_BASEDIR := $(BUILD)
# Looked up when a recipe runs, not when make reads this file: on a fresh
# machine harness/deps.sh installs ccache first (every target depends on
# it), and a later make must pass kbuild the same compiler command, or
# kbuild rebuilds everything.
CCACHE   = $(shell command -v ccache 2>/dev/null)
KCC      = $(if $(CCACHE),ccache gcc,gcc)

# PYTHON_WORD: with NO_LIBPYTHON perf leaves it empty, and `perf test`'s
# "Setup struct perf_event_attr" then runs tests/attr.py as a program,
# which Debian's source tarball ships without its execute bit
PERF_FLAGS := NO_LIBPYTHON=1 NO_LIBPERL=1 NO_GTK2=1 NO_SLANG=1 \
	NO_LIBBPF=1 BUILD_BPF_SKEL=0 NO_JVMTI=1 NO_LIBBABELTRACE=1 \
	NO_LIBPFM4=1 NO_CAPSTONE=1 NO_LIBLLVM=1 NO_SDT=1 PYTHON_WORD=python3

.PHONY: all deps tree refresh series-check format-patch series-bisect kernel \
	selftests workloads perf-base build check backport-check demo bench bench-tools \
	stress perf-test-survey clean distclean

all: build

# Every target depends on the packages; the stamp is redone when the
# package list changes.
$(BUILD)/.deps: harness/deps.sh
	@sh harness/deps.sh
	@mkdir -p $(BUILD) && touch $@

deps:
	@sh harness/deps.sh
	@mkdir -p $(BUILD) && touch $(BUILD)/.deps

tree: $(BUILD)/.deps
	@python3 harness/tree.py tree

refresh: $(BUILD)/.deps
	@python3 harness/tree.py refresh

series-check: build
	@python3 harness/tree.py check

# The series as mails for `git send-email`, in build/export/: a cover
# letter (patches/cover-letter) and one mail per patch of patches/series,
# each with the new files listed under it; then `git am` of the mails onto
# a pristine base must give the tree `make tree` composes.
format-patch: tree
	@python3 harness/export.py format-patch
	@python3 harness/export.py am-check

# Build the kernel, perf and the perf_events selftests at every patch
# boundary of the exported series (hours from cold; BISECT_FROM=N starts
# at patch N, BISECT_PARTS=kernel,perf,selftests chooses what is built).
series-bisect: format-patch
	@PERF_FLAGS="$(PERF_FLAGS)" python3 harness/export.py bisect

$(KOBJ)/.config: $(FRAGS) harness/kconfig.sh | tree
	@sh harness/kconfig.sh $(SRC) $(KOBJ) $(addprefix $(REPO)/,$(FRAGS))

kernel: tree $(KOBJ)/.config
	@echo "kernel: building $(BZIMAGE:$(REPO)/%=%)"
	@$(MAKE) -s -C $(SRC) O=$(KOBJ) CC="$(KCC)" -j$(JOBS) bzImage
	@$(MAKE) -s -C $(SRC) O=$(KOBJ) headers

# Selftests compile against the UAPI headers of the kernel we built.
selftests: kernel
	@mkdir -p $(SOBJ)/perf_events
	@$(MAKE) -s -C $(SRC)/tools/testing/selftests/perf_events \
		OUTPUT=$(SOBJ)/perf_events \
		KHDR_INCLUDES="-isystem $(KOBJ)/usr/include" -j$(JOBS)

workloads: $(BUILD)/.deps
	@$(MAKE) -s -C harness/workloads OUT=$(BUILD)/obj/workloads

# perf 6.12 of the base, without the series: an older perf that must read
# what perf inject --buildid-offset-mmap2 writes (the 6.12 guest's test)
PBOBJ   := $(BUILD)/obj/perf-base
BASESRC := $(BUILD)/src/base
$(BASESRC)/.stamp: 6.12/BASE | tree
	@rm -rf $(BASESRC) && mkdir -p $(BASESRC)
	@git -C $(SRC) archive base tools scripts include arch/x86 arch/arm64/tools Makefile | \
		tar -x -C $(BASESRC)
	@touch $@
perf-base: tree $(BASESRC)/.stamp
	@echo "perf-base: building $(PBOBJ:$(REPO)/%=%)/perf"
	@mkdir -p $(PBOBJ)
	@$(MAKE) -s -C $(BASESRC)/tools/perf O=$(PBOBJ) CC="$(KCC)" -j$(JOBS) \
		$(PERF_FLAGS) NO_RUST=1 >$(PBOBJ)/build.log 2>&1 || \
		{ tail -n 40 $(PBOBJ)/build.log; exit 1; }

# The 6.12 backport builds its kernel, selftests and base perf; its guest
# runs the mainline line's perf (a perf runs on kernels older than its tree)
build: kernel selftests perf-base mainline-build

# The mainline series on Linux 7.3, composed and built in build/mainline:
# the debug kernel, its perf_events selftests, perf 7.3 with the series,
# and perf 7.3 of the base without it (the tool whose files must stay
# readable while a --buildid-offset session samples the same task).
ML_BUILD := $(BUILD)/mainline
ML_SRC   := $(ML_BUILD)/src/linux
ML_KOBJ  := $(ML_BUILD)/obj/kernel$(if $(filter 0,$(DEBUG)),-nodebug)
ML_SOBJ  := $(ML_BUILD)/obj/selftests
ML_POBJ  := $(ML_BUILD)/obj/perf
ML_AOBJ  := $(ML_BUILD)/obj/perf-asan
ML_PBOBJ := $(ML_BUILD)/obj/perf-base
ML_BASESRC := $(ML_BUILD)/src/base
ML_FRAGS := harness/config/guest.config \
	$(if $(filter 0,$(DEBUG)),harness/config/nodebug.config,harness/config/debug.config) \
	harness/config/mainline.config
ML_ENV   := SERIES_DIR=$(REPO) BUILD=$(ML_BUILD)
# perf 7.3 builds a Rust test workload when rustc is on the PATH; Debian
# 12's rustc and its linker do not agree (`LLVM ERROR: Invalid
# encoding`), and nothing of the series is in Rust: left out on purpose
ML_PERF_FLAGS := $(PERF_FLAGS) NO_RUST=1

.PHONY: mainline-format-patch mainline-series-bisect
# The mainline series as mails in build/mainline/export/, and a build of
# every boundary of it (hours: not part of make check, whose host checks
# export the series and git am it)
mainline-format-patch: mainline-tree
	@$(ML_ENV) python3 harness/export.py format-patch
mainline-series-bisect: mainline-format-patch
	@$(ML_ENV) PERF_FLAGS="$(ML_PERF_FLAGS)" python3 harness/export.py bisect

.PHONY: mainline-tree mainline-refresh mainline-kernel mainline-selftests \
	mainline-perf mainline-perf-asan mainline-perf-base mainline-tools mainline-build mainline-check

mainline-tree: $(BUILD)/.deps
	@$(ML_ENV) python3 harness/tree.py tree

mainline-refresh: $(BUILD)/.deps
	@$(ML_ENV) python3 harness/tree.py refresh

$(ML_KOBJ)/.config: $(ML_FRAGS) harness/kconfig.sh | mainline-tree
	@sh harness/kconfig.sh $(ML_SRC) $(ML_KOBJ) $(addprefix $(REPO)/,$(ML_FRAGS))

mainline-kernel: mainline-tree $(ML_KOBJ)/.config
	@echo "mainline-kernel: building $(ML_KOBJ:$(REPO)/%=%)/arch/x86/boot/bzImage"
	@$(MAKE) -s -C $(ML_SRC) O=$(ML_KOBJ) CC="$(KCC)" -j$(JOBS) bzImage
	@$(MAKE) -s -C $(ML_SRC) O=$(ML_KOBJ) headers

mainline-selftests: mainline-kernel
	@mkdir -p $(ML_SOBJ)/perf_events
	@$(MAKE) -s -C $(ML_SRC)/tools/testing/selftests/perf_events \
		OUTPUT=$(ML_SOBJ)/perf_events \
		KHDR_INCLUDES="-isystem $(ML_KOBJ)/usr/include" -j$(JOBS)

# With python scripting, for upstream's tests of perf script and of its
# task-analyzer (the readers of the samples the series changes)
mainline-perf: mainline-tree
	@echo "mainline-perf: building $(ML_POBJ:$(REPO)/%=%)/perf"
	@mkdir -p $(ML_POBJ)
	@$(MAKE) -s -C $(ML_SRC)/tools/perf O=$(ML_POBJ) CC="$(KCC)" -j$(JOBS) \
		$(filter-out NO_LIBPYTHON=1,$(ML_PERF_FLAGS)) >$(ML_POBJ)/build.log 2>&1 || \
		{ tail -n 40 $(ML_POBJ)/build.log; exit 1; }
	@# libperf's example, against that perf's libperf and libapi; the
	@# guest gives its directory to the test as LIBPERF_EXAMPLES
	@mkdir -p $(ML_POBJ)/libperf-examples
	@$(KCC) -Wall -Wextra -Werror -O2 -I $(ML_SRC)/tools/lib/perf/include \
		-I $(ML_SRC)/tools/include -I $(ML_SRC)/tools/include/uapi \
		-o $(ML_POBJ)/libperf-examples/build_id_offset \
		$(ML_SRC)/tools/lib/perf/Documentation/examples/build_id_offset.c \
		$(ML_POBJ)/libperf/libperf.a $(ML_POBJ)/libapi/libapi.a

# The same perf with AddressSanitizer and UndefinedBehaviorSanitizer: the
# reader of the perf.data fuzzer's cases (harness/perf_data_fuzz.py).
# WERROR=0: with the sanitizers GCC 12 warns of null snprintf() targets
# that cannot be (util/build-id.c)
mainline-perf-asan: mainline-tree
	@echo "mainline-perf-asan: building $(ML_AOBJ:$(REPO)/%=%)/perf"
	@mkdir -p $(ML_AOBJ)
	@$(MAKE) -s -C $(ML_SRC)/tools/perf O=$(ML_AOBJ) CC="$(KCC)" -j$(JOBS) \
		$(ML_PERF_FLAGS) WERROR=0 EXTRA_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer" \
		>$(ML_AOBJ)/build.log 2>&1 || { tail -n 40 $(ML_AOBJ)/build.log; exit 1; }

$(ML_BASESRC)/.stamp: BASE | mainline-tree
	@rm -rf $(ML_BASESRC) && mkdir -p $(ML_BASESRC)
	@git -C $(ML_SRC) archive base tools scripts include arch/x86 arch/arm64/tools Makefile | \
		tar -x -C $(ML_BASESRC)
	@touch $@
mainline-perf-base: mainline-tree $(ML_BASESRC)/.stamp
	@echo "mainline-perf-base: building $(ML_PBOBJ:$(REPO)/%=%)/perf"
	@mkdir -p $(ML_PBOBJ)
	@$(MAKE) -s -C $(ML_BASESRC)/tools/perf O=$(ML_PBOBJ) CC="$(KCC)" -j$(JOBS) \
		$(ML_PERF_FLAGS) >$(ML_PBOBJ)/build.log 2>&1 || \
		{ tail -n 40 $(ML_PBOBJ)/build.log; exit 1; }

# A program of the mainline guest's tests, against its kernel's headers:
# a system-wide build-ID offset session (harness/workloads/bido_sampler.c)
ML_TOBJ  := $(ML_BUILD)/obj/tools
mainline-tools: mainline-kernel
	@mkdir -p $(ML_TOBJ)
	@$(KCC) -O2 -Wall -isystem $(ML_KOBJ)/usr/include -o $(ML_TOBJ)/bido_sampler \
		harness/workloads/bido_sampler.c

mainline-build: mainline-kernel mainline-selftests mainline-perf mainline-perf-asan \
	mainline-perf-base mainline-tools workloads

# Host checks and one guest of the mainline series' tests
# (harness/tests/mainline/*.list).
mainline-check: mainline-build
	@$(ML_ENV) TEST_LISTS=harness/tests/mainline python3 harness/check.py \
		--fuzz-perf $(ML_AOBJ)/perf $(if $(T),$(foreach t,$(T),--only $(t)))

# The 6.12 backport's host checks (its series, the export, checkpatch,
# the harness's own tests) and one short guest: KUnit, the perf_events
# selftests and perf 7.3's test of --buildid-offset on the 6.12 kernel
# (harness/tests/6.12/*.list).  T=NAME runs one test of it.
backport-check: build
	@TEST_LISTS=harness/tests/6.12 \
		GUEST_APPEND="harness_perf_build=$(ML_BUILD) $(GUEST_APPEND)" \
		python3 harness/check.py --harness-selftest \
		$(if $(T),$(foreach t,$(T),--only $(t)))

# Both lines: the mainline series' checks and guest, then the 6.12
# backport's; each prints its closing line, and any failure fails the
# target.
check: build
	@rc=0; $(MAKE) -s mainline-check || rc=1; \
	$(MAKE) -s backport-check || rc=1; \
	exit $$rc

# The demo and the benchmarks run on the mainline kernel without the debug
# options (the kernel users run; the debug one is `make check`'s), with
# perf 7.3 and the series.
ML_NODEBUG := $(ML_BUILD)/obj/kernel-nodebug/arch/x86/boot/bzImage
ML_QEMU    := BUILD=$(ML_BUILD) SERIES_DIR=$(REPO) GUEST_KERNEL=$(ML_NODEBUG)
ML_WL      := harness_workloads=$(BUILD)/obj/workloads

demo: mainline-build workloads
	@$(MAKE) -s mainline-kernel DEBUG=0
	@$(ML_QEMU) GUEST_APPEND="$(ML_WL) $(GUEST_APPEND)" \
		python3 harness/qemu.py --run-dir $(ML_BUILD)/guest/demo \
		harness/demo.list
	@sed -n '/===== BEGIN demo/,/===== END demo/p' \
		$(ML_BUILD)/guest/demo/output.log | tr -d '\r'

# Benchmarks: tables in build/mainline/bench/results.md.  They are not
# tests: nothing here asserts a time.  (Their sections of perf top, perf
# daemon and pprof need the perf side of those, which the mainline series
# does not have yet.)
BENCH_OUT := $(ML_BUILD)/bench

bench-tools: mainline-kernel
	@mkdir -p $(ML_BUILD)/obj/bench
	@$(KCC) -O2 -Wall -fno-omit-frame-pointer -isystem $(ML_KOBJ)/usr/include \
		-o $(ML_BUILD)/obj/bench/build_id_offset_cost harness/bench/build_id_offset_cost.c -ldl
	@$(KCC) -O2 -Wall -fno-omit-frame-pointer -fPIC -shared -Wl,--build-id \
		-o $(ML_BUILD)/obj/bench/libbuild_id_offset_cost.so harness/bench/build_id_offset_cost_lib.c
	@$(KCC) -O2 -Wall -isystem $(ML_KOBJ)/usr/include \
		-o $(ML_BUILD)/obj/bench/build_id_offset_memory harness/bench/build_id_offset_memory.c -lpthread

# Two boots: the cost sections in the instruction-count guest (one vCPU,
# every guest clock counts retired instructions, the same from run to
# run), the rest (two vCPUs) in the usual TCG guest.  BENCH_ICOUNT and
# BENCH_TCG name the sections of each; an empty one is not booted.
BENCH_ICOUNT ?= startup,cost,report
BENCH_TCG    ?= churn,memory
BENCH_RUNS   := $(if $(BENCH_ICOUNT),bench-icount) $(if $(BENCH_TCG),bench)

bench: mainline-build workloads bench-tools
	@$(MAKE) -s mainline-kernel DEBUG=0
	@mkdir -p $(BENCH_OUT)
	@if [ -n "$(BENCH_ICOUNT)" ]; then \
		$(ML_QEMU) ACCEL=icount \
		GUEST_APPEND="BENCH_ONLY=$(BENCH_ICOUNT) BENCH_ICOUNT=1 $(ML_WL) $(GUEST_APPEND)" \
		python3 harness/qemu.py --run-dir $(ML_BUILD)/guest/bench-icount \
			harness/bench.list; fi
	@if [ -n "$(BENCH_TCG)" ]; then \
		$(ML_QEMU) GUEST_APPEND="BENCH_ONLY=$(BENCH_TCG) $(ML_WL) $(GUEST_APPEND)" \
		python3 harness/qemu.py --run-dir $(ML_BUILD)/guest/bench \
			harness/bench.list; fi
	@for r in $(BENCH_RUNS); do \
		sed -n '/===== BEGIN bench/,/===== END bench/p' \
			$(ML_BUILD)/guest/$$r/output.log | tr -d '\r' | \
			grep -v '^===== '; \
	done >$(BENCH_OUT)/results.md
	@for r in $(BENCH_RUNS); do tr -d '\r' <$(ML_BUILD)/guest/$$r/output.log; \
	done >$(BENCH_OUT)/output.log
	@grep '^DATA startup' $(BENCH_OUT)/output.log \
		>$(BENCH_OUT)/startup.dat || true
	@if [ -s $(BENCH_OUT)/startup.dat ]; then \
		gnuplot -c harness/bench/startup.gp $(BENCH_OUT)/startup.dat \
			$(BENCH_OUT)/startup.png; fi
	@grep '^DATA overhead' $(BENCH_OUT)/output.log \
		>$(BENCH_OUT)/overhead.dat || true
	@if [ -s $(BENCH_OUT)/overhead.dat ]; then \
		gnuplot -c harness/bench/overhead.gp $(BENCH_OUT)/overhead.dat \
			$(BENCH_OUT)/overhead.png; fi
	@cat $(BENCH_OUT)/results.md
	@echo "bench: $(BENCH_OUT:$(REPO)/%=%)/{results.md,startup.png,overhead.png}"

# Robustness runs in the mainline debug guest, DURATION seconds per part
# (default 300), with kmemleak on: harness/guest/stress.sh says what each
# part does.  Any kernel splat fails the run, as in `make check`.
DURATION ?= 300
STRESS_PARTS := kmemleak-clear perf trinity kmemleak
stress: mainline-build
	@rm -f $(ML_BUILD)/stress.list
	@for p in $(STRESS_PARTS); do \
		printf 'stress/%s\t%s\texec\tbash @REPO@/harness/guest/stress.sh %s %s\n' \
			$$p $$(($(DURATION) + 600)) $$p $(DURATION) >>$(ML_BUILD)/stress.list; \
	done
	@$(ML_ENV) GUEST_APPEND="kmemleak=on $(GUEST_APPEND)" \
		python3 harness/qemu.py --run-dir $(ML_BUILD)/guest/stress $(ML_BUILD)/stress.list

# Run every `perf test` entry of perf 7.3 with the series once in the
# mainline guest and propose a list (see harness/perf_test_list.py);
# takes long under TCG.
perf-test-survey: mainline-build
	@printf 'perf-test-survey\t7000\texec\tbash @REPO@/harness/guest/perf-test-survey.sh 60\n' \
		>$(ML_BUILD)/survey.list
	@$(ML_ENV) python3 harness/qemu.py --run-dir $(ML_BUILD)/guest/survey \
		$(ML_BUILD)/survey.list
	@python3 harness/perf_test_list.py $(ML_BUILD)/guest/survey/output.log \
		>$(ML_BUILD)/20-perf-test.list
	@echo "proposed list: $(ML_BUILD:$(REPO)/%=%)/20-perf-test.list"

clean:
	rm -rf $(BUILD)/obj $(BUILD)/guest

distclean:
	rm -rf $(BUILD)
