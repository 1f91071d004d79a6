// The Trust Graduation JavaScript reference runtime (@trust-graduation/core, pinned in
// package.json; Apache-2.0) deciding the request lines `warrant eval` reads (docs/eval.md), for
// examples/eval_vs_js.sh.
//   node reference.mjs calls FILE   every line parsed first, then only the canExecute calls timed
//   node reference.mjs io FILE      read, parse, decide, stringify and write each line to stdout
// Each line is {"op":"tg.can_execute","action_class",...,"now","context"?,"evidence"?[rows]},
// the rows {"action_class","label","source_type",...}: the reference's own names are
// actionClass, type and sourceType. `calls` prints one JSON line to stderr: {lines, seconds,
// allowed, review_required} (the decisions' states are counted so every call is used, and so
// the script can check them against warrant's); `io` prints the same summary to stderr after
// its output.
import { readFileSync, writeSync } from "node:fs";
import { TrustGraduation } from "@trust-graduation/core";

const [mode, file] = process.argv.slice(2);
if (!["calls", "io"].includes(mode) || !file) {
  console.error("usage: node reference.mjs calls|io FILE");
  process.exit(2);
}

function request(line) {
  const r = JSON.parse(line);
  if (r.op !== "tg.can_execute") throw new Error(`not a tg.can_execute line: ${line.slice(0, 80)}`);
  const evidence = (r.evidence || []).map((row) => ({
    actionClass: row.action_class,
    type: row.label,
    sourceType: row.source_type,
    date: row.date,
  }));
  const now = new Date(r.now);
  return { evidence, now, input: { actionClass: r.action_class, context: r.context || {} } };
}

function decide({ evidence, now, input }) {
  return new TrustGraduation({ evidence, now: () => now }).canExecute(input);
}

const counts = { allowed: 0, review_required: 0, other: 0 };
function count(d) {
  if (d.allowed) counts.allowed += 1;
  else if (d.status === "review_required") counts.review_required += 1;
  else counts.other += 1;
}

const text = readFileSync(file, "utf8");
const lines = text.split("\n").filter((l) => l.length > 0);
if (mode === "calls") {
  const requests = lines.map(request);
  const t0 = process.hrtime.bigint();
  for (const r of requests) count(decide(r));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  console.error(JSON.stringify({ lines: requests.length, seconds, ...counts }));
} else {
  const t0 = process.hrtime.bigint();
  let out = [];
  let size = 0;
  for (const line of lines) {
    const d = decide(request(line));
    count(d);
    const s = JSON.stringify(d) + "\n";
    out.push(s);
    size += s.length;
    if (size >= 256 * 1024) {
      writeSync(1, out.join(""));
      out = [];
      size = 0;
    }
  }
  writeSync(1, out.join(""));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  console.error(JSON.stringify({ lines: lines.length, seconds, ...counts }));
}
