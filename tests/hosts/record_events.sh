#!/usr/bin/env bash
# Records the hook events the installed Claude Code and Codex really send, as fixtures:
# tests/fixtures/hooks/hosts/<host>-<version>/<NN>-<event>-<tool>.json, NN in the order they came. Run it by hand when a host
# version changes (docs/integrations.md, "Host versions"); tests/hooks.rs feeds every recorded
# event to `warrant hook` and tests/real_hosts.rs drives the hosts themselves.
#
# Each host is driven by tests/hosts/model_server.py through a few calls (a read, a write, a
# command that fails) with a hook that only records its stdin and lets the call proceed: these
# runs are about what the host sends, not about warrant's answers.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
server=""

record_hook() { # the hook command: saves the event, numbered and named by its event and tool; exits 0
  printf '%s' "python3 -c 'import json,sys,os; d=json.load(sys.stdin); n=\"%02d-\" % len(os.listdir(\"$1\"))+d[\"hook_event_name\"]+\"-\"+str(d.get(\"tool_name\",\"\")).replace(\"/\",\"_\"); open(os.path.join(\"$1\",n+\".json\"),\"w\").write(json.dumps(d,indent=2,sort_keys=True)+\"\\n\")'"
}

write_hooks() { # write_hooks FILE OUT EVENT...: the host's hook file, each event recorded into OUT
  local file="$1" out="$2"
  shift 2
  python3 - "$file" "$(record_hook "$out")" "$@" <<'PY'
import json, sys
hook = {"matcher": "*", "hooks": [{"type": "command", "command": sys.argv[2]}]}
json.dump({"hooks": {e: [hook] for e in sys.argv[3:]}}, open(sys.argv[1], "w"))
PY
}

serve() { # serve SCRIPT LOG: starts the model server in the background, sets $port
  rm -f "$work/port"
  python3 "$here/model_server.py" "$1" "$2" "$work/port" </dev/null >/dev/null 2>&1 &
  server=$!
  for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
  port="$(cat "$work/port")"
}

# Claude Code
version="$(claude --version | awk '{print $1}')"
out="$root/tests/fixtures/hooks/hosts/claude-code-$version"
rm -rf "$out"; mkdir -p "$out" "$work/cc/project/.claude" "$work/cc/home"
write_hooks "$work/cc/project/.claude/settings.json" "$out" PreToolUse PermissionRequest PostToolUse PostToolUseFailure
echo hello > "$work/cc/project/notes.txt"
cat > "$work/cc/script.json" <<JSON
[{"name": "Read", "input": {"file_path": "$work/cc/project/notes.txt"}},
 {"name": "Write", "input": {"file_path": "$work/cc/project/new.txt", "content": "new\n"}},
 {"name": "Bash", "input": {"command": "ls /nonexistent", "description": "list"}}]
JSON
serve "$work/cc/script.json" "$work/cc/log.jsonl"
(cd "$work/cc/project" && HOME="$work/cc/home" ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY=x \
  DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 IS_SANDBOX=1 \
  claude -p "go" --output-format stream-json --verbose --permission-mode bypassPermissions </dev/null >/dev/null)
kill "$server"

# Codex
version="$(codex --version | awk '{print $2}')"
out="$root/tests/fixtures/hooks/hosts/codex-$version"
rm -rf "$out"; mkdir -p "$out" "$work/cx/project" "$work/cx/home/.codex"
write_hooks "$work/cx/home/.codex/hooks.json" "$out" PreToolUse PermissionRequest PostToolUse
echo hello > "$work/cx/project/notes.txt"
cat > "$work/cx/script.json" <<JSON
[{"name": "exec_command", "input": {"cmd": "cat notes.txt"}},
 {"name": "apply_patch", "custom": true, "input": "*** Begin Patch\n*** Add File: new.txt\n+new\n*** End Patch\n"},
 {"name": "exec_command", "input": {"cmd": "ls /nonexistent", "workdir": "$work/cx"}}]
JSON
serve "$work/cx/script.json" "$work/cx/log.jsonl"
cat > "$work/cx/home/.codex/config.toml" <<TOML
model = "gpt-5.5"
model_provider = "scripted"
[model_providers.scripted]
name = "scripted"
base_url = "http://127.0.0.1:$port/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
TOML
(cd "$work/cx/project" && git init -q . && HOME="$work/cx/home" CODEX_HOME="$work/cx/home/.codex" OPENAI_API_KEY=x \
  codex exec --dangerously-bypass-approvals-and-sandbox --dangerously-bypass-hook-trust --skip-git-repo-check "go" </dev/null >/dev/null 2>&1)
# The recorded events name this run's temporary directory: make them the fixtures' stable paths.
dashed="$(printf '%s' "$work" | tr '/.' '--')"
sed -i -e "s#$work#/tmp/warrant-hosts#g" -e "s#$dashed#-tmp-warrant-hosts#g" "$root"/tests/fixtures/hooks/hosts/*/*.json
ls "$root"/tests/fixtures/hooks/hosts/*
