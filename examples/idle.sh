#!/bin/sh
# Idle CPU of the real console: runs `warrant console --read-only` in a detached tmux pane on an
# empty spool and on a demo spool (filled by `warrant demo` for 20 s, then left alone), waits for
# it to settle, and reads the process's user+system CPU time (/proc/PID/stat fields 14 and 15, in
# clock ticks of 1/100 s) before and after SECONDS_IDLE seconds (default 60). Both run at once.
#   cargo build --release && sh examples/idle.sh [target/release/warrant] [seconds]
set -eu
BIN=$(realpath "${1:-target/release/warrant}")
IDLE=${2:-60}
DIR=$(mktemp -d)
trap 'tmux -L warrant-idle kill-server 2>/dev/null || true; rm -rf "$DIR"' EXIT
run() { # name spool command...
  name=$1; spool=$2; shift 2
  tmux -L warrant-idle -f /dev/null new-session -d -s "$name" -x 160 -y 48 \
    -e "WARRANT_CONFIG=$DIR/config-$name" -e "WARRANT_SPOOL=$spool" -e "XDG_DATA_HOME=$DIR/data-$name" "$@"
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
run empty "$DIR/empty" "$BIN" console --read-only
run demo-fill "$DIR/demo" "$BIN" demo --interval 0.2 --read-only
sleep 20
tmux -L warrant-idle kill-session -t demo-fill
run demo "$DIR/demo" "$BIN" console --read-only
sleep 5
for s in empty demo; do
  eval "pid_$s=\$(tmux -L warrant-idle display-message -p -t $s '#{pane_pid}')"
done
e0=$(ticks "$pid_empty"); d0=$(ticks "$pid_demo")
sleep "$IDLE"
e1=$(ticks "$pid_empty"); d1=$(ticks "$pid_demo")
pending=$(tmux -L warrant-idle capture-pane -p -t demo | head -1)
echo "demo spool title: $pending"
awk -v t=$((e1 - e0)) -v s="$IDLE" 'BEGIN { printf "empty spool: %d ticks in %d s = %.2f%% of a core\n", t, s, t / s }'
awk -v t=$((d1 - d0)) -v s="$IDLE" 'BEGIN { printf "demo spool:  %d ticks in %d s = %.2f%% of a core\n", t, s, t / s }'
uptime
