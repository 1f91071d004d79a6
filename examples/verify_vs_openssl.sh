#!/bin/sh
# `warrant verify` beside its floor, `openssl dgst -sha256` of the same chain file (reading and
# hashing the same bytes), interleaved in the same run: RUNS runs of each, alternating, the file
# in the page cache. With a SPOOL it verifies that spool with the caller's WARRANT_CONFIG (its
# pinned keys check the chain's signatures); without one it generates RECORDS receipts (no
# decisions, so no signature) into a temporary spool, under a temporary config, first.
#   cargo build --release --bin warrant && sh examples/verify_vs_openssl.sh [RUNS] [RECORDS] [BIN] [SPOOL]
# Prints each side's wall time (median, min, max), CPU and peak memory, and the ratio of the
# medians; fails unless every `warrant verify` exits 0 and reports the chain valid (with RECORDS
# records, when it generated them), and every `openssl` run prints the same digest.
set -eu
RUNS=${1:-5}
RECORDS=${2:-1000000}
BIN=$(realpath "${3:-target/release/warrant}")
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
EXPECT="^valid: "
if [ -n "${4:-}" ]; then
  SPOOL=$4
else
  export WARRANT_CONFIG="$DIR/cfg" WARRANT_PRINCIPAL=alice
  EXPECT="^valid: $RECORDS records"
  SPOOL="$DIR/spool"
  "$BIN" keys init --no-passphrase >/dev/null 2>&1
  "$BIN" --spool "$SPOOL" generate-spool --records "$RECORDS" --pending 0 --decision-every 0 >/dev/null
fi
CHAIN="$SPOOL/chain.jsonl"
cat "$CHAIN" >/dev/null # into the page cache
: >"$DIR/warrant.txt"
: >"$DIR/openssl.txt"
i=0
while [ "$i" -lt "$RUNS" ]; do
  i=$((i + 1))
  /usr/bin/time -f '%e %U %S %M' -o "$DIR/time" "$BIN" --spool "$SPOOL" verify >"$DIR/out" 2>&1 ||
    { cat "$DIR/out"; echo "warrant verify failed" >&2; exit 1; }
  grep -q "$EXPECT" "$DIR/out" || { cat "$DIR/out"; echo "not reported valid" >&2; exit 1; }
  cat "$DIR/time" >>"$DIR/warrant.txt"
  /usr/bin/time -f '%e %U %S %M' -o "$DIR/time" openssl dgst -sha256 "$CHAIN" >"$DIR/digest"
  cat "$DIR/time" >>"$DIR/openssl.txt"
  if [ "$i" = 1 ]; then cp "$DIR/digest" "$DIR/digest.first"; fi
  cmp -s "$DIR/digest" "$DIR/digest.first" || { echo "openssl printed another digest" >&2; exit 1; }
done
median() { sort -n "$1" | awk '{ w[NR] = $1 } END { print (NR % 2) ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2 }'; }
summary() { # label file
  sort -n "$2" | awk -v label="$1" -v med="$(median "$2")" '{ w[NR] = $1; u += $2; s += $3; if ($4 > m) m = $4 }
    END { printf "%-16s median %.2f s (min %.2f, max %.2f) over %d runs; CPU %.2f s a run; peak %d MB\n",
                 label, med, w[1], w[NR], NR, (u + s) / NR, m / 1024 }'
}
summary "warrant verify" "$DIR/warrant.txt"
summary "openssl dgst" "$DIR/openssl.txt"
W=$(median "$DIR/warrant.txt")
O=$(median "$DIR/openssl.txt")
awk -v w="$W" -v o="$O" -v bytes="$(wc -c <"$CHAIN")" \
  'BEGIN { printf "warrant / openssl (medians): %.2f x, chain of %d bytes\n", w / o, bytes }'
