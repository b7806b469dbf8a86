#!/usr/bin/env bash
# check_layers.sh: every #include between moontorch's C folders, and every require between its
# Lua parts, points to the same layer or a lower one (docs/design.md):
#   C:   0 core  <-  1 cpu, cuda, kernels  <-  2 nn, dist, data, io
#   Lua: core (the torch package: lua/moontorch/*.lua, tensor/, io/, util/)  <-  nn, optim, data,
#        perf  <-  models (over nn), dist  <-  train; repl/ (the moontorch command) on top;
#        nothing under lua/ requires a recipe
# Backends do not include each other (cpu, cuda and kernels are siblings, except that kernels/
# is the device half of cuda: csrc/cuda may include kernels/kernels.h); the C level-2 parts
# are independent of each other, and so are Lua's nn, optim, data and perf (dist wraps nn modules
# and asks perf, the performance model, for its bucket layout and compress = 'auto''s choice).
# It also checks that each field of moontorch.internal (T) is defined in one file only.
# Prints each violation (file:line and the arrow) and exits 1 if there is any.
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

# Lua: the part of lua/moontorch a file or module belongs to (into $part): its folder, or core
# for the files at the top and the torch package's own folders (moontorch.<name> is a folder's
# init.lua when that folder exists)
lua_part() { # "lua/moontorch/nn/Linear.lua" or "moontorch.nn.Linear" -> nn
  local p=${1#lua/}
  p=${p//./\/}
  p=${p#moontorch}
  p=${p#/}
  part=${p%%/*}
  if [ -z "$part" ] || [ ! -d "lua/moontorch/$part" ]; then part=core; fi
  case $part in tensor | io | util) part=core ;; esac
}
# what each part may require besides itself
declare -A lua_allowed=(
  [core]="core" [nn]="core" [optim]="core" [data]="core" [perf]="core" [dist]="core nn perf"
  [models]="core nn" [train]="core nn optim data perf dist models"
  [repl]="core nn optim data perf dist train models"
)
# the one arrow up: torch.load loads moontorch.nn when a file names an nn class not yet defined
lua_known="lua/moontorch/io/serialize.lua>nn"
# "file line module" for every require outside a comment
lua_requires() {
  find lua -name '*.lua' -print0 | xargs -0 awk '{
    code = $0
    sub(/--.*/, "", code)
    while (match(code, /require[ \t(]*["\047][A-Za-z0-9_.]+["\047]/)) {
      req = substr(code, RSTART, RLENGTH)
      code = substr(code, RSTART + RLENGTH)
      gsub(/^require[ \t(]*["\047]|["\047]$/, "", req)
      print FILENAME, FNR, req
    }
  }'
}
while read -r file lineno mod; do
  if [[ $mod == recipes.* ]]; then
    echo "$file:$lineno: the library requires a recipe module ($mod)"
    bad=1
    continue
  fi
  [[ $mod == moontorch || $mod == moontorch.* ]] || continue
  lua_part "$file"; from=$part
  lua_part "$mod"; to=$part
  [ "$from" = "$to" ] && continue
  case " ${lua_allowed[$from]:-} $lua_known " in
    *" $to "* | *" $file>$to "*) ;;
    *)
      echo "$file:$lineno: $from requires $mod ($to): an arrow up or sideways"
      bad=1
      ;;
  esac
done < <(lua_requires)

# moontorch.internal (T): each field is defined in one place, so one grep finds it
t_def='^[[:space:]]*(function T\.FIELD[[:space:]]*\(|T\.FIELD[[:space:]]*=[^=])'
t_files=$(grep -rlE "require[ (]*'moontorch.internal'|^local T = \{\}|^return function\(torch, T\)" lua)
while read -r count field; do
  [ "$count" -gt 1 ] || continue
  # shellcheck disable=SC2086
  echo "lua/: T.$field is defined $count times: $(grep -lE "${t_def//FIELD/$field}" $t_files | tr '\n' ' ')"
  bad=1
  # shellcheck disable=SC2086
done < <(grep -hoE "${t_def//FIELD/[A-Za-z_][A-Za-z0-9_]*}" $t_files |
  sed -E 's/^[[:space:]]*(function )?T\.([A-Za-z0-9_]+).*/\2/' | sort | uniq -c)

if [ $bad -eq 0 ]; then
  echo "check_layers: every include and require points down (or within its layer); each T field has one definition"
fi
exit $bad
