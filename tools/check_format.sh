#!/usr/bin/env bash
# check_format.sh: the C and CUDA sources are as clang-format (.clang-format) writes them.
#   tools/check_format.sh          list each file that differs, with the first lines of the
#                                  difference, and exit 1 if any does (the ctest test `format`)
#   tools/check_format.sh --fix    rewrite them in place (make format)
set -euo pipefail
cd "$(dirname "$0")/.."

CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
if ! command -v "$CLANG_FORMAT" >/dev/null; then
  echo "check_format.sh: $CLANG_FORMAT not found (tools/deps.sh installs clang-format)" >&2
  exit 1
fi

# the tracked sources in a checkout; every source file in a copy without git
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.c' '*.h' '*.cu' '*.cuh')
else
  mapfile -t files < <(find csrc kernels fuzz bench -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh')
fi

if [ "${1:-}" = --fix ]; then
  "$CLANG_FORMAT" -i "${files[@]}"
  exit 0
fi

bad=0
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if ! diff=$("$CLANG_FORMAT" "$f" | diff -u "$f" - 2>&1); then
    echo "$f: not as clang-format writes it (make format fixes it):"
    head -n 12 <<<"$diff" | sed 's/^/    /'
    bad=$((bad + 1))
  fi
done
if [ "$bad" -gt 0 ]; then
  echo "check_format.sh: $bad of ${#files[@]} files differ from clang-format's output"
  exit 1
fi
echo "check_format.sh: ${#files[@]} files as clang-format writes them"
