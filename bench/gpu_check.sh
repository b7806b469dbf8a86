#!/bin/bash
# bench/gpu_check.sh: what a lent GPU machine is used for, in one call that fits its short lease:
#   1. configure and build with CUDA for sm_90 (cuDNN, NCCL and MPI found where the machine
#      keeps them), 2. the CUDA specs (CUDA results against the CPU's), 3. the GPU benches with
#   PyTorch's CUDA build beside them, 4. the rest of the suite with the time that is left.
# Logs go to $OUT (default /tmp/gpu_out); the last lines printed are the summary.
#   mkdir -p .gpu && cp -r ../shared/gpu/. .gpu/   # plus libopenmpi-dev's .deb in .gpu/mpi and
#                                                  # cudnn*.h/nccl.h in .gpu/inc as fallbacks
#   source .gpu/env.sh && bash bench/gpu_check.sh [budget seconds, default 500]
set -u
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
T0=$(date +%s)
BUDGET=${1:-500}
left() { echo $((BUDGET - ($(date +%s) - T0))); }
stamp() { echo "[$(($(date +%s) - T0)) s] $*"; }
B=/tmp/mt-gpu-build

# the python that holds CUDA PyTorch (the image's plain python3, not the Debian one we unpacked)
PEER=""
for p in "$(command -v python3)" /opt/torch/.venv/bin/python3 /usr/bin/python3; do
  [ -x "$p" ] && "$p" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && { PEER=$p; break; }
done
export MT_PEER_PYTHON=$PEER
{
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
  nvcc --version | tail -1
  [ -n "$PEER" ] && "$PEER" -c 'import torch; print("peer", torch.__version__, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name())'
  date -u
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

# cuDNN and NCCL: the image keeps them in Python wheels; headers from there, else the carried ones
findone() { find /usr/local/cuda* /opt /usr/lib /usr/include /usr/local/lib -name "$1" 2>/dev/null | head -n 1; }
CUDNN_LIB=$(findone 'libcudnn.so'); [ -n "$CUDNN_LIB" ] || CUDNN_LIB=$(findone 'libcudnn.so.9')
NCCL_LIB=$(findone 'libnccl.so'); [ -n "$NCCL_LIB" ] || NCCL_LIB=$(findone 'libnccl.so.2')
CUDNN_H=$(findone 'cudnn.h'); NCCL_H=$(findone 'nccl.h')
CUDNN_INC=${CUDNN_H:+$(dirname "$CUDNN_H")}; NCCL_INC=${NCCL_H:+$(dirname "$NCCL_H")}
[ -n "$CUDNN_INC" ] || CUDNN_INC=$PWD/.gpu/inc
[ -n "$NCCL_INC" ] || NCCL_INC=$PWD/.gpu/inc
stamp "cudnn $CUDNN_LIB ($CUDNN_INC), nccl $NCCL_LIB ($NCCL_INC)"

# zlib1g-dev's libz.so links to an absolute /lib path that dpkg -x leaves dangling, and CMake
# then takes libz.a (not PIC): name the machine's own shared zlib
ZLIB_SO=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -n 1)
# jpeglib.h takes JPEG_LIB_VERSION from the multiarch jconfig.h: the unpacked Debian one must win
# over the image's own (libjpeg 8), or encode/decode stop with 'Wrong JPEG library version'
MULTIARCH_INC=$(dirname "$(find /tmp/mtroot/usr/include -name jconfig.h | head -n 1)")
export CFLAGS="${CFLAGS:-} -isystem $MULTIARCH_INC"
stamp configure
cmake -S . -B $B -DCMAKE_CUDA_ARCHITECTURES=90 -DMT_CUDA=ON ${ZLIB_SO:+-DZLIB_LIBRARY=$ZLIB_SO -DZLIB_LIBRARY_RELEASE=$ZLIB_SO} \
  -DCUDNN_LIB="$CUDNN_LIB" -DCUDNN_INCLUDE="$CUDNN_INC" -DNCCL_LIB="$NCCL_LIB" -DNCCL_INCLUDE="$NCCL_INC" \
  >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
grep 'moontorch: CUDA' "$OUT/build.log"
stamp build
timeout 300 cmake --build $B -j16 >>"$OUT/build.log" 2>&1 || { grep -m20 -i 'error' "$OUT/build.log"; tail -20 "$OUT/build.log"; exit 1; }
stamp built
# MT_GPU_ONLY=regex: just those tests, verbosely (a short follow-up call)
if [ -n "${MT_GPU_ONLY:-}" ]; then
  (cd $B && ctest -V -R "$MT_GPU_ONLY") >"$OUT/ctest_only.log" 2>&1
  grep -E 'successes|Pending|tests passed|tests failed' "$OUT/ctest_only.log"
  exit 0
fi

# 2. the CUDA specs first: they are what only this machine can run
(cd $B && timeout $(($(left) - 60)) ctest -j4 -R 'cuda' --output-on-failure) >"$OUT/ctest_cuda.log" 2>&1
stamp "cuda specs: $(grep -E 'tests passed|tests failed' "$OUT/ctest_cuda.log")"

# 3. benches, each bounded
export MOONTORCH_BUILD=$B
timeout 120 luajit bench/tensor.lua -quick -threads 16 >"$OUT/bench_tensor.txt" 2>&1
stamp "tensor bench rc $?"
timeout 150 luajit bench/train_step.lua -device cuda -models small_cnn,resnet18,resnet50 -reps 10 -warmup 3 \
  -precision fp32 >"$OUT/bench_train_step.txt" 2>&1
stamp "train_step bench rc $?"

# 4. the rest of the suite, in what time is left (CPU specs too; the 5-minute distributed Fashion-MNIST run is left to CI)
# (-profile: where ResNet-50's step goes, layer type by layer type, each bracketed by a sync)
timeout 90 luajit bench/train_step.lua -device cuda -models resnet50 -reps 3 -warmup 2 -profile -nopeer -precision fp32 \
  >"$OUT/bench_profile.txt" 2>&1
stamp "profile rc $?"
# mixed precision on the GPU (tensor cores, fp32 masters), PyTorch autocast beside it
timeout 120 luajit bench/train_step.lua -device cuda -models small_cnn,resnet50 -reps 5 -warmup 2 -precision fp32,bf16,fp16 \
  >"$OUT/bench_train_step_amp.txt" 2>&1
stamp "train_step amp bench rc $?"
L=$(($(left) - 15))
if [ "$L" -gt 30 ]; then
  (cd $B && timeout $L ctest -j12 -E "${MT_GPU_SKIP:-cuda|dist_fashion_mnist}" --output-on-failure) >"$OUT/ctest_rest.log" 2>&1
  stamp "rest: $(grep -E 'tests passed|tests failed' "$OUT/ctest_rest.log")"
fi

echo "==== summary"
grep -E 'tests passed|tests failed|\*\*\*Failed|\*\*\*Timeout|Failed  |Timeout  ' "$OUT"/ctest_*.log | head -40
grep -E -A40 'on a GPU|CUDA' "$OUT/bench_tensor.txt" | head -30
tail -8 "$OUT/bench_train_step.txt"
head -30 "$OUT/bench_profile.txt"
