#!/usr/bin/env bash
# bench/netem.sh: data-parallel training steps of ResNet-50 and VGG-16 over a shaped TCP network,
# on one machine. Each "node" is a network namespace (mt0..mtN-1) with one veth to a bridge in a
# namespace of its own (mtbr); the host joins the bridge as .254. Every node's link is shaped with
# `tc` in both directions (tbf at RATE, plus netem delay where the kernel has sch_netem), so a node
# has a full-duplex NIC of RATE. Open MPI ranks run one per namespace (or --per-node per
# namespace: those talk over the namespace's loopback, unshaped, like GPUs of one machine) with
# MPI traffic on TCP only (pml ob1, btl tcp,self: no shared memory). Then bench/dp_step.lua times
# dist.DataParallel steps over the real gradient lists, for each algorithm, dense against
# residual gradient compression (RGC: top-k of each large gradient as index/value pairs).
#
#   sudo bench/netem.sh                                  # 4 ranks; 1 and 10 Gbit/s; both models;
#                                                        # dense (mpi,ring,multicolor) vs rgc 0.001
#   sudo bench/netem.sh --check                          # only the network check (C ping-pong)
#   sudo bench/netem.sh --ranks 4 --rates 1gbit,10gbit --delays 50us,20us \
#        --models resnet50,vgg16 --algorithms mpi,ring,multicolor,hierarchical,auto \
#        --compress none,rgc --density 0.001 --wire float --rgc-algorithms ring --overlap true \
#        --steps 3 --warmup 1 [--compute-ms 100] [--bucket-mb 25] [--per-node 1] [--group-size 2]
#   bench/netem.sh --parse ROWSFILE                      # no root: only the summary of saved rows
# The defaults (3 dense algorithms and rgc on ring, overlap on only, 3 steps after 1) keep a run
# near 6-8 minutes, most of it VGG-16's dense exchange at 1 Gbit/s (553 MB per allreduce); add
# hierarchical,auto or --overlap both for the full comparison (about twice as long).
# The rows are kept in ROWS_OUT (default /tmp/netem-rows.<pid>.txt) for a later --parse.
# Every option has an environment twin: RANKS RATES DELAYS MODELS ALGORITHMS STEPS WARMUP
# COMPUTE_MS BUCKET_MB PER_NODE GROUP_SIZE NS_PREFIX SUBNET MOONTORCH_BUILD LUAJIT COMPRESS
# DENSITY WIRE RGC_ALGORITHMS OVERLAP ROWS_OUT; flags win. Ranks get OMP_NUM_THREADS=1 and
# OMP_WAIT_POLICY=PASSIVE unless the environment sets them.
# A rate of `none` leaves that pass unshaped. Where the kernel has no sch_netem (tc says "qdisc
# kind is unknown"), the delay cannot be added: the script says so, shapes with tbf alone, and the
# latency is the veth/bridge path's own, which the check measures (15-30 us one-way on a VM). Needs root, iproute2 (`ip netns`, `tc`), mpirun
# and mpicc (Open MPI), luajit and a build of moontorch with the dist library (MOONTORCH_BUILD).
#
# How the MPI plumbing works: mpirun launches its local ranks itself, so each rank goes through a
# wrapper `ip netns exec <its namespace> luajit ...`. A rank inside a namespace cannot reach the
# host's loopback, where Open MPI 4's PMIx server (inside mpirun) listens by default; so mpirun
# is started with PMIX_MCA_ptl_tcp_remote_connections=1 and PMIX_MCA_ptl_tcp_if_include=SUBNET:
# its PMIx server then listens on the host's bridge address (SUBNET.254), which every namespace
# reaches over the bridge. The host link is not shaped; only startup and PMIx traffic use it.
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

RANKS=${RANKS:-4}
RATES=${RATES:-1gbit,10gbit}
DELAYS=${DELAYS:-50us,20us}
MODELS=${MODELS:-resnet50,vgg16}
ALGORITHMS=${ALGORITHMS:-mpi,ring,multicolor}
COMPRESS=${COMPRESS:-none,rgc}
DENSITY=${DENSITY:-0.001}
WIRE=${WIRE:-float}
RGC_ALGORITHMS=${RGC_ALGORITHMS:-ring}
OVERLAP=${OVERLAP:-true}
ROWS_OUT=${ROWS_OUT:-/tmp/netem-rows.$$.txt}
PARSE=
STEPS=${STEPS:-3}
WARMUP=${WARMUP:-1}
COMPUTE_MS=${COMPUTE_MS:-}
BUCKET_MB=${BUCKET_MB:-25}
PER_NODE=${PER_NODE:-1}
GROUP_SIZE=${GROUP_SIZE:-}
NS_PREFIX=${NS_PREFIX:-mt}
SUBNET=${SUBNET:-10.77.0}
LUAJIT=${LUAJIT:-luajit}
MOONTORCH_BUILD=${MOONTORCH_BUILD:-}
CHECK_ONLY=0
NO_CHECK=0
RUN_CMD=0
TIMEOUT=${TIMEOUT:-1800}
EXTRA=()

usage() {
   sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
   cat <<EOF
Options (defaults):
  --ranks N          MPI ranks ($RANKS)
  --per-node P       ranks per namespace ("node"); N must be a multiple ($PER_NODE)
  --rates LIST       comma-separated tc rates, e.g. 1gbit,10gbit or none ($RATES)
  --delays LIST      one-way delay per rate (one value: all rates) ($DELAYS)
  --models LIST      resnet50,vgg16 ($MODELS)
  --algorithms LIST  dense allreduce algorithms: mpi,ring,multicolor,hierarchical,auto ($ALGORITHMS)
  --compress LIST    none (dense), rgc (residual gradient compression), rgc-h (rgc's hierarchical
                     exchange), auto (DataParallel picks per bucket), powersgd, onebit, fp16
                     (per-bucket compressors) ($COMPRESS)
  --density D        rgc: fraction of each large gradient sent ($DENSITY)
  --wire W           rgc: float | half | bfloat16 values on the wire ($WIRE)
  --rgc-algorithms L algorithms for the rgc cases (only its dense small-layer part uses it) ($RGC_ALGORITHMS)
  --overlap O        true | false | both: DataParallel steps with overlap on/off ($OVERLAP)
  --rows-out FILE    where the rows are kept for --parse ($ROWS_OUT)
  --parse FILE       print the summary of a rows file (dp_step's -rows) and exit; no root needed
  --steps K          timed steps per case, median shown ($STEPS)
  --warmup W         untimed steps first ($WARMUP)
  --compute-ms MS    modelled backward time per step (default: per model, see dp_step.lua)
  --bucket-mb MB     DataParallel bucket size ($BUCKET_MB)
  --group-size G     ranks per group for dist.init (hierarchical) (default: per-node if >1, else 2)
  --prefix P         namespace name prefix ($NS_PREFIX: ${NS_PREFIX}0.., ${NS_PREFIX}br)
  --subnet A.B.C     /24 used inside the namespaces ($SUBNET)
  --build DIR        moontorch build directory (MOONTORCH_BUILD)
  --timeout S        limit per mpirun, seconds ($TIMEOUT)
  --check            network check only (shaping + MPI ping-pong), no DataParallel
  --no-check         skip the network check
  -- ARGS            passed on to bench/dp_step.lua
  --cmd -- PROG ARGS instead of dp_step.lua, run PROG ARGS on every rank at each rate (any MPI
                     program, e.g. an allreduce benchmark), over the same namespaces and shaping
EOF
}

while [ $# -gt 0 ]; do
   case "$1" in
      --ranks|-n) RANKS=$2; shift 2 ;;
      --per-node) PER_NODE=$2; shift 2 ;;
      --rates) RATES=$2; shift 2 ;;
      --delays|--delay) DELAYS=$2; shift 2 ;;
      --models) MODELS=$2; shift 2 ;;
      --algorithms) ALGORITHMS=$2; shift 2 ;;
      --compress) COMPRESS=$2; shift 2 ;;
      --density) DENSITY=$2; shift 2 ;;
      --wire) WIRE=$2; shift 2 ;;
      --rgc-algorithms) RGC_ALGORITHMS=$2; shift 2 ;;
      --overlap) OVERLAP=$2; shift 2 ;;
      --rows-out) ROWS_OUT=$2; shift 2 ;;
      --parse) PARSE=$2; shift 2 ;;
      --steps) STEPS=$2; shift 2 ;;
      --warmup) WARMUP=$2; shift 2 ;;
      --compute-ms) COMPUTE_MS=$2; shift 2 ;;
      --bucket-mb) BUCKET_MB=$2; shift 2 ;;
      --group-size) GROUP_SIZE=$2; shift 2 ;;
      --prefix) NS_PREFIX=$2; shift 2 ;;
      --subnet) SUBNET=$2; shift 2 ;;
      --build) MOONTORCH_BUILD=$2; shift 2 ;;
      --timeout) TIMEOUT=$2; shift 2 ;;
      --check) CHECK_ONLY=1; shift ;;
      --no-check) NO_CHECK=1; shift ;;
      --cmd) RUN_CMD=1; shift ;;
      -h|--help) usage; exit 0 ;;
      --) shift; EXTRA=("$@"); break ;;
      *) echo "netem.sh: unknown option '$1' (--help lists them)" >&2; exit 2 ;;
   esac
done

die() { echo "netem.sh: $*" >&2; exit 1; }

# ---- the summary of a rows file ------------------------------------------------------------------
# Lines from dp_step.lua -rows:
#   ROW|model|MB|rate|delay|algorithm|overlap|compute|step|comm|eff|compress|density|wire|bytes|selectMs
# (an older dp_step writes only the first 11 fields: read as compress none, bytes unknown) and
#   SKIP|model|rate|delay|algorithm|compress|reason
# Prints every row, then per model and rate the best dense step against the best rgc step, and per
# model the break-even bandwidth: comm-only ms (the exchange alone) of the best dense algorithm and
# of rgc, each fitted as a + b/bandwidth through the shaped rates (least squares; with two rates
# the line through both), and where the lines cross. An estimate: the exchange is not exactly
# linear in 1/bandwidth (latency terms, CPU-bound copies at high rates).
summarize() {
   awk -F'|' '
   function bits(r,   v) {   # tc rate string -> bits/s; 0 when unshaped or unreadable
      r = tolower(r)
      if (r ~ /^[0-9.]+gbit$/) { sub(/gbit$/, "", r); return r * 1e9 }
      if (r ~ /^[0-9.]+mbit$/) { sub(/mbit$/, "", r); return r * 1e6 }
      if (r ~ /^[0-9.]+kbit$/) { sub(/kbit$/, "", r); return r * 1e3 }
      if (r ~ /^[0-9.]+bit$/) { sub(/bit$/, "", r); return r + 0 }
      return 0
   }
   function mbs(b) { return b == "-" || b == "" ? "-" : sprintf("%.2f", b / 1048576) }
   function addkey(list, cnt, k,   i) { for (i = 1; i <= cnt; i++) if (list[i] == k) return cnt; list[cnt + 1] = k; return cnt + 1 }
   $1 == "SKIP" { skips[++nskip] = sprintf("%s rate %s, %s/%s: %s", $2, $3, $5, $6, $7); next }
   $1 != "ROW" { next }
   {
      model = $2; rate = $4; comp = (NF >= 12 && $12 != "") ? $12 : "none"
      bytes = NF >= 15 ? $15 : "-"; sel = NF >= 16 ? $16 : "-"
      nrow++
      line[nrow] = sprintf("%-9s %-7s %-7s %-9s %-13s %-8s %-7s %9s %9s %9s %7s %9s %6s", model, $3, rate, $5, $6, comp, $7,
         $8, $9, $10, $11, mbs(bytes), (comp == "none" || sel == "-" || $9 <= 0) ? "-" : sprintf("%.1f", 100 * sel / $9))
      nm = addkey(models, nm, model); nr = addkey(rates, nr, rate)
      if (comp != "none") nc = addkey(comps, nc, comp)
      k = model SUBSEP rate SUBSEP comp
      if (!(k in best) || $9 + 0 < best[k]) { best[k] = $9 + 0; bestAlg[k] = $6 "/" $7; bestBytes[k] = bytes; bestSel[k] = sel }
      if (!(k in comm) || $10 + 0 < comm[k]) comm[k] = $10 + 0
   }
   END {
      if (nrow == 0 && nskip == 0) { print "(no ROW lines)"; exit 1 }
      printf "%-9s %-7s %-7s %-9s %-13s %-8s %-7s %9s %9s %9s %7s %9s %6s\n", "model", "MB", "rate", "delay", "algorithm",
         "compress", "overlap", "compute", "step", "comm-only", "eff", "MiB/step", "sel%"
      for (i = 1; i <= nrow; i++) print line[i]
      print "(ms; MiB/step = what a rank sends per step: rgc from dp.stats.bytes, slowest rank; none = 4 x params x 2(N-1)/N,"
      print " a ring allreduce; sel% = rgc selection time / step time; eff = compute / step)"
      for (i = 1; i <= nskip; i++) print "skipped: " skips[i]
      for (c = 1; c <= nc; c++) {
      cp = comps[c]
      print ""
      print "dense vs " cp ": best step ms per model and rate (dense: best algorithm/overlap run; " cp ": best " cp " run)"
      printf "%-9s %-7s %10s %-16s %10s %-16s %8s %11s %11s %6s\n", "model", "rate", "dense ms", "(alg/overlap)", cp " ms",
         "(alg/overlap)", "speedup", "dense MiB", cp " MiB", "sel%"
      for (i = 1; i <= nm; i++) for (j = 1; j <= nr; j++) {
         kd = models[i] SUBSEP rates[j] SUBSEP "none"; kr = models[i] SUBSEP rates[j] SUBSEP cp
         if (!(kd in best) && !(kr in best)) continue
         d = (kd in best) ? sprintf("%.1f", best[kd]) : "-"; r = (kr in best) ? sprintf("%.1f", best[kr]) : "-"
         sp = ((kd in best) && (kr in best) && best[kr] > 0) ? sprintf("%.2fx", best[kd] / best[kr]) : "-"
         printf "%-9s %-7s %10s %-16s %10s %-16s %8s %11s %11s %6s\n", models[i], rates[j], d,
            (kd in best) ? "(" bestAlg[kd] ")" : "", r, (kr in best) ? "(" bestAlg[kr] ")" : "", sp,
            (kd in best) ? mbs(bestBytes[kd]) : "-", (kr in best) ? mbs(bestBytes[kr]) : "-",
            ((kr in best) && bestSel[kr] != "-" && best[kr] > 0) ? sprintf("%.1f", 100 * bestSel[kr] / best[kr]) : "-"
      }
      print "(speedup = dense ms / " cp " ms: above 1, " cp " is faster)"
      print ""
      print "break-even bandwidth, an ESTIMATE: comm-only ms of dense (best algorithm) and of " cp ", each fitted as"
      print "a + b/bandwidth through the shaped rates measured, extrapolated to where they are equal"
      for (i = 1; i <= nm; i++) {
         n = 0; sx = sxx = sd = sxd = sr = sxr = 0
         for (j = 1; j <= nr; j++) {
            kd = models[i] SUBSEP rates[j] SUBSEP "none"; kr = models[i] SUBSEP rates[j] SUBSEP cp
            if (!(kd in comm) || !(kr in comm) || bits(rates[j]) <= 0) continue
            x = 1e9 / bits(rates[j])   # seconds per Gbit
            n++; sx += x; sxx += x * x; sd += comm[kd]; sxd += x * comm[kd]; sr += comm[kr]; sxr += x * comm[kr]
            xs = x
         }
         den = n * sxx - sx * sx
         if (n < 2 || den <= 1e-12 * (sxx > 0 ? sxx : 1) * n) {
            printf "%-9s needs dense and %s comm-only times at two or more different shaped rates (has %d)\n", models[i],
               cp, n
            continue
         }
         bd = (n * sxd - sx * sd) / den; ad = (sd - bd * sx) / n
         br = (n * sxr - sx * sr) / den; ar = (sr - br * sx) / n
         printf "%-9s dense %.1f + %.1f/G ms, %s %.1f + %.1f/G ms (G = Gbit/s): ", models[i], ad, bd, cp, ar, br
         if (bd == br) { print "parallel lines, no break-even"; continue }
         xc = (ar - ad) / (bd - br)
         if (xc > 0) {
            printf "break-even ~%.2f Gbit/s (estimate); %s is faster below it, %s above\n", 1 / xc,
               (bd > br) ? cp : "dense", (bd > br) ? "dense" : cp
         } else {
            # no crossing at a positive bandwidth: the sign of dense - compressed is the same everywhere
            printf "no break-even at any bandwidth (estimate): %s is faster at every rate\n",
               ((ad - ar) + (bd - br) * xs > 0) ? cp : "dense"
         }
      }
      }
   }' "$1"
}

if [ -n "$PARSE" ]; then
   [ -r "$PARSE" ] || die "cannot read rows file '$PARSE'"
   summarize "$PARSE"
   exit $?
fi

# ---- preconditions -------------------------------------------------------------------------------
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, veth, tc); run it with sudo"
command -v ip >/dev/null || die "iproute2's 'ip' is not installed"
command -v tc >/dev/null || die "iproute2's 'tc' is not installed"
ip netns list >/dev/null 2>&1 || die "'ip netns' does not work here (no network namespace support?)"
command -v mpirun >/dev/null || die "mpirun (Open MPI) is not installed"
command -v mpicc >/dev/null || die "mpicc (Open MPI) is not installed"
mpirun --version 2>/dev/null | grep -q 'Open MPI' || die "mpirun is not Open MPI (the PMIx/MCA settings here are Open MPI's)"
[[ "$RANKS" =~ ^[0-9]+$ ]] && [ "$RANKS" -ge 2 ] || die "--ranks must be an integer >= 2"
[[ "$PER_NODE" =~ ^[0-9]+$ ]] && [ "$PER_NODE" -ge 1 ] && [ $((RANKS % PER_NODE)) = 0 ] \
   || die "--per-node must divide --ranks"
[[ "$SUBNET" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "--subnet must look like 10.77.0"
NODES=$((RANKS / PER_NODE))
[ "$NODES" -le 250 ] || die "at most 250 namespaces"
[ -n "$GROUP_SIZE" ] || { if [ "$PER_NODE" -gt 1 ]; then GROUP_SIZE=$PER_NODE; else GROUP_SIZE=2; fi; }
CIDR="$SUBNET.0/24"
HOSTIP="$SUBNET.254"
BRNS="${NS_PREFIX}br"
HOSTIF="${NS_PREFIX}host"

IFS=, read -r -a rates <<<"$RATES"
IFS=, read -r -a delays <<<"$DELAYS"
[ ${#rates[@]} -ge 1 ] || die "--rates is empty"
for ((k = ${#delays[@]}; k < ${#rates[@]}; k++)); do delays[k]=${delays[$(( ${#delays[@]} - 1 ))]:-0}; done

for ((i = 0; i < NODES; i++)); do
   ip netns list | grep -qw "^${NS_PREFIX}$i" && die "namespace ${NS_PREFIX}$i already exists (another run? pick --prefix)"
done
ip netns list | grep -qw "^$BRNS" && die "namespace $BRNS already exists (another run? pick --prefix)"
ip link show "$HOSTIF" >/dev/null 2>&1 && die "interface $HOSTIF already exists (another run? pick --prefix)"
[ -z "$(ip -4 route show "$CIDR")" ] || die "$CIDR is already routed on this host; pick --subnet"
ip -4 addr show | grep -q "inet $SUBNET\." && die "an address in $CIDR is already in use here; pick --subnet"

# ---- namespaces: created here, removed on any exit ------------------------------------------------
made=()
cleanup() {
   local ns pid
   # our mpirun (under `timeout`, which passes the signal on), if one is running
   [ -n "${MPIRUN_PID:-}" ] && kill "$MPIRUN_PID" 2>/dev/null && sleep 1
   for ns in "${made[@]}"; do
      # processes left in our namespaces are our ranks (e.g. after a timeout)
      for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null; done
   done
   for ns in "${made[@]}"; do ip netns del "$ns" 2>/dev/null; done
   ip link del "$HOSTIF" 2>/dev/null
   [ -n "${tmp:-}" ] && rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tmp=$(mktemp -d /tmp/netem-bench.XXXXXX)

setup() {
   ip netns add "$BRNS" && made+=("$BRNS") || die "cannot create namespace $BRNS"
   ip -n "$BRNS" link set lo up
   ip -n "$BRNS" link add br0 type bridge stp_state 0 forward_delay 0 || die "cannot create a bridge"
   ip -n "$BRNS" link set br0 up
   local i ns
   for ((i = 0; i < NODES; i++)); do
      ns="${NS_PREFIX}$i"
      ip netns add "$ns" && made+=("$ns") || die "cannot create namespace $ns"
      ip -n "$BRNS" link add "p$i" type veth peer name eth0 netns "$ns" || die "cannot create veth for $ns"
      ip -n "$BRNS" link set "p$i" master br0 up
      ip -n "$ns" addr add "$SUBNET.$((i + 1))/24" dev eth0
      ip -n "$ns" link set eth0 up
      ip -n "$ns" link set lo up
   done
   ip link add "$HOSTIF" type veth peer name ph netns "$BRNS" || die "cannot create the host veth"
   ip -n "$BRNS" link set ph master br0 up
   ip addr add "$HOSTIP/24" dev "$HOSTIF"
   ip link set "$HOSTIF" up
}

HAVE_NETEM=0
probe_netem() {
   if ip netns exec "${NS_PREFIX}0" tc qdisc add dev eth0 root netem delay 1us 2>/dev/null; then
      HAVE_NETEM=1
      ip netns exec "${NS_PREFIX}0" tc qdisc del dev eth0 root
   fi
}

# tc's rate in bits/s ("1gbit", "500mbit", "10gbit")
rate_bits() {
   local r=${1,,}
   case "$r" in
      *gbit) echo $(( ${r%gbit} * 1000000000 )) ;;
      *mbit) echo $(( ${r%mbit} * 1000000 )) ;;
      *kbit) echo $(( ${r%kbit} * 1000 )) ;;
      *bit) echo "${r%bit}" ;;
      *) return 1 ;;
   esac
}

# shape every node's link, both directions: eth0 in the node (what it sends) and its bridge port
# (what it receives). The one-way delay goes on the sending side only.
shape() {
   local rate=$1 delay=$2 i ns bits burst
   for ((i = 0; i < NODES; i++)); do
      ns="${NS_PREFIX}$i"
      ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null
      ip netns exec "$BRNS" tc qdisc del dev "p$i" root 2>/dev/null
   done
   [ "$rate" = none ] && return 0
   bits=$(rate_bits "$rate") || die "cannot read rate '$rate' (use e.g. 1gbit, 500mbit)"
   # a bucket of ~1 ms at the rate, at least 64 KiB (one GSO super-packet)
   burst=$(( bits / 8 / 1000 )); [ "$burst" -ge 65536 ] || burst=65536
   for ((i = 0; i < NODES; i++)); do
      ns="${NS_PREFIX}$i"
      if [ "$HAVE_NETEM" = 1 ] && [ "$delay" != 0 ]; then
         ip netns exec "$ns" tc qdisc add dev eth0 root handle 1: netem delay "$delay" limit 100000 \
            || die "tc netem on $ns failed"
         ip netns exec "$ns" tc qdisc add dev eth0 parent 1:1 handle 10: tbf rate "$rate" burst "$burst" latency 50ms \
            || die "tc tbf on $ns failed"
      else
         ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency 50ms \
            || die "tc tbf on $ns failed"
      fi
      ip netns exec "$BRNS" tc qdisc add dev "p$i" root tbf rate "$rate" burst "$burst" latency 50ms \
         || die "tc tbf on $BRNS/p$i failed"
   done
}

delay_label() {
   if [ "$1" = none ]; then echo "-"
   elif [ "$HAVE_NETEM" = 1 ]; then echo "$2"
   else echo "native"; fi
}

# ---- mpirun, each rank in its node's namespace --------------------------------------------------
MPI_ARGS=(--allow-run-as-root --oversubscribe --bind-to none -np "$RANKS"
   --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include "$CIDR"
   --mca coll '^sm,han' --mca osc '^sm,ucx'
   --mca oob_tcp_if_include "$CIDR" --mca mpi_yield_when_idle 1)
MPIRUN_PID=
run_mpi() {
   # PMIx server (in mpirun) on the bridge address, so ranks inside namespaces can reach it.
   # In the background and waited for, so that a signal to this script runs its trap at once.
   PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include="$CIDR" \
      timeout --kill-after=10 "$TIMEOUT" mpirun "${MPI_ARGS[@]}" \
      bash -c 'exec ip netns exec "'"$NS_PREFIX"'$((OMPI_COMM_WORLD_RANK / '"$PER_NODE"'))" "$@"' _ "$@" &
   MPIRUN_PID=$!
   wait "$MPIRUN_PID"
   local rc=$?
   MPIRUN_PID=
   return $rc
}

tx_bytes() { ip netns exec "${NS_PREFIX}$1" cat /sys/class/net/eth0/statistics/tx_bytes; }

# ---- network check: a C ping-pong between node 0 and node 1 (two ranks), and MPI_Allreduce on all ----
cat >"$tmp/pp.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
   MPI_Init(&argc, &argv);
   int r, n;
   MPI_Comm_rank(MPI_COMM_WORLD, &r);
   MPI_Comm_size(MPI_COMM_WORLD, &n);
   long bytes = argc > 1 ? atol(argv[1]) : 100000000L;
   int peer = argc > 2 ? atoi(argv[2]) : 1;
   char *buf = malloc(bytes);
   memset(buf, 0, bytes);
   if (peer < 0) { /* allreduce mode: every rank, float32 sum in place, best of 3 */
      double best = 1e9;
      for (int k = 0; k < 3; k++) {
         MPI_Barrier(MPI_COMM_WORLD);
         double t0 = MPI_Wtime();
         MPI_Allreduce(MPI_IN_PLACE, buf, (int)(bytes / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
         double t = MPI_Wtime() - t0, tmax;
         MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
         if (tmax < best) best = tmax;
      }
      /* bus bandwidth: what each rank's link carries in a bandwidth-optimal allreduce */
      if (r == 0) printf("AR %d %ld %.4f %.3f\n", n, bytes, best, 2.0 * (n - 1) / n * bytes * 8 / best / 1e9);
      MPI_Finalize();
      return 0;
   }
   int iters = 200;
   double lat = 1e9, best = 1e9;
   for (int k = 0; k < 3; k++) { /* 1-byte ping-pong, best of 3 runs of 200 */
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int i = 0; i < iters; i++) {
         if (r == 0) {
            MPI_Send(buf, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
         } else if (r == peer) {
            MPI_Recv(buf, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
         }
      }
      double t = (MPI_Wtime() - t0) / iters / 2 * 1e6;
      if (t < lat) lat = t;
   }
   for (int k = 0; k < 3; k++) { /* `bytes` from rank 0 to the peer, which acks; best of 3 */
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      if (r == 0) {
         MPI_Send(buf, (int)bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
         MPI_Recv(buf, 1, MPI_CHAR, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (r == peer) {
         MPI_Recv(buf, (int)bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
         MPI_Send(buf, 1, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
      }
      double t = MPI_Wtime() - t0;
      if (t < best) best = t;
   }
   if (r == 0) printf("PP %d %.1f %ld %.4f %.3f\n", n, lat, bytes, best, bytes * 8 / best / 1e9);
   MPI_Finalize();
   return 0;
}
EOF
mpicc -O2 -o "$tmp/pp" "$tmp/pp.c" || die "mpicc failed on the ping-pong check"

setup
probe_netem
if [ "$HAVE_NETEM" = 0 ]; then
   echo "note: this kernel has no sch_netem (tc: 'qdisc kind is unknown'), so no delay is added:"
   echo "      links are shaped with tbf only and the latency is the veth/bridge path's own (measured below)."
fi
echo "topology: $NODES namespaces ${NS_PREFIX}0..${NS_PREFIX}$((NODES - 1)) ($SUBNET.1..$SUBNET.$NODES) on bridge $BRNS/br0," \
   "host $HOSTIF $HOSTIP; $RANKS ranks, $PER_NODE per namespace; MPI: pml ob1, btl tcp,self"

check_failed=0
if [ "$NO_CHECK" = 0 ] && [ "$NODES" -lt 2 ]; then
   echo "network check skipped: it needs two namespaces (--ranks / --per-node gives $NODES)"
elif [ "$NO_CHECK" = 0 ]; then
   MB=100000000
   echo
   echo "network check over TCP, best of 3: a 100 MB message and 1-byte ping-pongs from ${NS_PREFIX}0 to ${NS_PREFIX}1;"
   echo "then MPI_Allreduce (Open MPI's own choice of algorithm) of 100 MB float32 over all $RANKS ranks"
   printf '%-8s %-8s %11s %9s %8s %9s %9s | %-13s %8s %9s\n' rate delay "1-way us" "100MB s" "Gbit/s" "expect s" \
      "veth MB" "allreduce" "s" "bus Gb/s"
   save_pn=$PER_NODE save_np=$RANKS
   for ((k = 0; k < ${#rates[@]}; k++)); do
      shape "${rates[k]}" "${delays[k]}"
      # two ranks, one per namespace
      PER_NODE=1 MPI_ARGS[5]=2
      tx0=$(tx_bytes 0)
      out=$(run_mpi "$tmp/pp" "$MB" 1 2>&1)
      rc=$?
      tx1=$(tx_bytes 0)
      PER_NODE=$save_pn MPI_ARGS[5]=$save_np
      line=$(grep '^PP ' <<<"$out")
      if [ $rc = 0 ] && [ -n "$line" ]; then
         out=$(run_mpi "$tmp/pp" "$MB" -1 2>&1)
         rc=$?
         arline=$(grep '^AR ' <<<"$out")
         [ -n "$arline" ] || rc=1
      fi
      if [ $rc != 0 ] || [ -z "$line" ]; then
         echo "$out" | tail -20
         echo "netem.sh: the MPI check failed at rate ${rates[k]} (rc $rc)" >&2
         check_failed=1
         break
      fi
      read -r _ _ lat bytes secs gbps <<<"$line"
      read -r _ n _ arsecs arbus <<<"$arline"
      if [ "${rates[k]}" = none ]; then expect="-"
      else expect=$(awk -v b="$bytes" -v r="$(rate_bits "${rates[k]}")" 'BEGIN { printf "%.3f", b * 8 / r }'); fi
      printf '%-8s %-8s %11s %9s %8s %9s %9s | %-13s %8s %9s\n' "${rates[k]}" \
         "$(delay_label "${rates[k]}" "${delays[k]}")" "$lat" "$secs" "$gbps" "$expect" "$(( (tx1 - tx0) / 1000000 ))" \
         "$n ranks" "$arsecs" "$arbus"
   done
   echo "(veth MB: bytes ${NS_PREFIX}0 sent on its veth during the ping-pong run, 3 x 100 MB + small: the traffic is on"
   echo " TCP over the shaped veth. bus Gb/s = 2(n-1)/n x bytes / time, at most the rate for any allreduce;"
   echo " well under the rate at high rates means the CPUs, not the links, bound the exchange.)"
   [ "$check_failed" = 0 ] || exit 1
fi
[ "$CHECK_ONLY" = 1 ] && exit 0

if [ "$RUN_CMD" = 1 ]; then
   [ ${#EXTRA[@]} -ge 1 ] || die "--cmd needs a program after --"
   status=0
   for ((k = 0; k < ${#rates[@]}; k++)); do
      echo
      echo "=== rate ${rates[k]}, delay $(delay_label "${rates[k]}" "${delays[k]}"): $RANKS ranks: ${EXTRA[*]}"
      shape "${rates[k]}" "${delays[k]}"
      run_mpi "${EXTRA[@]}" || status=1
   done
   exit $status
fi

# ---- DataParallel steps, per rate --------------------------------------------------------------------
if [ -z "$MOONTORCH_BUILD" ]; then
   for d in "$root/build" /tmp/b-bench; do [ -f "$d/libmoontorch.so" ] && MOONTORCH_BUILD=$d && break; done
fi
[ -n "$MOONTORCH_BUILD" ] || die "set MOONTORCH_BUILD (or --build) to a moontorch build directory"
MOONTORCH_BUILD=$(cd "$MOONTORCH_BUILD" && pwd)
export MOONTORCH_BUILD
# one OpenMP thread per rank, sleeping when idle: every rank of this machine shares its cores, and
# spinning OpenMP workers of one thread starved the communication thread of the same rank (on 2
# cores, 2 ranks: a float16 allreduce 2.5x slower than a float32 one of twice the bytes)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
MPI_ARGS+=(-x MOONTORCH_BUILD -x OMP_NUM_THREADS -x OMP_WAIT_POLICY -wdir "$root")

rows="$tmp/rows"
: >"$rows"
status=0
for ((k = 0; k < ${#rates[@]}; k++)); do
   echo
   echo "=== rate ${rates[k]}, delay $(delay_label "${rates[k]}" "${delays[k]}"): $RANKS ranks, models $MODELS"
   shape "${rates[k]}" "${delays[k]}"
   args=(-models "$MODELS" -algorithms "$ALGORITHMS" -steps "$STEPS" -warmup "$WARMUP"
      -compress "$COMPRESS" -density "$DENSITY" -wire "$WIRE" -rgcAlgorithms "$RGC_ALGORITHMS" -overlap "$OVERLAP"
      -bucketMB "$BUCKET_MB" -groupSize "$GROUP_SIZE" -rate "${rates[k]}"
      -delay "$(delay_label "${rates[k]}" "${delays[k]}")")
   [ -n "$COMPUTE_MS" ] && args+=(-computeMs "$COMPUTE_MS")
   run_mpi "$LUAJIT" bench/dp_step.lua "${args[@]}" -rows "$rows" "${EXTRA[@]}"
   rc=$?
   if [ "$rc" != 0 ]; then
      echo "netem.sh: the DataParallel run at rate ${rates[k]} failed (rc $rc)" >&2
      status=1
   fi
done

if [ -s "$rows" ]; then
   cp "$rows" "$ROWS_OUT" 2>/dev/null && echo && echo "rows kept in $ROWS_OUT (bench/netem.sh --parse $ROWS_OUT reprints this)"
   echo
   echo "summary: $RANKS ranks ($PER_NODE per node), median of $STEPS steps after $WARMUP warm-up, bucket ${BUCKET_MB} MB;"
   echo "rgc: density $DENSITY, wire $WIRE, on $RGC_ALGORITHMS"
   echo "efficiency = compute ms / step ms (1 = communication fully hidden; the single-worker step is the compute)"
   summarize "$rows" || status=1
fi
exit $status
