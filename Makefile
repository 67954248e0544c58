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
POBJ    := $(BUILD)/obj/perf
SOBJ    := $(BUILD)/obj/selftests
JOBS    ?= $(shell nproc)
# DEBUG=0 builds the guest kernel without the debug options (to measure
# what they cost); it gets its own object directory.
DEBUG   ?= 1
ifeq ($(DEBUG),0)
KOBJ    := $(BUILD)/obj/kernel-nodebug
FRAGS   := harness/config/guest.config harness/config/6.12.config
else
FRAGS   := harness/config/guest.config harness/config/debug.config \
	harness/config/6.12.config
endif
BZIMAGE := $(KOBJ)/arch/x86/boot/bzImage
PERF    := $(POBJ)/perf

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

.PHONY: all deps tree refresh series-check format-patch series-bisect kernel perf perf-base perf-python libperf-examples \
	selftests workloads pprof \
	build check demo bench bench-tools stress perf-test-survey clean \
	distclean

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

perf: tree
	@echo "perf: building $(PERF:$(REPO)/%=%)"
	@mkdir -p $(POBJ)
	@$(MAKE) -s -C $(SRC)/tools/perf O=$(POBJ) CC="$(KCC)" -j$(JOBS) \
		$(PERF_FLAGS) >$(POBJ)/build.log 2>&1 || \
		{ tail -n 40 $(POBJ)/build.log; exit 1; }

# perf of the Debian base without the series (the tools/ of the tree's
# 'base' commit): the reader that files made by `perf inject
# --buildid-offset-mmap2` are for; a perf test compares its reports.
BASESRC := $(BUILD)/src/base
PBOBJ   := $(BUILD)/obj/perf-base
$(BASESRC)/.stamp: 6.12/BASE | tree
	@rm -rf $(BASESRC) && mkdir -p $(BASESRC)
	@git -C $(SRC) archive base tools scripts include arch/x86 arch/arm64/tools Makefile | \
		tar -x -C $(BASESRC)
	@touch $@
perf-base: tree $(BASESRC)/.stamp
	@echo "perf-base: building $(PBOBJ:$(REPO)/%=%)/perf"
	@mkdir -p $(PBOBJ)
	@$(MAKE) -s -C $(BASESRC)/tools/perf O=$(PBOBJ) CC="$(KCC)" -j$(JOBS) \
		$(PERF_FLAGS) >$(PBOBJ)/build.log 2>&1 || \
		{ tail -n 40 $(PBOBJ)/build.log; exit 1; }
# perf's python binding (`import perf`), which profiling daemons use: the
# extension alone, built in a tree of its own with libpython (the perf
# above goes without, as the perf test survey of the base did) for
# Debian's python3, the one the guest runs.  The guest exports its
# directory as PERF_PYTHONPATH.
PYOBJ   := $(BUILD)/obj/perf-python
PYEXT   := $(PYOBJ)/python/perf$(shell /usr/bin/python3 -c \
	'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
perf-python: tree
	@echo "perf-python: building $(PYEXT:$(REPO)/%=%)"
	@mkdir -p $(PYOBJ)
	@$(MAKE) -s -C $(SRC)/tools/perf O=$(PYOBJ) CC="$(KCC)" -j$(JOBS) \
		$(filter-out NO_LIBPYTHON=1 PYTHON_WORD=python3,$(PERF_FLAGS)) \
		PYTHON=/usr/bin/python3 $(PYEXT) >$(PYOBJ)/build.log 2>&1 || \
		{ tail -n 40 $(PYOBJ)/build.log; exit 1; }

# libperf's examples, against the libperf and libapi of the perf above;
# the guest exports their directory as LIBPERF_EXAMPLES
LEXOBJ  := $(BUILD)/obj/libperf-examples
LEXSRC  := $(SRC)/tools/lib/perf/Documentation/examples
libperf-examples: perf
	@echo "libperf-examples: building $(LEXOBJ:$(REPO)/%=%)/build_id_offset"
	@mkdir -p $(LEXOBJ)
	@$(KCC) -Wall -Wextra -Werror -O2 -I $(SRC)/tools/lib/perf/include \
		-I $(SRC)/tools/include -I $(SRC)/tools/include/uapi \
		-o $(LEXOBJ)/build_id_offset $(LEXSRC)/build_id_offset.c \
		$(POBJ)/libperf/libperf.a $(POBJ)/libapi/libapi.a

# Selftests compile against the UAPI headers of the kernel we built.
selftests: kernel
	@mkdir -p $(SOBJ)/perf_events
	@$(MAKE) -s -C $(SRC)/tools/testing/selftests/perf_events \
		OUTPUT=$(SOBJ)/perf_events \
		KHDR_INCLUDES="-isystem $(KOBJ)/usr/include" -j$(JOBS)

workloads: $(BUILD)/.deps
	@$(MAKE) -s -C harness/workloads OUT=$(BUILD)/obj/workloads

# Google's standalone pprof, built offline (GOPATH mode) from the sources
# of Debian's golang-github-google-pprof-dev.  `go tool pprof` reads a
# profile just as well but opens no local file by build-ID (its object
# reader has none to compare); this one does, so the test of `perf data
# convert --to-pprof` symbolises with it from perf's build-ID cache.  The
# guest exports it as PPROF.
PPROFBIN := $(BUILD)/obj/pprof/pprof
pprof: $(BUILD)/.deps
	@echo "pprof: building $(PPROFBIN:$(REPO)/%=%)"
	@mkdir -p $(dir $(PPROFBIN))
	@GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS= \
		GOCACHE=$(BUILD)/obj/pprof/cache go build -o $(PPROFBIN) \
		github.com/google/pprof

build: kernel perf perf-base perf-python libperf-examples selftests workloads pprof \
	mainline-build

# The mainline series on Linux 7.3, composed and built in build/mainline:
# the debug kernel, its perf_events selftests, perf 7.3 with the series,
# and perf 7.3 of the base without it (the tool whose files must stay
# readable while a --buildid-offset session samples the same task).
ML_BUILD := $(BUILD)/mainline
ML_SRC   := $(ML_BUILD)/src/linux
ML_KOBJ  := $(ML_BUILD)/obj/kernel
ML_SOBJ  := $(ML_BUILD)/obj/selftests
ML_POBJ  := $(ML_BUILD)/obj/perf
ML_AOBJ  := $(ML_BUILD)/obj/perf-asan
ML_PBOBJ := $(ML_BUILD)/obj/perf-base
ML_BASESRC := $(ML_BUILD)/src/base
ML_FRAGS := harness/config/guest.config harness/config/debug.config \
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

mainline-perf: mainline-tree
	@echo "mainline-perf: building $(ML_POBJ:$(REPO)/%=%)/perf"
	@mkdir -p $(ML_POBJ)
	@$(MAKE) -s -C $(ML_SRC)/tools/perf O=$(ML_POBJ) CC="$(KCC)" -j$(JOBS) \
		$(ML_PERF_FLAGS) >$(ML_POBJ)/build.log 2>&1 || \
		{ tail -n 40 $(ML_POBJ)/build.log; exit 1; }

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
		--one-guest --fuzz-perf $(ML_AOBJ)/perf $(if $(T),$(foreach t,$(T),--only $(t)))

# Both lines: the 6.12 backport's tests (two guests), then the mainline
# series' (one guest); each prints its closing line, and any failure
# fails the target.  T=NAME runs one test of the 6.12 line (or several:
# T="a b") instead of the whole list; REPEAT=N with it, N times.
check: build
	@rc=0; python3 harness/check.py $(if $(T),$(foreach t,$(T),--only $(t))) \
		$(if $(REPEAT),--repeat $(REPEAT)) || rc=1; \
	$(if $(T),,$(ML_ENV) TEST_LISTS=harness/tests/mainline \
		python3 harness/check.py --one-guest --fuzz-perf $(ML_AOBJ)/perf || rc=1;) \
	exit $$rc

demo: build
	@python3 harness/qemu.py --run-dir $(BUILD)/guest/demo \
		harness/demo.list
	@sed -n '/===== BEGIN demo/,/===== END demo/p' \
		$(BUILD)/guest/demo/output.log | tr -d '\r'

# Benchmarks, on the guest kernel without the debug options (the debug
# one is `make check`'s): tables in $(BUILD)/bench/results.md.  They are
# not tests: nothing here asserts a time.
BENCH_KERNEL := $(BUILD)/obj/kernel-nodebug/arch/x86/boot/bzImage

bench-tools: kernel
	@mkdir -p $(BUILD)/obj/bench
	@$(KCC) -O2 -Wall -fno-omit-frame-pointer -isystem $(KOBJ)/usr/include \
		-o $(BUILD)/obj/bench/build_id_offset_cost harness/bench/build_id_offset_cost.c -ldl
	@$(KCC) -O2 -Wall -isystem $(KOBJ)/usr/include \
		-o $(BUILD)/obj/bench/build_id_offset_memory harness/bench/build_id_offset_memory.c -lpthread

# Two boots: the cost sections in the instruction-count guest (one vCPU,
# every guest clock counts retired instructions, the same from run to
# run), the rest (two vCPUs: attribution under churn, perf top under
# load) in the usual TCG guest.  BENCH_ICOUNT and BENCH_TCG name the
# sections of each; an empty one is not booted.
BENCH_ICOUNT ?= startup,cost
BENCH_TCG    ?= churn,topload,daemon,memory,pprof
BENCH_RUNS   := $(if $(BENCH_ICOUNT),bench-icount) $(if $(BENCH_TCG),bench)

bench: build bench-tools
	@$(MAKE) -s kernel DEBUG=0
	@mkdir -p $(BUILD)/bench
	@if [ -n "$(BENCH_ICOUNT)" ]; then \
		ACCEL=icount GUEST_KERNEL=$(BENCH_KERNEL) \
		GUEST_APPEND="BENCH_ONLY=$(BENCH_ICOUNT) BENCH_ICOUNT=1 $(GUEST_APPEND)" \
		python3 harness/qemu.py --run-dir $(BUILD)/guest/bench-icount \
			harness/bench.list; fi
	@if [ -n "$(BENCH_TCG)" ]; then \
		GUEST_KERNEL=$(BENCH_KERNEL) \
		GUEST_APPEND="BENCH_ONLY=$(BENCH_TCG) $(GUEST_APPEND)" \
		python3 harness/qemu.py --run-dir $(BUILD)/guest/bench \
			harness/bench.list; fi
	@for r in $(BENCH_RUNS); do \
		sed -n '/===== BEGIN bench/,/===== END bench/p' \
			$(BUILD)/guest/$$r/output.log | tr -d '\r' | \
			grep -v '^===== '; \
	done >$(BUILD)/bench/results.md
	@for r in $(BENCH_RUNS); do tr -d '\r' <$(BUILD)/guest/$$r/output.log; \
	done >$(BUILD)/bench/output.log
	@grep '^DATA startup' $(BUILD)/bench/output.log \
		>$(BUILD)/bench/startup.dat || true
	@if [ -s $(BUILD)/bench/startup.dat ]; then \
		gnuplot -c harness/bench/startup.gp $(BUILD)/bench/startup.dat \
			$(BUILD)/bench/startup.png; fi
	@grep '^DATA overhead' $(BUILD)/bench/output.log \
		>$(BUILD)/bench/overhead.dat || true
	@if [ -s $(BUILD)/bench/overhead.dat ]; then \
		gnuplot -c harness/bench/overhead.gp $(BUILD)/bench/overhead.dat \
			$(BUILD)/bench/overhead.png; fi
	@cat $(BUILD)/bench/results.md
	@echo "bench: $(BUILD:$(REPO)/%=%)/bench/{results.md,startup.png,overhead.png}"

# Robustness runs in the debug guest, DURATION seconds per part (default
# 300), with kmemleak on: harness/guest/stress.sh says what each part does.
# Any kernel splat fails the run, as in `make check`.
DURATION ?= 300
STRESS_PARTS := kmemleak-clear perf fuzz trinity kmemleak
stress: build
	@rm -f $(BUILD)/stress.list
	@for p in $(STRESS_PARTS); do \
		printf 'stress/%s\t%s\texec\tbash @REPO@/harness/guest/stress.sh %s %s\n' \
			$$p $$(($(DURATION) + 600)) $$p $(DURATION) >>$(BUILD)/stress.list; \
	done
	@GUEST_APPEND="kmemleak=on $(GUEST_APPEND)" python3 harness/qemu.py \
		--run-dir $(BUILD)/guest/stress $(BUILD)/stress.list

# Run every `perf test` entry once in the guest and propose the list that
# `make check` runs (see harness/perf_test_list.py); takes long under TCG.
perf-test-survey: build
	@printf 'perf-test-survey\t7000\texec\tbash @REPO@/harness/guest/perf-test-survey.sh 60\n' \
		>$(BUILD)/survey.list
	@python3 harness/qemu.py --run-dir $(BUILD)/guest/survey \
		$(BUILD)/survey.list
	@python3 harness/perf_test_list.py $(BUILD)/guest/survey/output.log \
		>$(BUILD)/20-perf-test.list
	@echo "proposed list: $(BUILD:$(REPO)/%=%)/20-perf-test.list"

clean:
	rm -rf $(BUILD)/obj $(BUILD)/guest

distclean:
	rm -rf $(BUILD)
