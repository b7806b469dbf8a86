#!/usr/bin/env bash
# deps.sh: install with apt what a fresh Debian 12 machine needs for moontorch.
#   tools/deps.sh           build and test (compilers, LuaJIT, busted, OpenBLAS, clang for fuzzing,
#                           clang-format and luacheck for the source checks, and the Fashion-MNIST
#                           data that the recipe specs train on)
#   tools/deps.sh bench     + python3-torch, the PyTorch CPU peer that bench/tensor.lua compares with
#   tools/deps.sh run       the same: the default recipe's data set is already in the base set
# Does nothing (quickly) when everything is present. The CUDA toolkit is not an apt package
# here: CMake picks it up from /usr/local/cuda when it exists.
set -euo pipefail

base=(build-essential cmake luajit libluajit-5.1-dev lua-busted luarocks
      libopenblas-dev libdnnl-dev libcjson-dev libreadline-dev zlib1g-dev libjpeg62-turbo-dev libpng-dev
      clang libclang-rt-14-dev libomp-14-dev
      clang-format lua-check              # make format, and the ctest tests tools/format and tools/luacheck
      libopenmpi-dev openmpi-bin            # the distributed layer (csrc/dist, mpirun in the specs)
      python3-torch python3-torchvision   # PyTorch: reference values in the specs, the bench peers
      dataset-fashion-mnist)              # the default recipe's data; the recipe specs and training tier use it
extra=()
for what in "$@"; do
  case "$what" in
    build|test) ;;
    bench) ;;
    run) ;;
    *) echo "deps.sh: unknown set '$what' (expected build, bench or run)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${base[@]}" "${extra[@]}"; do
  # dpkg-query is fast; a package counts only when fully installed
  if ! dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps.sh: installing ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    echo "deps.sh: missing packages (${missing[*]}) and not root; install them or rerun as root" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
