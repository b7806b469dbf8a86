#!/usr/bin/env bash
# torch7_tests.sh: runs Torch7's own unit tests against moontorch, one process per test.
#   tools/torch7_tests.sh DIR [PATTERN]
# DIR is a checkout of github.com/torch/torch7 (its test/test*.lua) or github.com/torch/nn (its
# test.lua); the files are used as they are. PATTERN (grep -E) picks tests by name.
# Prints a PASS, FAIL or TIME line per test (a failure with its first message lines) and a
# summary; exits 1 if any failed. MOONTORCH_BUILD (default ./build) is the build folder,
# T7_TIMEOUT (default 120) the seconds per test, T7_JOBS (default nproc) the tests run at once.
set -u
dir=${1:?usage: tools/torch7_tests.sh DIR [PATTERN]}
pattern=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(cd "$dir" && pwd) || exit 2
export MOONTORCH_BUILD=${MOONTORCH_BUILD:-$root/build}
export LUA_PATH="$root/lua/?.lua;$root/lua/?/init.lua;;"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export T7_TIMEOUT=${T7_TIMEOUT:-120} LUAJIT=${LUAJIT:-luajit} T7_DRIVER=$root/tools/torch7_tests.lua
jobs=${T7_JOBS:-$(nproc)}

if [ -f "$dir/test/test.lua" ] && [ -f "$dir/Tensor.lua" ]; then
   # test_Multinomial.lua is a timing script (it needs the sys package and asserts nothing)
   files=$(ls "$dir"/test/test*.lua | grep -v '/test_Multinomial\.lua$')
elif [ -f "$dir/test.lua" ] && [ -f "$dir/Module.lua" ]; then
   files=$dir/test.lua
else
   echo "torch7_tests.sh: $dir is neither a torch7 checkout (test/test.lua) nor an nn checkout (test.lua)" >&2
   exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export T7_WORK=$work
: > "$work/tests"
for file in $files; do
   # The tests run from the file's folder, as `th test.lua` would (nn's test.lua requires test.*).
   if ! names=$(cd "$(dirname "$file")" && "$LUAJIT" "$T7_DRIVER" "$file" list 2>&1); then
      echo "LOAD $(basename "$file")  $(echo "$names" | grep -v '^TEST' | head -3 | tr '\n' ' ' | cut -c1-300)"
      echo "$file <load>" >> "$work/tests"
      continue
   fi
   echo "$names" | sed -n 's/^TEST\t//p' | while read -r name; do
      if [ -z "$pattern" ] || echo "$name" | grep -qE "$pattern"; then echo "$file $name"; fi
   done >> "$work/tests"
done

# one test: prints its result line into $T7_WORK/results
run_one() {
   local file=$1 name=$2 label out rc what why
   label=$(basename "$file" .lua):$name
   [ "$name" = '<load>' ] && { echo "FAIL $label  the file did not load" >> "$T7_WORK/results"; return; }
   out=$(mktemp "$T7_WORK/out.XXXXXX")
   (cd "$(dirname "$file")" && timeout "$T7_TIMEOUT" "$LUAJIT" "$T7_DRIVER" "$file" run "$name") > "$out" 2>&1
   rc=$?
   if [ $rc -eq 0 ]; then
      echo "PASS $label" >> "$T7_WORK/results"
   else
      [ $rc -eq 124 ] && what=TIME || what=FAIL
      why=$(grep -vE '^(Running|Seed|Completed|Failed|Error|-+$|[[:space:]]*[0-9]+/[0-9]+ )' "$out" \
            | grep -vxF "${name%@*}" \
            | grep -E '[^[:space:]]' | head -3 | tr '\n' ' ' | tr -s ' \t' ' ' | cut -c1-240)
      echo "$what $label  $why" >> "$T7_WORK/results"
   fi
   rm -f "$out"
}
export -f run_one
: > "$work/results"
# shellcheck disable=SC2016
xargs -a "$work/tests" -P "$jobs" -L 1 bash -c 'run_one "$0" "$1"'
sort -k2 "$work/results"
pass=$(grep -c '^PASS' "$work/results")
total=$(wc -l < "$work/results")
echo "summary: $pass of $total passed ($(awk "BEGIN{printf \"%.1f\", $total ? 100*$pass/$total : 0}")%)"
[ "$pass" -eq "$total" ]
