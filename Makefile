# Makefile: short entry points over CMake (the real build description is CMakeLists.txt).
# `make help` lists the targets. CUDA is used when /usr/local/cuda (or nvcc on PATH) exists;
# `MT_CUDA=OFF make` forces it off.

BUILD        ?= build
MT_CUDA      ?= AUTO
# CUDA architectures to compile for (empty: CMakeLists.txt's default, 80 and 90); CI, which has
# no GPU and only checks that the kernels compile, builds one
CUDA_ARCHS   ?=
JOBS         ?= $(shell nproc)
FUZZ_SECONDS ?= 60
# ON: warnings are errors in the C build (CI sets it; the build is clean under -Wall -Wextra)
WERROR       ?= OFF
LUAJIT       ?= luajit
LUAROCKS     ?= luarocks --lua-version=5.1
RECIPE       ?= $(firstword $(wildcard recipes/fashion_mnist.lua) recipes/demo.lua)
FUZZ_TARGETS := $(basename $(notdir $(wildcard fuzz/fuzz_*.c)))

# The sanitizer build is compiled by gcc; LuaJIT itself is not instrumented, so the ASan and
# UBSan runtimes must be preloaded into the luajit process that loads libmoontorch.so.
# detect_leaks=0: LuaJIT's own allocator (and memory still owned by the GC at exit) confuses
# LeakSanitizer into reporting "leaks" that are not ours; leaks are checked by spec/core/memory_spec.
# The sanitizers run the fast tier less the specs labelled noasan (each says why in its
# `-- ctest: noasan:` line; 3- and 4-rank runs repeat the 1- and 2-rank code paths).
SANITIZER_ENV = LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
                ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
                UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

.PHONY: all help deps build run test test-train test-asan fuzz format lint bench install clean

all: build

help: ## this list
	@echo 'make [TARGET] [VAR=value ...]: targets'
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /  \1\t/' | expand -t 16
	@echo 'variables: BUILD=$(BUILD) MT_CUDA=$(MT_CUDA) CUDA_ARCHS=$(CUDA_ARCHS) JOBS=$(JOBS) WERROR=$(WERROR)'
	@echo '           FUZZ_SECONDS=$(FUZZ_SECONDS) RECIPE=$(RECIPE)'

deps: ## install with apt what building and testing need (tools/deps.sh; root or sudo)
	@tools/deps.sh

build: deps ## configure and build into build/ (the default target)
	cmake -S . -B $(BUILD) -DMT_CUDA=$(MT_CUDA) -DMT_WERROR=$(WERROR) \
	  $(if $(CUDA_ARCHS),-DCMAKE_CUDA_ARCHITECTURES=$(CUDA_ARCHS))
	cmake --build $(BUILD) -j $(JOBS)

run: build ## build, then train the default recipe (Fashion-MNIST, data from apt)
	@case "$(RECIPE)" in *fashion_mnist*) tools/deps.sh run ;; esac
	MOONTORCH_BUILD=$(CURDIR)/$(BUILD) $(LUAJIT) $(RECIPE)

test: build ## the fast tier: every unit and integration spec, short recipe runs (<= 10 min with the build)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L fast

test-train: build ## the training tier: trainings to an accuracy target, luarocks make (about 15 min)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L train

# The sanitizer builds compile at -O1 with line tables only (as OSS-Fuzz does): reports keep
# file:line, and on CI's 2 cores each build takes about half the time of -O2 -g.
test-asan: deps ## the fast tier, less noasan specs, on a CPU-only ASan+UBSan build in build-asan/
	cmake -S . -B build-asan -DMT_CUDA=OFF -DMT_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  '-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1'
	cmake --build build-asan -j $(JOBS)
	cd build-asan && $(SANITIZER_ENV) ctest --output-on-failure -j $(JOBS) -L fast -LE noasan

# Each target runs for FUZZ_SECONDS on its own corpus (kept in build-fuzz/ between runs); the
# log is shown only when the fuzzer finds a crash.
fuzz: deps ## libFuzzer on the C entry points (clang) in build-fuzz/, FUZZ_SECONDS per target
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DMT_CUDA=OFF -DMT_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  '-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only'
	cmake --build build-fuzz -j $(JOBS) --target $(FUZZ_TARGETS)
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus/$$t; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  if ! (cd build-fuzz && ./$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -print_final_stats=1 \
	        corpus/$$t > $$t.log 2>&1); then \
	    tail -n 60 build-fuzz/$$t.log; echo "fuzz: $$t FAILED (log: build-fuzz/$$t.log)"; exit 1; \
	  fi; \
	  grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' build-fuzz/$$t.log; \
	done

format: ## rewrite the C and CUDA sources as clang-format (.clang-format) writes them
	tools/check_format.sh --fix

lint: ## the checks the fast tier runs on the sources: clang-format, luacheck, include layers
	tools/check_format.sh
	luacheck --no-color --quiet lua recipes bench spec moontorch.lua
	tools/check_layers.sh

bench: build ## tensor, training-step and loader benchmarks against OpenBLAS, memcpy and PyTorch
	@tools/deps.sh bench
	MOONTORCH_BUILD=$(CURDIR)/$(BUILD) $(LUAJIT) bench/tensor.lua $(BENCH_ARGS)
	MOONTORCH_BUILD=$(CURDIR)/$(BUILD) $(LUAJIT) bench/train_step.lua
	MOONTORCH_BUILD=$(CURDIR)/$(BUILD) $(LUAJIT) bench/loader.lua

install: deps ## luarocks make (Lua modules, libmoontorch.so, the moontorch command)
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(LUAROCKS) make $(LUAROCKS_FLAGS) rocks/moontorch-scm-1.rockspec MT_CUDA=$(MT_CUDA)

clean: ## remove build/, build-asan/, build-fuzz/ and build.luarocks/
	rm -rf $(BUILD) build-asan build-fuzz build.luarocks
