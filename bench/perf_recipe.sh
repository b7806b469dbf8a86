#!/usr/bin/env bash
# bench/perf_recipe.sh: moontorch.perf's prediction of the Fashion-MNIST recipe's step against
# the recipe itself, on real data, on 1..N ranks over shared memory. For each rank count:
# bench/perf_recipe.lua profiles the model on every rank at once (the cores shared as in
# training) and calibrates the network (perf.calibrate); then the recipe trains 2 epochs of
# -limitBatches batches (dense ring, dense auto, rgc), and its second epoch's seconds per batch
# (log.csv) are set against tools/predict.lua's step for that profile and table (rgc: with the
# run's own selection time per step from log.csv).
#   bash bench/perf_recipe.sh [--ranks 1,2,4] [--batches 60] [--batch 64]
set -u -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RANKS=1,2,4; BATCHES=60; BATCH=64
while [ $# -gt 0 ]; do
   case "$1" in
      --ranks) RANKS=$2; shift 2 ;;
      --batches) BATCHES=$2; shift 2 ;;
      --batch) BATCH=$2; shift 2 ;;
      *) echo "perf_recipe.sh: unknown option $1" >&2; exit 2 ;;
   esac
done
out=$(mktemp -d /tmp/perf_recipe.XXXXXX)
MPI=(mpirun --allow-run-as-root --oversubscribe -x MOONTORCH_BUILD -x OMP_NUM_THREADS=1)
# the second epoch's seconds per batch and select_ms from a run's log.csv
epoch2() {
   awk -F, -v b="$BATCHES" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
      $c["epoch"] == 2 { s = $c["seconds"] * 1000 / b; sel = ("select_ms" in c) ? $c["select_ms"] : 0;
         printf "%.3f %s\n", s, sel == "" ? 0 : sel }' "$1"
}
printf '%-5s %-10s %-6s %10s %10s %8s\n' ranks compress alg measured predicted error
for n in ${RANKS//,/ }; do
   prof=$out/prof$n.json; cal=$out/cal$n.model
   if [ "$n" = 1 ]; then
      luajit bench/perf_recipe.lua -batchSize "$BATCH" -profile "$prof" >/dev/null || exit 1
      cases="none:ring"
   else
      "${MPI[@]}" -np "$n" luajit bench/perf_recipe.lua -batchSize "$BATCH" -profile "$prof" -calibrate "$cal" \
         >/dev/null || exit 1
      cases="none:ring none:auto rgc:ring"
   fi
   for c in $cases; do
      comp=${c%%:*}; alg=${c##*:}; dir=$out/run-$n-$comp-$alg
      args=(-nEpochs 2 -limitBatches "$BATCHES" -limitTestBatches 1 -batchSize "$BATCH" -threads 1 -save "$dir")
      if [ "$n" = 1 ]; then
         luajit recipes/fashion_mnist.lua "${args[@]}" >"$dir.log" 2>&1 || { tail "$dir.log"; exit 1; }
      else
         "${MPI[@]}" -np "$n" luajit recipes/fashion_mnist.lua "${args[@]}" -dist -allreduce "$alg" -compress "$comp" \
            -densityWarmup 0 >"$dir.log" 2>&1 || { tail "$dir.log"; exit 1; }
      fi
      read -r ms sel <<<"$(epoch2 "$dir/log.csv")"
      pargs=(-profile "$prof" -workers "$n" -compress "$comp" -algorithm "$alg" -svg '' -json)
      [ "$n" != 1 ] && pargs+=(-net "$cal")
      [ "$n" = 1 ] && pargs+=(-net 100gbit)
      if [ "$comp" = rgc ]; then
         # selection ns per element of the compressed tensors (those of >= 16384 elements)
         big=$(luajit -e "package.path='./lua/?.lua;./lua/?/init.lua;'..package.path
            local p = require('moontorch.perf').load('$prof'); local s = 0
            for _, l in ipairs(p.layers) do for _, g in ipairs(l.grads) do if g >= 16384 then s = s + g end end end
            print(s)")
         pargs+=(-selectionNs "$(awk -v s="$sel" -v b="$big" 'BEGIN { printf "%.4f", s * 1e6 / b }')")
      fi
      pred=$(luajit tools/predict.lua "${pargs[@]}" | sed -n 's/.*"step_ms":\([0-9.e+-]*\).*/\1/p')
      printf '%-5s %-10s %-6s %10.2f %10.2f %+7.1f%%\n' "$n" "$comp" "$alg" "$ms" "$pred" \
         "$(awk -v p="$pred" -v m="$ms" 'BEGIN { print 100 * (p - m) / m }')"
   done
done
echo "(ms per step: measured = the recipe's second epoch, seconds / batches; predicted = tools/predict.lua)"
rm -rf "$out"
