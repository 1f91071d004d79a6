#!/bin/sh
# A CLI decision on a JetStream store, end to end: one `warrant refuse --yes ID --reason R` per
# process (connect, pull the replica, sign, append with compare-and-set, write the decision to
# the bucket), timed from start to exit, on a three-node cluster (R3, file storage, loopback)
# started here, beside the same on one server. Each run proposes PACKETS packets first
# (`propose`, one process each), then decides them one after another; with two binaries (an
# older build, say) their decisions alternate, on the same store.
#   cargo build --release && sh examples/jetstream_decide.sh [PACKETS] [target/release/warrant [OTHER]]
# Prints, per store and binary, the median and 90th percentile in ms; each decision must exit 0
# and `verify` must be valid at the end, or the script fails.
set -eu
N=${1:-40}
BIN_A=$(realpath "${2:-target/release/warrant}")
BIN_B=${3:+$(realpath "$3")}
DIR=$(mktemp -d)
PIDS=""
trap 'for p in $PIDS; do kill "$p" 2>/dev/null || true; done; wait; rm -rf "$DIR"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ready() { # log file
  i=0; until grep -q "Server is ready" "$1" 2>/dev/null; do i=$((i+1)); [ $i -lt 300 ] || { cat "$1"; exit 1; }; sleep 0.1; done
}
# One server.
P0=$(port)
nats-server -js -a 127.0.0.1 -p "$P0" -sd "$DIR/single" >"$DIR/single.log" 2>&1 & PIDS="$PIDS $!"
ready "$DIR/single.log"
# Three nodes.
C1=$(port); C2=$(port); C3=$(port); R1=$(port); R2=$(port); R3=$(port)
for i in 1 2 3; do
  eval "c=\$C$i; r=\$R$i"
  routes=""
  for j in 1 2 3; do [ "$j" = "$i" ] || { eval "rr=\$R$j"; routes="${routes:+$routes,}nats://127.0.0.1:$rr"; }; done
  nats-server -js -a 127.0.0.1 -p "$c" -sd "$DIR/n$i" -n "n$i" --cluster_name bench --cluster "nats://127.0.0.1:$r" \
    --routes "$routes" >"$DIR/n$i.log" 2>&1 & PIDS="$PIDS $!"
done
for i in 1 2 3; do ready "$DIR/n$i.log"; done
i=0; until cat "$DIR"/n?.log | grep -q "JetStream cluster new metadata leader"; do i=$((i+1)); [ $i -lt 300 ] || exit 1; sleep 0.1; done

export WARRANT_CONFIG="$DIR/cfg" WARRANT_PRINCIPAL=alice XDG_DATA_HOME="$DIR/data"
"$BIN_A" keys init --no-passphrase >/dev/null 2>&1
stats() { # label file
  python3 - "$1" "$2" <<'PY'
import sys, statistics
xs = sorted(float(l) for l in open(sys.argv[2]) if l.strip())
p = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))]
print(f"{sys.argv[1]:<44} n={len(xs):<4} median {statistics.median(xs):7.1f} ms   p90 {p(0.9):7.1f} ms")
PY
}
run() { # label url replicas
  label=$1; url=$2
  "$BIN_A" --store "$url" init --replicas "$3" >/dev/null
  k=0
  while [ $k -lt "$N" ]; do
    "$BIN_A" --store "$url" propose --class draft.compose --agent bench --summary "s $k" --id "d-$k" >/dev/null
    k=$((k+1))
  done
  "$BIN_A" --store "$url" list >/dev/null
  : >"$DIR/a.txt"; : >"$DIR/b.txt"
  k=0
  while [ $k -lt "$N" ]; do
    bin=$BIN_A; out=$DIR/a.txt
    if [ -n "$BIN_B" ] && [ $((k % 2)) = 1 ]; then bin=$BIN_B; out=$DIR/b.txt; fi
    t0=$(date +%s%N)
    "$bin" --store "$url" refuse --yes "d-$k" --reason "benchmark" >/dev/null 2>&1 || { echo "refuse d-$k failed"; exit 1; }
    t1=$(date +%s%N)
    echo "$(( (t1 - t0) / 1000 ))" | awk '{print $1/1000}' >>"$out"
    k=$((k+1))
  done
  "$BIN_A" --store "$url" verify >/dev/null || { echo "verify failed"; exit 1; }
  stats "$label, $(basename "$BIN_A") ${BIN_B:+(A)}" "$DIR/a.txt"
  [ -z "$BIN_B" ] || stats "$label, $(basename "$BIN_B") (B)" "$DIR/b.txt"
}
run "one server: refuse --yes per process" "nats://127.0.0.1:$P0/single" 1
run "three nodes (R3): refuse --yes per process" "nats://127.0.0.1:$C1,127.0.0.1:$C2,127.0.0.1:$C3/cluster" 3
