#!/usr/bin/env bash
# Runs one fuzz target over its committed seeds and its growing corpus (docs/fuzzing.md):
#   fuzz/run.sh <target> [seconds, default 600] [more libFuzzer options]
# New inputs go to fuzz/corpus/<target>/, crashes to fuzz/artifacts/<target>/ (both ignored by git).
set -euo pipefail
cd "$(dirname "$0")"
target=${1:?usage: fuzz/run.sh <target> [seconds] [libFuzzer options]}
seconds=${2:-600}
shift $(($# < 2 ? $# : 2))
mkdir -p "corpus/$target"
dirs=("corpus/$target" "seeds/$target")
# Leak detection is off: LeakSanitizer reports the thread-local channel context of the signature
# worker threads `chain::verify_stream` spawns (freed by the thread's TLS destructors, after the
# check runs), a false positive that stops the run; leaks are not memory-safety bugs in safe Rust.
# Canonical JSON is fuzzed from every JSON seed.
if [ "$target" = canonical ]; then dirs+=(seeds/packet seeds/receipt seeds/chain_export seeds/policy seeds/eval); fi
exec cargo +nightly fuzz run --features libfuzzer "$target" "${dirs[@]}" -- \
  -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -timeout=10 -detect_leaks=0 \
  -print_final_stats=1 "$@"
