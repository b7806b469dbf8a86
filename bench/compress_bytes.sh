#!/usr/bin/env bash
# bench/compress_bytes.sh: bench/compress_bytes.lua on 2, 4 and 8 ranks of this machine (mpirun
# --oversubscribe), then per compressor the growth of the bytes a rank receives per step with the
# rank count: the exponent b of recv ~ N^b fitted through the rank counts (least squares on
# logs; b = 1: linear, as a flat allgather; b near 0: bounded, as an allreduce).
#   bench/compress_bytes.sh [--ranks 2,4,8] [--model resnet50] [--compress none,rgc,rgc-h,powersgd,onebit,fp16]
#                           [--shared 0] [--groupSize 2]
# rgc-h: rgc's hierarchical exchange in nodes of --groupSize ranks; --shared: the part of the
# gradient common to every rank (bench/compress_bytes.lua)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/.."
RANKS=2,4,8
MODEL=resnet50
COMPRESS=none,rgc,rgc-h,powersgd,onebit,fp16
SHARED=0
GROUP=2
while [ $# -gt 0 ]; do
  case $1 in
    --ranks) RANKS=$2; shift 2 ;;
    --model) MODEL=$2; shift 2 ;;
    --compress) COMPRESS=$2; shift 2 ;;
    --shared) SHARED=$2; shift 2 ;;
    --groupSize) GROUP=$2; shift 2 ;;
    *) echo "compress_bytes.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
for n in ${RANKS//,/ }; do
  OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE OMPI_MCA_mpi_yield_when_idle=1 \
    mpirun --allow-run-as-root --oversubscribe -np "$n" -x MOONTORCH_BUILD \
    luajit bench/compress_bytes.lua -model "$MODEL" -compress "$COMPRESS" -shared "$SHARED" \
    -groupSize "$GROUP" -rows "$rows"
done
for col in 6 8; do
  echo
  [ "$col" = 6 ] && what="the largest over the ranks" || what="the mean over the ranks"
  echo "growth of the bytes a rank receives per step ($what) with the rank count N (fit of recv ~ N^b)"
  awk -F'|' -v col="$col" '$1 == "BYTES" {
    key = $4; if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    k[key]++; x = log($3); y = log($col > 0 ? $col : 1)
    sx[key] += x; sy[key] += y; sxx[key] += x * x; sxy[key] += x * y
    cell[key, $3] = $col
    if (!($3 in rk)) { rk[$3] = 1; ranks[++nr] = $3 }
  }
  END {
    printf "%-9s", "compress"; for (j = 1; j <= nr; j++) printf " %11s", "N=" ranks[j] " MiB"; printf " %8s\n", "b"
    for (i = 1; i <= n; i++) {
      c = order[i]; m = k[c]; den = m * sxx[c] - sx[c] * sx[c]
      printf "%-9s", c
      for (j = 1; j <= nr; j++) printf " %11.3f", cell[c, ranks[j]] / 1048576
      if (m >= 2 && den > 0) printf " %8.2f\n", (m * sxy[c] - sx[c] * sy[c]) / den; else printf " %8s\n", "-"
    }
  }' "$rows"
done
