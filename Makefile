# axle: the two commands are `make demo` (install what is missing, build,
# run the built-in programs) and `make test` (build and run every test,
# once normally with warnings as errors and once under AddressSanitizer and
# UndefinedBehaviorSanitizer).

BUILD     ?= build
SANBUILD  ?= build-san
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: all deps build test test-fast test-san test-valgrind demo clean

# The tests valgrind runs (the quick ones: valgrind is slow).
# (test_prim is left out: valgrind emulates the i64 -> f32 conversion through
# double, so its bit-exact rounding check fails under valgrind only.)
VALGRIND_TESTS ?= test_sharing test_errors test_programs

all: build

deps:
	@sh scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAX_WERROR=ON $(CMAKE_ARGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

test-fast: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-san: deps
	cmake -S . -B $(SANBUILD) -DCMAKE_BUILD_TYPE=Debug -DAX_WERROR=ON -DAX_SANITIZE=ON $(CMAKE_ARGS) >/dev/null
	cmake --build $(SANBUILD) -j $(JOBS)
	cd $(SANBUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

test-valgrind: build
	@if command -v valgrind >/dev/null 2>&1; then \
	  for t in $(VALGRIND_TESTS); do \
	    echo "valgrind $$t"; \
	    valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite \
	      $(BUILD)/$$t >/dev/null || exit 1; \
	  done; \
	else echo "valgrind not installed: skipped"; fi

test: test-fast test-san test-valgrind

demo: build
	@echo "== axle: the built-in programs =="
	$(BUILD)/axle list
	$(BUILD)/axle run dotp --size 1000000 --check
	$(BUILD)/axle run blackscholes --size 1000000 --check
	$(BUILD)/axle run incnine --check
	@echo "== sharing recovery on Black-Scholes: IR size with and without =="
	$(BUILD)/axle dump blackscholes --stage sharing --json | grep -o '"nodes":[0-9]*'
	$(BUILD)/axle dump blackscholes --stage sharing --no-sharing --json | grep -o '"nodes":[0-9]*'

clean:
	rm -rf $(BUILD) $(SANBUILD)
