# axle: the two commands are `make demo` (install what is missing, build,
# run the built-in programs, benchmark them against hand-written C and plot
# the results into out/) and `make test` (build and run every test: once
# with GCC and warnings as errors, the Python binding's pytest suite, a
# subset with Clang, once under AddressSanitizer and
# UndefinedBehaviorSanitizer, valgrind, a fuzz run).
#
# Installing: `make build` (and plain cmake) never install anything.
# `make deps` installs what `make test` and `make demo` need (Debian or
# Ubuntu, apt-get; pip for the Python binding's packages where python3 is
# not Debian's).  `make test`, `make demo`, `make python` and `make docs`
# first check quickly what they need (no apt-get) and install only what is
# missing; with DEPS=no they only say what is missing and go on without it.

BUILD     ?= build
SANBUILD  ?= build-san
FUZZBUILD ?= build-fuzz
CLANGBUILD ?= build-clang
# DEPS=no: install nothing, only report what is missing
DEPS      ?= yes
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

# The recursive makes of CMake's build print every directory they enter:
# noise a user need not read.
MAKEFLAGS += --no-print-directory

# Configures build directory $(1) with CMake flags $(2): CMake's own lines
# go to $(1)/cmake.log (printed whole when it fails); the lines that say
# which optional parts were found, and what is left out without them, are
# shown when $(3) is "show".
define configure
	@mkdir -p $(1)
	@cmake -S . -B $(1) $(2) $(CMAKE_ARGS) >$(1)/cmake.log 2>&1 || { cat $(1)/cmake.log; exit 1; }
	@if [ "$(3)" = show ]; then sed -n 's/^-- axle: /axle: /p' $(1)/cmake.log; fi
endef

.PHONY: all deps test-deps demo-deps docs-deps python-deps build build-cli check-layers gpu-check test test-fast test-clang test-python \
        python test-san test-san-python test-valgrind test-fuzz test-deep test-wip demo docs clean

# The Python binding (python/): `make python` builds it into $(PYBUILD)
# (the extension and the package; libaxle by the repository's CMake as a
# position-independent static library in $(PYLIB)), and `make test-python`
# runs its pytest suite against that build (PYTHONPATH=$(PYBUILD)).
PYTHON  ?= python3
PYBUILD ?= $(BUILD)/python
PYLIB   ?= $(BUILD)/pylib
PYTEST_ARGS ?= -q

# The bounded fuzz run of `make test`: seconds per target, the three
# (tests/fuzz: the API, the Matrix Market reader and the loader of saved
# programs) at once, from the checked-in corpus.  `make test-deep` fuzzes
# longer.
FUZZ_TIME ?= 90
# make test fuzzes from a fixed seed, so that a run here and in CI take
# the same path (as far as the time allows); make test-deep from a random
# one (libFuzzer's -seed=0).
FUZZ_SEED ?= 1
FUZZ_ARGS ?= -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 -seed=$(FUZZ_SEED)
# `make test-deep`: the random differential tests over this many seeds
# (the CPU backend runs every fifth seed in its main configuration and
# every 25th in the others), and the fuzzers for DEEP_FUZZ_TIME each.
DEEP_SEEDS ?= 30000
# `make test`'s sanitizer pass: the random differential tests over this many
# seeds, the plain pass's 200 (built at -O1, the sanitizers' build runs
# them in about a minute: the OpenCL rows with a switch changed are left
# out there, and the CPU rows' kernels are the plain pass's, cached)
SAN_RANDOM_SEEDS ?= 200
# `make test-deep`: random programs per rank count over MPI (test_mpi_random)
DEEP_MPI_SEEDS ?= 2000
DEEP_FUZZ_TIME ?= 1800
# LeakSanitizer on; a failed allocation returns NULL instead of aborting
# (the limits tests ask malloc for 2^62 bytes on purpose).
# LSan leaves out the OpenCL platform's and NVRTC's own allocations
# (tests/lsan.supp).  intercept_tls_get_addr=0: the runtimes of GCC up
# to 13 (and LLVM up to 16) take a dynamic thread-local block that
# happens to start 16 bytes into a page for one with glibc 2.19's header
# and read the words before it as its bounds, and LeakSanitizer's tracer
# then crashes ("Tracer caught signal 11"), failing a test that leaked
# nothing; axle keeps no heap pointer in thread-local storage that only
# that interception would find.
SAN_ENV ?= ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:intercept_tls_get_addr=0 \
  UBSAN_OPTIONS=print_stacktrace=1 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp

# The tests valgrind runs (the quick ones: valgrind is slow).
# (test_prim is left out: valgrind emulates the i64 -> f32 conversion through
# double, so its bit-exact rounding check fails under valgrind only.)
VALGRIND_TESTS ?= test_sharing test_errors test_programs

# `make demo`'s benchmark: Table 2 of the Accelerate paper (McDonell et al.,
# ICFP 2013) at each program's
# bench size, then run time against size for the programs in PLOTS, drawn
# with gnuplot into $(DEMO_OUT).  --max-time bounds the timing of any one
# configuration (seconds) so that the whole stays within minutes.
DEMO_OUT   ?= out
BENCH_ARGS ?= --max-time 15
PLOTS      ?= dotp blackscholes
PLOT_SIZES_dotp         ?= 1e4,1e5,1e6,1e7,3e7
PLOT_SIZES_blackscholes ?= 1e4,1e5,1e6,1e7

# The Clang pass of `make test`: everything built with Clang and warnings
# as errors, these tests, and every built-in program with its kernels
# compiled by Clang too (about a minute and a half on 2 cores after the
# GCC pass, which leaves the tests' kernels in the cache).
CLANG_TESTS ?= test_version test_sharing test_errors test_simplify test_fusion test_op_[a-z]* test_backend_cpu \
  test_backend_common symbols install cli_dotp cli_dotp_cpu_20M doc_example_.*
empty :=
space := $(empty) $(empty)

all: build

deps:
	@sh scripts/install-deps.sh build test demo

# The quick check before `make test`, `make demo` and `make docs`.
define check_deps
	@sh scripts/install-deps.sh --check $(1) || \
	if [ "$(DEPS)" = no ]; then echo "axle: DEPS=no: nothing installed (sh scripts/install-deps.sh $(1) installs it)"; \
	else sh scripts/install-deps.sh $(1); fi
endef
test-deps:
	$(call check_deps,test)
demo-deps:
	$(call check_deps,demo) || echo "axle: could not install everything: the plots may be skipped"
docs-deps:
	$(call check_deps,docs)
python-deps:
	$(call check_deps,python)

build:
	@command -v cmake >/dev/null 2>&1 || { echo "axle: cmake is not installed (make deps installs it)"; exit 1; }
	$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo -DAX_WERROR=ON,show)
	cmake --build $(BUILD) -j $(JOBS)

# The command alone (what `make demo` runs), without the tests' programs.
build-cli:
	@command -v cmake >/dev/null 2>&1 || { echo "axle: cmake is not installed (make deps installs it)"; exit 1; }
	$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo -DAX_WERROR=ON,show)
	cmake --build $(BUILD) -j $(JOBS) --target axle_cli

# The layers of libaxle call only downward (docs/ARCHITECTURE.md); also
# run by test-fast as the test 'layers'.
check-layers: build
	sh scripts/check-layers.sh $(BUILD)

test-fast: test-deps build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE wip

test-clang: test-deps
	@command -v clang >/dev/null 2>&1 || { echo "axle: clang is not installed (make deps installs it)"; exit 1; }
	$(call configure,$(CLANGBUILD),-DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAX_WERROR=ON -DAX_CUDA_BASELINES=OFF)
	cmake --build $(CLANGBUILD) -j $(JOBS)
	cd $(CLANGBUILD) && ctest --output-on-failure -j $(JOBS) -R '^($(subst $(space),|,$(strip $(CLANG_TESTS))))$$'
	@# every built-in program, its kernels compiled by Clang, checked
	@for p in $$($(CLANGBUILD)/axle list | awk '{ print $$1 }'); do \
	  AXLE_CC=clang $(CLANGBUILD)/axle run $$p --check || exit 1; \
	done

python: python-deps
	cd python && AXLE_CMAKE_BUILD_DIR=$(abspath $(PYLIB)) AXLE_BUILD_JOBS=$(JOBS) \
	  $(PYTHON) setup.py -q build --build-base $(abspath $(PYBUILD))-build --build-lib $(abspath $(PYBUILD))

test-python: python
	AXLE_CMAKE_BUILD_DIR=$(abspath $(PYLIB)) PYTHONPATH=$(abspath $(PYBUILD)) \
	  $(PYTHON) -m pytest $(PYTEST_ARGS) python/tests

test-san: test-deps
	$(call configure,$(SANBUILD),-DCMAKE_BUILD_TYPE=Debug -DAX_WERROR=ON -DAX_SANITIZE=ON)
	cmake --build $(SANBUILD) -j $(JOBS)
	@# a test whose only failure is LeakSanitizer's tracer crashing at exit
	@# (a sanitizer-runtime race) runs once more (scripts/san-rerun.sh)
	cd $(SANBUILD) && $(SAN_ENV) AXLE_RANDOM_SEEDS=$(SAN_RANDOM_SEEDS) ctest --output-on-failure -j $(JOBS) -LE wip || \
	  $(SAN_ENV) AXLE_RANDOM_SEEDS=$(SAN_RANDOM_SEEDS) sh $(CURDIR)/scripts/san-rerun.sh $(abspath $(SANBUILD))

# The Python binding's tests against a build of the extension and libaxle
# under AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer
# (python/tools/test-san.sh: Python itself is not rebuilt, the runtime is
# preloaded).
test-san-python: test-deps
	MAKE="$(MAKE)" sh python/tools/test-san.sh $(SANBUILD)-python

test-valgrind: test-deps build
	@if command -v valgrind >/dev/null 2>&1; then \
	  for t in $(VALGRIND_TESTS); do \
	    echo "valgrind $$t"; \
	    valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite \
	      $(BUILD)/$$t >/dev/null || exit 1; \
	  done; \
	else echo "valgrind not installed: skipped"; fi

# libFuzzer (clang): the whole library instrumented, with ASan and UBSan.
# A crash, leak or timeout fails the run (the input is left in
# $(FUZZBUILD)/crash-*); the checked-in corpus is copied, never changed.
test-fuzz: test-deps
	@printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }\n' | \
	  clang -fsanitize=fuzzer -x c - -o /dev/null 2>/dev/null || \
	  { echo "axle: clang's libFuzzer is missing (install clang and libclang-rt-dev)"; exit 1; }
	$(call configure,$(FUZZBUILD),-DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAX_FUZZ=ON)
	cmake --build $(FUZZBUILD) -j $(JOBS) --target fuzz_api fuzz_mm fuzz_bundle
	@# the three targets at once (each fuzzer is one process; make test's
	@# machine has more than one core), then each one's log
	@for f in api mm bundle; do \
	  rm -rf $(FUZZBUILD)/corpus-$$f $(FUZZBUILD)/fuzz_$$f.rc && mkdir -p $(FUZZBUILD)/corpus-$$f && \
	  cp tests/fuzz/corpus/$$f/* $(FUZZBUILD)/corpus-$$f/ || exit 1; \
	  echo "fuzz_$$f: $(FUZZ_TIME) s"; \
	  (cd $(FUZZBUILD) && $(SAN_ENV) ./fuzz_$$f -max_total_time=$(FUZZ_TIME) $(FUZZ_ARGS) corpus-$$f \
	    > fuzz_$$f.log 2>&1; echo $$? > fuzz_$$f.rc) & \
	done; wait; bad=0; \
	for f in api mm bundle; do \
	  echo "== fuzz_$$f"; \
	  grep -v '^#\|NEW_FUNC\|^INFO\|^ *"\|dictionary' $(FUZZBUILD)/fuzz_$$f.log | tail -n 60; \
	  [ "$$(cat $(FUZZBUILD)/fuzz_$$f.rc 2>/dev/null)" = 0 ] || { echo "fuzz_$$f failed"; bad=1; }; \
	done; exit $$bad

# On a machine with an NVIDIA GPU and the CUDA toolkit: the CUDA backend's
# suite, compute-sanitizer and the benchmarks against hand-written CUDA,
# in one table (logs in gpu-check/); without a GPU it says so and fails.
gpu-check:
	sh scripts/gpu-check.sh

# Before every release (docs/guide/testing.md): long random sweeps on
# every backend and a long fuzz run.
test-deep: build
	cd $(BUILD) && AXLE_RANDOM_SEEDS=$(DEEP_SEEDS) ./test_random
	@# the regression seeds in every configuration, and the OpenCL suite's
	@# CUDA text compiled for every pair of architecture and path (make
	@# test compiles each text for two of the four)
	cd $(BUILD) && AXLE_RANDOM_ALL=1 AXLE_TEST_NVRTC=1 ./test_random random_regression_seeds
	@# make test's random programs with every OpenCL row's CUDA text
	@# compiled by NVRTC for every pair (make test: the default switches' rows)
	cd $(BUILD) && AXLE_TEST_NVRTC=1 AXLE_TEST_NVRTC_PAIRS=all ./test_random random_programs
	cd $(BUILD) && AXLE_TEST_NVRTC_PAIRS=all ctest --output-on-failure -j $(JOBS) -R '_opencl$$'
	@# libaxle_mpi (where MPI is found): the random programs over 2, 3 and
	@# 4 ranks, the CPU backend on every tenth
	@if [ -x $(BUILD)/test_mpi_random ]; then \
	  for np in 2 3 4; do \
	    (cd $(BUILD) && AXLE_DEBUG=verify AXLE_MPI_TIMEOUT=300 AXLE_MPI_RANDOM_SEEDS=$(DEEP_MPI_SEEDS) \
	      AXLE_MPI_RANDOM_CPU_EVERY=10 mpirun -np $$np ./test_mpi_random) || exit 1; \
	  done; \
	fi
	$(MAKE) test-fuzz FUZZ_TIME=$(DEEP_FUZZ_TIME) FUZZ_SEED=0

test: test-deps test-fast test-python test-clang test-san test-san-python test-valgrind test-fuzz

demo: demo-deps
	@$(MAKE) build-cli
	@echo "== axle: the built-in programs =="
	$(BUILD)/axle list
	$(BUILD)/axle run dotp --size 1000000 --check
	$(BUILD)/axle run blackscholes --size 1000000 --check
	$(BUILD)/axle run incnine --check
	@echo "== sharing recovery on Black-Scholes: IR size with and without =="
	$(BUILD)/axle dump blackscholes --stage sharing --json | grep -o '"nodes":[0-9]*'
	$(BUILD)/axle dump blackscholes --stage sharing --no-sharing --json | grep -o '"nodes":[0-9]*'
	@# The benchmark: every failure is reported in its row and the table
	@# goes on; the exit status says whether any check failed.
	@mkdir -p $(DEMO_OUT)
	@rm -f $(DEMO_OUT)/bench.json $(foreach p,$(PLOTS),$(DEMO_OUT)/$(p).json)
	@echo "== axle bench: the eight programs of the Accelerate paper's Table 2 (McDonell et al., ICFP 2013) on this machine =="
	@rc=0; \
	$(BUILD)/axle bench $(BENCH_ARGS) --json-file $(DEMO_OUT)/bench.json || rc=1; \
	$(foreach p,$(PLOTS), \
	  echo "== $(p): run time against size =="; \
	  $(BUILD)/axle bench $(p) --sizes $(PLOT_SIZES_$(p)) --runs 3 $(BENCH_ARGS) \
	    --json-file $(DEMO_OUT)/$(p).json || rc=1; \
	  awk -f bench/json2dat.awk $(DEMO_OUT)/$(p).json > $(DEMO_OUT)/$(p).dat; \
	  if command -v gnuplot >/dev/null 2>&1; then \
	    gnuplot -e "prog='$(p)'; data='$(DEMO_OUT)/$(p).dat'; png='$(DEMO_OUT)/$(p).png'" bench/plot.gp && \
	    echo "plot: $(DEMO_OUT)/$(p).png"; \
	  else echo "gnuplot is not installed: $(DEMO_OUT)/$(p).dat not plotted"; fi;) \
	echo "results: $(DEMO_OUT)/bench.json (JSON lines)"; \
	if [ $$rc -ne 0 ]; then echo "axle bench: some checks failed (see the tables)"; fi; \
	exit $$rc

# The reference documentation, generated from the header's comments and
# docs/ by Doxygen (installed here if missing): $(BUILD)/docs/html/index.html
docs: docs-deps
	@command -v cmake >/dev/null 2>&1 || { echo "axle: cmake is not installed (make deps installs it)"; exit 1; }
	$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo -DAX_WERROR=ON)
	cmake --build $(BUILD) --target docs

clean:
	rm -rf $(BUILD) $(SANBUILD) $(SANBUILD)-python $(FUZZBUILD) $(CLANGBUILD) python/build
