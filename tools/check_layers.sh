#!/bin/sh
# check_layers.sh: the C/CUDA sources include only their own layer or lower ones.
#   core (csrc/core) <- backends (csrc/cpu; csrc/cuda with kernels/) <- nn, dist, data, io
# A backend never includes another backend; kernels/ includes only itself and core.
# Prints each offending include and exits 1 if there is one. Run from the repository root.
status=0
for f in $(find csrc kernels -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh'); do
  dir=$(dirname "$f")
  case "$dir" in
    csrc/core) allowed="csrc/core" ;;
    csrc/cpu) allowed="csrc/core csrc/cpu" ;;
    csrc/cuda) allowed="csrc/core csrc/cuda kernels" ;;
    kernels) allowed="csrc/core kernels" ;;
    csrc/nn|csrc/dist|csrc/data|csrc/io) allowed="csrc/core $dir" ;;
    *) continue ;;
  esac
  for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
    target=$(realpath -m --relative-to=. "$dir/$inc")
    case "$target" in csrc/moontorch.h) continue ;; esac
    ok=0
    for a in $allowed; do
      case "$target" in "$a"/*) ok=1 ;; esac
    done
    if [ $ok = 0 ]; then
      echo "$f includes $inc ($target): not its layer or a lower one"
      status=1
    fi
  done
done
exit $status
