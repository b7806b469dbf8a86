#!/usr/bin/env bash
# bench/ssp.sh: bulk-synchronous against stale-synchronous training through the parameter server
# (recipes/fashion_mnist.lua -ps): final test accuracy, wall time and training time to a target
# accuracy, for each staleness bound, with no straggler, with worker 1 slowed (-straggler 1:F:
# each of its steps sleeps F-1 times its compute) and with a transient straggler (any:F: one
# worker per clock, drawn anew, slowed so), on shared memory and, with --rates (as
# root), over bench/netem.sh's namespaces with tc-shaped links. BSP (s = 0) of the same network
# and straggler is the peer: the ratio column is wall time / BSP's.
#
#   bench/ssp.sh                                   # s = 0,1,3,10; stragglers 1,1.5,3,any:2; shared memory
#   sudo bench/ssp.sh --rates 1gbit --stragglers 1,3,any:2 --staleness 0,3   # over bench/netem.sh
#   bench/ssp.sh --staleness 0,3 --stragglers 1,2 --ranks 4 --servers 2 --evals 7 --every 67 \
#        --target 85 [--rates none,1gbit] [-- more recipe options]
#
# A run is --evals "epochs" of --every batches (batch 128: 7 x 67 = 469 is one epoch of
# Fashion-MNIST), each followed by validation on 2000 test images, so the accuracy is seen
# along the way; "to target" is the training seconds (log.csv's, validation left out) until the
# first validation at or above --target. Defaults: two epochs per run, about 25 minutes on shared
# memory with 4 ranks on 2 cores.
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

STALENESS=0,1,3,10
STRAGGLERS=1,1.5,3,any:2
RANKS=4
SERVERS=2
EVALS=14
EVERY=67
TARGET=85
RATES=none
EXTRA=()

while [ $# -gt 0 ]; do
   case "$1" in
      --staleness) STALENESS=$2; shift 2 ;;
      --stragglers) STRAGGLERS=$2; shift 2 ;;
      --ranks) RANKS=$2; shift 2 ;;
      --servers) SERVERS=$2; shift 2 ;;
      --evals) EVALS=$2; shift 2 ;;
      --every) EVERY=$2; shift 2 ;;
      --target) TARGET=$2; shift 2 ;;
      --rates) RATES=$2; shift 2 ;;
      -h|--help) sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
      --) shift; EXTRA=("$@"); break ;;
      *) echo "ssp.sh: unknown option '$1' (--help)" >&2; exit 2 ;;
   esac
done

if [ -z "${MOONTORCH_BUILD:-}" ]; then
   for d in "$root/build" /tmp/b-bench; do [ -f "$d/libmoontorch.so" ] && MOONTORCH_BUILD=$d && break; done
fi
[ -n "${MOONTORCH_BUILD:-}" ] || { echo "ssp.sh: set MOONTORCH_BUILD to a moontorch build" >&2; exit 1; }
export MOONTORCH_BUILD
cd "$root" || exit 1
tmp=$(mktemp -d /tmp/ssp-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

IFS=, read -r -a stales <<<"$STALENESS"
IFS=, read -r -a slows <<<"$STRAGGLERS"
IFS=, read -r -a rates <<<"$RATES"

# one run: prints "final_acc wall_s to_target_s staleness_mean wait_ms"
run() {
   local rate=$1 s=$2 slow=$3 dir="$tmp/run-$1-$2-$3" t0 t1 rc
   local args=(luajit recipes/fashion_mnist.lua -ps -servers "$SERVERS" -staleness "$s" -nEpochs "$EVALS"
      -limitBatches "$EVERY" -limitTestBatches 4 -batchSize 128 -width 16 -seed 3 -threads 2 -quiet -save "$dir"
      "${EXTRA[@]}")
   case "$slow" in
      1) ;;
      any:*) args+=(-straggler "$slow") ;;
      *) args+=(-straggler "1:$slow") ;;
   esac
   t0=$(date +%s.%N)
   if [ "$rate" = none ]; then
      OMP_WAIT_POLICY=PASSIVE OMPI_MCA_mpi_yield_when_idle=1 mpirun --allow-run-as-root --oversubscribe \
         -np "$RANKS" -x MOONTORCH_BUILD -x OMP_WAIT_POLICY "${args[@]}" >"$dir.out" 2>&1
   else
      "$here/netem.sh" --ranks "$RANKS" --rates "$rate" --delays 50us --no-check --cmd -- \
         env MOONTORCH_BUILD="$MOONTORCH_BUILD" OMP_WAIT_POLICY=PASSIVE "${args[@]}" >"$dir.out" 2>&1
   fi
   rc=$?
   t1=$(date +%s.%N)
   if [ $rc != 0 ] || [ ! -s "$dir/log.csv" ]; then
      tail -5 "$dir.out" >&2
      echo "- - - - -"
      return
   fi
   awk -F, -v wall="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" -v target="$TARGET" '
      NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
      { secs += $col["seconds"]; acc = $col["test_acc"] * 100
        if (hit == "" && acc >= target) hit = secs
        st += $col["ps_staleness"]; wait += $col["ps_wait_ms"]; n++ }
      END { printf "%.2f %.0f %s %.2f %.1f\n", acc, wall, hit == "" ? "-" : sprintf("%.0f", hit), st / n, wait / n }
   ' "$dir/log.csv"
}

echo "bench/ssp.sh: $RANKS workers, $SERVERS servers, $EVALS x $EVERY batches of 128 (small CNN, width 16), target ${TARGET}%"
echo "$(date -u +%Y-%m-%d), $(nproc) cores; final accuracy on 2000 test images; ratio = wall / BSP (s = 0) wall"
printf '%-7s %-9s %-5s | %9s %8s %11s %7s | %10s %8s\n' net straggler s "final %" "wall s" "to ${TARGET}% s" ratio \
   "staleness" "wait ms"
for rate in "${rates[@]}"; do
   for slow in "${slows[@]}"; do
      bsp=
      for s in "${stales[@]}"; do
         read -r acc wall hit st wait < <(run "$rate" "$s" "$slow")
         [ "$s" = 0 ] && bsp=$wall
         ratio=-
         [ -n "$bsp" ] && [ "$wall" != - ] && ratio=$(awk -v a="$wall" -v b="$bsp" 'BEGIN { printf "%.2f", a / b }')
         printf '%-7s %-9s %-5s | %9s %8s %11s %7s | %10s %8s\n' "$rate" "$slow" "$s" "$acc" "$wall" "$hit" "$ratio" \
            "$st" "$wait"
      done
   done
done
