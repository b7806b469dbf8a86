#!/bin/bash
# bench/gpu_check.sh: what a lent GPU machine is used for, in one call that fits its short lease:
#   1. configure and build with CUDA for sm_90 (cuDNN, NCCL and MPI found where the machine
#      keeps them), 2. the suite (CUDA specs compare CUDA results with the CPU's) but the trained
#      runs, 3. the GPU benches with PyTorch's CUDA build beside them, in the time that is left.
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
# 2. the fast tier, CUDA specs and CPU specs together (the CUDA specs compare with the CPU and are
#    what only this machine can run; the rest checks the build there). Left out: the training tier
#    (minutes each, run by CI; label train), the source checks (no clang-format or luacheck there)
#    and the two data specs whose references need Debian's torchvision and Pillow.
# MT_GPU_ONLY=regex runs just those tests (a short follow-up call); MT_GPU_BENCHES names the benches
# below to run (default: all but the profile).
# References from Python: the image's /usr/bin/python3 has neither numpy nor PyTorch, the peer has both.
[ -n "$PEER" ] && export MT_REF_PYTHON=$PEER
SKIP=${MT_GPU_SKIP:-tools/format|tools/luacheck|data/dataset|data/transform}
(cd $B && timeout $(($(left) - ${MT_GPU_BENCH_S:-200})) ctest -j12 --timeout 240 -L fast \
  ${MT_GPU_ONLY:+-R "$MT_GPU_ONLY"} -E "$SKIP" --output-on-failure) >"$OUT/ctest_all.log" 2>&1
stamp "suite: $(grep -E 'tests passed|tests failed' "$OUT/ctest_all.log")"

# 3. benches, each bounded, PyTorch's CUDA build beside them
export MOONTORCH_BUILD=$B
BENCHES=" ${MT_GPU_BENCHES:-train_step tf32 amp topk tensor} "
# bench NAME SECONDS cmd...: runs when NAME is in $BENCHES and time is left; output in $OUT/bench_NAME.txt
bench() { local name=$1 s=$2; shift 2
  case "$BENCHES" in *" $name "*) ;; *) return ;; esac
  [ "$(left)" -gt $((s / 2)) ] || { stamp "skip $name"; return; }
  [ "$s" -gt $(($(left) - 10)) ] && s=$(($(left) - 10))
  timeout "$s" "$@" >"$OUT/bench_$name.txt" 2>&1; stamp "bench $name rc $?"; }
TS="luajit bench/train_step.lua -device cuda"
bench train_step 120 $TS -models small_cnn,resnet18,resnet50 -reps 10 -warmup 3 -precision fp32
bench tf32 60 $TS -models resnet50 -reps 10 -warmup 3 -precision fp32 -tf32
bench amp 120 $TS -models resnet50 -reps 10 -warmup 3 -precision bf16,fp16 -layout nchw,nhwc
bench topk 60 luajit bench/topk.lua -device cuda -sizes 1e6,2.5e7 -threads 1 -reps 10
bench tensor 90 luajit bench/tensor.lua -quick -threads 16
# where ResNet-50's step goes, layer type by layer type (each bracketed by a sync)
bench profile 90 $TS -models resnet50 -reps 3 -warmup 2 -precision bf16 -layout nchw,nhwc -profile -nopeer

echo "==== summary"
grep -E 'tests passed|tests failed|\*\*\*Failed|\*\*\*Timeout|Failed  |Timeout  ' "$OUT"/ctest_*.log | head -40
for f in "$OUT"/bench_*.txt; do echo "== $f"; tail -12 "$f"; done
