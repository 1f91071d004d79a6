#!/bin/sh
# `warrant approve --yes ID` on a directory spool of RECORDS chain records beside the same
# approval on an empty chain holding the same 10,000 pending packets: one process per approval,
# timed from start to exit, the two spools alternated. Every timed approval must exit 0 and leave
# its decision in the chain, or the script fails (a refusal's time is not an approval's).
#   cargo build --release && sh examples/approve_baseline.sh [RECORDS] [RUNS] [target/release/warrant]
# The packets are generated with the chain (`generate-spool`, packet j proposed by agent-(j mod 16))
# and copied to the empty spool in name order: an agent's packets arrive (the rate limit reads
# arrival times, docs/conformance.md) in that order, so its first ten are within Ring 3's burst of
# ten. The packets approved are the first RUNS + 1 that `warrant list --json` shows
# `review_required` on both spools (approvable, blocked by nothing). The first approval on each
# spool (reading the chain and writing the principal's fold) is timed apart. Prints the median and
# range in ms of each.
set -eu
RECORDS=${1:-1000000}
RUNS=${2:-7}
BIN=$(realpath "${3:-target/release/warrant}")
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
export WARRANT_CONFIG="$DIR/cfg" WARRANT_PRINCIPAL=alice XDG_DATA_HOME="$DIR/data"
"$BIN" keys init --no-passphrase >/dev/null 2>&1
"$BIN" --spool "$DIR/full" generate-spool --records "$RECORDS" --pending 10000 --decision-every 50 >/dev/null
mkdir -p "$DIR/empty/packets"
(cd "$DIR/full/packets" && ls | sort | while read -r f; do cp -p "$f" "$DIR/empty/packets/"; done)
approvable() { # spool
  "$BIN" --spool "$1" list --json | python3 -c 'import json, sys
print("\n".join(p["packet_id"] for p in json.load(sys.stdin)["packets"] if p["state"] == "review_required"))' | sort
}
approvable "$DIR/empty" >"$DIR/ids-empty.txt"
approvable "$DIR/full" >"$DIR/ids-full.txt"
comm -12 "$DIR/ids-empty.txt" "$DIR/ids-full.txt" | head -n $((RUNS + 1)) >"$DIR/ids.txt"
[ "$(wc -l <"$DIR/ids.txt")" -eq $((RUNS + 1)) ] || { echo "fewer than $((RUNS + 1)) packets approvable on both spools"; exit 1; }
approve() { # spool id out
  before=0; [ ! -f "$1/chain.jsonl" ] || before=$(wc -l <"$1/chain.jsonl")
  t0=$(date +%s%N)
  "$BIN" --spool "$1" approve --yes "$2" >/dev/null 2>"$DIR/err" || { echo "approve $2 on $1 failed: $(cat "$DIR/err")"; exit 1; }
  t1=$(date +%s%N)
  after=$(wc -l <"$1/chain.jsonl")
  [ "$after" -eq $((before + 1)) ] || { echo "approve $2 on $1: the chain did not grow by one record"; exit 1; }
  grep -q "\"$2\"" "$1/chain.jsonl" || { echo "approve $2 on $1: its decision is not in the chain"; exit 1; }
  echo "$(( (t1 - t0) / 1000 ))" | awk '{print $1/1000}' >>"$3"
}
stats() { # label file
  python3 - "$1" "$2" <<'PY'
import sys, statistics
xs = sorted(float(l) for l in open(sys.argv[2]) if l.strip())
print(f"{sys.argv[1]:<46} n={len(xs):<3} median {statistics.median(xs):8.1f} ms   range {xs[0]:.1f}-{xs[-1]:.1f} ms")
PY
}
: >"$DIR/first-empty.txt"; : >"$DIR/first-full.txt"; : >"$DIR/empty.txt"; : >"$DIR/full.txt"
first=$(head -n 1 "$DIR/ids.txt")
approve "$DIR/empty" "$first" "$DIR/first-empty.txt"
approve "$DIR/full" "$first" "$DIR/first-full.txt"
for id in $(tail -n +2 "$DIR/ids.txt"); do
  approve "$DIR/empty" "$id" "$DIR/empty.txt"
  approve "$DIR/full" "$id" "$DIR/full.txt"
done
"$BIN" --spool "$DIR/empty" verify >/dev/null || { echo "verify (empty) failed"; exit 1; }
stats "empty chain, first approval" "$DIR/first-empty.txt"
stats "$RECORDS records, first approval" "$DIR/first-full.txt"
stats "empty chain, later approvals" "$DIR/empty.txt"
stats "$RECORDS records, later approvals" "$DIR/full.txt"
