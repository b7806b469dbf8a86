# Makefile: short entry points over CMake (the real build description is CMakeLists.txt).
#   make               install missing apt packages, configure and build into build/
#   make run           build, then run the default recipe (or a short tensor demo)
#   make test          build, then every spec through ctest
#   make test-asan     CPU-only build with ASan+UBSan into build-asan/, then the specs under it
#   make fuzz          libFuzzer targets (clang) into build-fuzz/, FUZZ_SECONDS each
#   make bench         tensor, training-step and loader benchmarks against OpenBLAS, memcpy and PyTorch
#   make install       luarocks make (Lua modules, libmoontorch.so, the moontorch command)
# CUDA is used when /usr/local/cuda (or nvcc on PATH) exists; `MT_CUDA=OFF make` forces it off.

BUILD        ?= build
MT_CUDA      ?= AUTO
# CUDA architectures to compile for (empty: CMakeLists.txt's default, 80 and 90); CI, which has
# no GPU and only checks that the kernels compile, builds one
CUDA_ARCHS   ?=
JOBS         ?= $(shell nproc)
FUZZ_SECONDS ?= 60
LUAJIT       ?= luajit
LUAROCKS     ?= luarocks --lua-version=5.1
RECIPE       ?= $(firstword $(wildcard recipes/fashion_mnist.lua) recipes/demo.lua)
FUZZ_TARGETS := $(basename $(notdir $(wildcard fuzz/fuzz_*.c)))

# The sanitizer build is compiled by gcc; LuaJIT itself is not instrumented, so the ASan and
# UBSan runtimes must be preloaded into the luajit process that loads libmoontorch.so.
# detect_leaks=0: LuaJIT's own allocator (and memory still owned by the GC at exit) confuses
# LeakSanitizer into reporting "leaks" that are not ours; leaks are checked by memory_spec.
# Skipped under the sanitizers: install_spec rebuilds the library without them, memory_spec
# measures RSS (which ASan's shadow memory distorts), models_spec and recipe_imagenet_spec repeat
# what the nn, data and recipe specs already cover at several times the run time, the
# mixed-precision and large-batch trainings repeat code paths the shorter specs run; of the distributed specs, the 3- and 4-rank runs and
# the Fashion-MNIST training repeat the 1- and 2-rank code paths at several times the cost.
ASAN_SKIP := install_spec|memory_spec|models_spec|recipe_imagenet_spec|amp_fashion_mnist_spec|large_batch_spec|dist_fashion_mnist_spec|dist_rgc_resume_spec|dist_.*_np3|dist_.*_np4
SANITIZER_ENV = LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
                ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
                UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

.PHONY: all deps build run test test-asan fuzz bench install clean

all: build

deps:
	@tools/deps.sh

build: deps
	cmake -S . -B $(BUILD) -DMT_CUDA=$(MT_CUDA) $(if $(CUDA_ARCHS),-DCMAKE_CUDA_ARCHITECTURES=$(CUDA_ARCHS))
	cmake --build $(BUILD) -j $(JOBS)

run: build
	@case "$(RECIPE)" in *fashion_mnist*) tools/deps.sh run ;; esac
	MOONTORCH_BUILD=$(CURDIR)/$(BUILD) $(LUAJIT) $(RECIPE)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The sanitizer builds compile at -O1 with line tables only (as OSS-Fuzz does): reports keep
# file:line, and on CI's 2 cores each build takes about half the time of -O2 -g.
test-asan: deps
	cmake -S . -B build-asan -DMT_CUDA=OFF -DMT_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  '-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1'
	cmake --build build-asan -j $(JOBS)
	cd build-asan && $(SANITIZER_ENV) ctest --output-on-failure -j $(JOBS) -E '$(ASAN_SKIP)'

# Each target runs for FUZZ_SECONDS on its own corpus (kept in build-fuzz/ between runs); the
# log is shown only when the fuzzer finds a crash.
fuzz: deps
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

bench: build
	@tools/deps.sh bench
	MOONTORCH_BUILD=$(CURDIR)/$(BUILD) $(LUAJIT) bench/tensor.lua $(BENCH_ARGS)
	MOONTORCH_BUILD=$(CURDIR)/$(BUILD) $(LUAJIT) bench/train_step.lua
	MOONTORCH_BUILD=$(CURDIR)/$(BUILD) $(LUAJIT) bench/loader.lua

install: deps
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(LUAROCKS) make $(LUAROCKS_FLAGS) rocks/moontorch-scm-1.rockspec MT_CUDA=$(MT_CUDA)

clean:
	rm -rf $(BUILD) build-asan build-fuzz build.luarocks
