#!/usr/bin/env bash
# check_layers.sh: every #include between moontorch's C folders, and every require between its
# Lua parts, points to the same layer or a lower one (docs/design.md):
#   0 core  <-  1 cpu, cuda, kernels  <-  2 nn, dist, data, io  <-  Lua  <-  recipes
# Backends do not include each other (cpu, cuda and kernels are siblings, except that kernels/
# is the device half of cuda: csrc/cuda may include kernels/kernels.h). Prints each violation
# (file:line and the arrow) and exits 1 if there is any.
set -euo pipefail
cd "$(dirname "$0")/.."

layer_of() { # path relative to the repository root -> "rank name"
  case "$1" in
    csrc/moontorch.h) echo "0 public" ;;
    csrc/core/*) echo "0 core" ;;
    csrc/cpu/*) echo "1 cpu" ;;
    csrc/cuda/*) echo "1 cuda" ;;
    kernels/*) echo "1 kernels" ;;
    csrc/nn/*) echo "2 nn" ;;
    csrc/dist/*) echo "2 dist" ;;
    csrc/data/*) echo "2 data" ;;
    csrc/io/*) echo "2 io" ;;
    *) echo "9 other" ;;
  esac
}

bad=0
while IFS= read -r line; do
  file=${line%%:*}; rest=${line#*:}; lineno=${rest%%:*}
  inc=$(sed -E 's/.*#include[[:space:]]*"([^"]+)".*/\1/' <<<"${rest#*:}")
  target=$(realpath -m --relative-to=. "$(dirname "$file")/$inc")
  [ -e "$target" ] || continue # a system header found through the include path
  read -r fr fname <<<"$(layer_of "$file")"
  read -r tr tname <<<"$(layer_of "$target")"
  ok=1
  if [ "$tr" -gt "$fr" ]; then ok=0; fi
  # siblings in the backend layer stay apart, but the CUDA host side may launch kernels/
  if [ "$tr" -eq 1 ] && [ "$fr" -eq 1 ] && [ "$fname" != "$tname" ]; then
    [ "$fname" = cuda ] && [ "$tname" = kernels ] || ok=0
  fi
  # the level-2 parts are independent of each other
  if [ "$tr" -eq 2 ] && [ "$fr" -eq 2 ] && [ "$fname" != "$tname" ]; then ok=0; fi
  if [ $ok -eq 0 ]; then
    echo "$file:$lineno: $fname includes $target ($tname): an arrow up or sideways"
    bad=1
  fi
done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' csrc kernels || true)

# Lua: the library never requires a recipe; recipes use the library only through require.
while IFS= read -r line; do
  echo "$line: the library requires a recipe module"
  bad=1
done < <(grep -rnE "require[[:space:](]*['\"]recipes\." lua || true)

if [ $bad -eq 0 ]; then echo "check_layers: every include and require points down (or within its layer)"; fi
exit $bad
