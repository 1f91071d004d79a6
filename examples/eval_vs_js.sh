#!/bin/sh
# `warrant eval` beside the Trust Graduation JavaScript reference runtime
# (@trust-graduation/core 0.1.0-alpha.8, pinned in benches/eval-js/package.json) on the same
# request files, each on one core (`taskset -c 0`), in the same run:
#   - "JS calls": every line parsed before the clock starts, then only the canExecute calls timed;
#   - "JS with I/O": read, parse, decide, stringify and write each line (node, stdout to a pipe);
#   - warrant: the whole `warrant eval` process, requests on stdin, answers to a pipe.
#   cargo build --release && sh examples/eval_vs_js.sh [RUNS] [target/release/warrant]
# The files: 200,000 `draft.response` lines with no evidence; 200,000 `email.send.external` lines
# with a context; 100,000 `draft.response` lines carrying the same 40 inline evidence rows; and
# 100,000 lines whose 40 rows differ from the previous line's (the dates shift), so nothing
# prepared for one line serves the next. Every run must answer every line, and warrant's
# decisions (allowed or review_required) must count the same as the reference's, or the script
# fails. Prints each file's best rate of RUNS runs and warrant's ratio to each reference.
set -eu
RUNS=${1:-5}
BIN=$(realpath "${2:-target/release/warrant}")
HERE=$(cd "$(dirname "$0")/.." && pwd)
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
JS="$HERE/benches/eval-js"
[ -d "$JS/node_modules/@trust-graduation/core" ] || npm --prefix "$JS" install --no-fund --no-audit --silent >/dev/null
python3 - "$DIR" <<'PY'
import json, sys
d = sys.argv[1]
now = "2026-11-21T09:00:00Z"
def rows(shift):
    return [{"action_class": "draft.response", "label": "approved", "source_type": "receipt",
             "date": "2026-%02d-%02d" % (1 + (i + shift) // 28 % 10, 1 + (i + shift) % 28)} for i in range(40)]
files = {
    "plain": (200000, lambda i: {"op": "tg.can_execute", "id": i, "action_class": "draft.response", "now": now}),
    "external": (200000, lambda i: {"op": "tg.can_execute", "id": i, "action_class": "email.send.external", "now": now,
                                    "context": {"requestedBy": "scribe"}}),
    "rows40-same": (100000, lambda i, r=rows(0): {"op": "tg.can_execute", "id": i, "action_class": "draft.response",
                                                  "now": now, "evidence": r}),
    "rows40-differ": (100000, lambda i: {"op": "tg.can_execute", "id": i, "action_class": "draft.response", "now": now,
                                         "evidence": rows(i % 200)}),
}
for name, (n, line) in files.items():
    with open(f"{d}/{name}.jsonl", "w") as f:
        for i in range(n):
            f.write(json.dumps(line(i)) + "\n")
PY
best() { sort -g | head -n 1; }
printf '%-14s %8s %12s %12s %12s %9s %9s\n' file lines "JS calls/s" "JS+I/O/s" "warrant/s" "vs calls" "vs I/O"
for name in plain external rows40-same rows40-differ; do
  f="$DIR/$name.jsonl"
  lines=$(wc -l <"$f")
  : >"$DIR/calls" ; : >"$DIR/io" ; : >"$DIR/w"
  for _ in $(seq "$RUNS"); do
    taskset -c 0 node "$JS/reference.mjs" calls "$f" 2>"$DIR/calls.json"
    taskset -c 0 node "$JS/reference.mjs" io "$f" 2>"$DIR/io.json" | wc -l >"$DIR/io.lines"
    t0=$(date +%s%N)
    taskset -c 0 "$BIN" eval <"$f" >"$DIR/out.jsonl"
    t1=$(date +%s%N)
    [ "$(wc -l <"$DIR/out.jsonl")" -eq "$lines" ] || { echo "$name: warrant eval answered $(wc -l <"$DIR/out.jsonl") of $lines lines"; exit 1; }
    [ "$(cat "$DIR/io.lines")" -eq "$lines" ] || { echo "$name: the reference wrote $(cat "$DIR/io.lines") of $lines lines"; exit 1; }
    python3 - "$DIR" "$lines" <<'PY'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])
ref = json.load(open(f"{d}/calls.json"))
io = json.load(open(f"{d}/io.json"))
mine = {"allowed": 0, "review_required": 0, "other": 0}
for line in open(f"{d}/out.jsonl"):
    r = json.loads(line)
    mine["allowed" if r["allowed"] else "review_required" if r["status"] == "review_required" else "other"] += 1
for k in mine:
    if not (ref[k] == io[k] == mine[k]):
        sys.exit(f"decisions differ: reference {ref}, warrant {mine}")
if ref["lines"] != n:
    sys.exit(f"the reference decided {ref['lines']} of {n} lines")
open(f"{d}/calls", "a").write(f"{ref['seconds']}\n")
open(f"{d}/io", "a").write(f"{io['seconds']}\n")
PY
    echo "$t0 $t1" | awk '{print ($2 - $1) / 1e9}' >>"$DIR/w"
  done
  c=$(best <"$DIR/calls"); i=$(best <"$DIR/io"); w=$(best <"$DIR/w")
  echo "$name $lines $c $i $w" | awk '{printf "%-14s %8d %12.0f %12.0f %12.0f %8.2fx %8.2fx\n", $1, $2, $2/$3, $2/$4, $2/$5, $3/$5, $4/$5}'
done
