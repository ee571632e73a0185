#!/usr/bin/env bash
# The benchmark executable in its quick mode: it must run, print JSON with every
# required row and field, write its charts, and give identical simulation figures
# for the same seed. Figures are not gated: CI machines are noisy.
set -euo pipefail

out=.ci-artifacts/benchmark
rm -rf "$out"
mkdir -p "$out"

# The flags of 10-build.sh, so that SwiftPM reuses its release build instead of compiling again.
swift build -c release --product resilience-benchmarks
bin="$(swift build -c release --show-bin-path)/resilience-benchmarks"

"$bin" --quick --json --svg "$out/charts" > "$out/quick.json"
# A second run of the simulations alone, same seed: the figures must not change.
"$bin" --quick --json --only simulations --quiet > "$out/simulations-again.json"

python3 - "$out/quick.json" "$out/simulations-again.json" "$out/charts" <<'PY'
import json
import os
import sys
import xml.etree.ElementTree as ElementTree

report_path, again_path, charts_dir = sys.argv[1:4]

# ---- Required rows: extend these lists when rows are added. ---------------------
CALLERS = ["nonisolated", "main-actor"]
# (name, caller, tasks) for every overhead row that must be present.
REQUIRED_OVERHEAD_ROWS = (
    [("direct", caller, 1) for caller in CALLERS]
    + [("retry.success", caller, 1) for caller in CALLERS]
    + [(name, caller, 1) for name in ["retry.success.deadline", "retry.success.not-idempotent",
                                      "retry.success.declared-not-idempotent", "retry.success.observer",
                                      "pipeline.retry-deadline.success"]
       for caller in CALLERS]
    + [(f"{design}.{row}", caller, 1)
       for design in ["seed-design", "actor-per-call"]
       for row in ["retry.success", "breaker.success", "retry+breaker.success", "breaker.rejection"]
       for caller in CALLERS]
    + [(f"{design}.breaker.success", "nonisolated", tasks)
       for design in ["seed-design", "actor-per-call"] for tasks in [2, 64]]
    + [("direct", "nonisolated", tasks) for tasks in [2, 64]]
    + [(name, caller, 1) for name in ["breaker.success.consecutive", "breaker.success.window",
                                      "retry+breaker.success", "breaker.rejection", "breaker.failure"]
       for caller in CALLERS]
    + [("breaker.success.consecutive", "nonisolated", tasks) for tasks in [2, 64]]
    + [("breaker.success.window", "nonisolated", 64)]
    + [("registry.success", caller, 1) for caller in CALLERS]
    + [(name, caller, 1) for name in ["taskgroup.child", "fallback.success", "timeout.success", "bulkhead.success",
                                      "ratelimiter.success", "ratelimiter.registry.success", "hedging.success", "pipeline.standard.success",
                                      "pipeline.inline.success"]
       for caller in CALLERS]
)
# Every row carries both ratios: against the strict baseline (a nonisolated(nonsending)
# operation) and against the plain one (a plain nonisolated async operation).
OVERHEAD_FIELDS = ["name", "caller", "tasks", "ns_per_op", "baseline_ns_per_op", "ratio",
                   "plain_baseline_ns_per_op", "plain_ratio", "allocations_per_op"]
REQUIRED_MEMORY_ROWS = ["retry-policy", "retry-budget", "breaker", "registry-entry"]
SCHEDULES = ["none", "exponential", "full", "equal", "decorrelated", "default"]
# Outage rows as (budget, breaker).
REQUIRED_OUTAGE_ROWS = [(False, False), (True, False), (False, True), (True, True)]
REQUIRED_THROTTLE_ROWS = [False, True]
# Toolbox simulations: (name, key field, required values, numeric fields).
REQUIRED_TOOLBOX_ROWS = [
    ("hedging", "hedged", [False, True], ["p99_ms", "load_per_request"]),
    ("bulkhead", "limit", [10, 50], ["p99_admitted_ms", "rejected_share"]),
    ("ratelimiter", "algorithm", ["token-bucket", "sliding-window"], ["configured_per_second", "admitted_per_second"]),
]
# Load-discipline rows: name -> (the boolean key, the number fields, nullable number fields).
REQUIRED_LOAD_ROWS = {
    "nested": ("guard", ["attempts_per_request"], []),
    "adaptive-throttling": ("throttling", ["server_requests_per_offered"], ["recovery_windows"]),
    "ratelimit-headers": ("honoured", ["too_many_requests"], []),
    "probe-waves": ("jitter", ["max_probes_per_100ms_share"], []),
}
CHARTS = ["overhead-nonisolated.svg", "overhead-main-actor.svg", "contention.svg", "load-discipline.svg"]
# ----------------------------------------------------------------------------------

problems = []

def number(row, key, nullable=False):
    value = row.get(key)
    if value is None and nullable:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        problems.append(f"{row.get('name')}: '{key}' is not a number: {value!r}")

with open(report_path) as handle:
    report = json.load(handle)

for key in ["swift", "machine"]:
    if not isinstance(report.get(key), str) or not report[key]:
        problems.append(f"top-level '{key}' missing or empty")

overhead = report.get("overhead", [])
present = {(row.get("name"), row.get("caller"), row.get("tasks")) for row in overhead}
for required in REQUIRED_OVERHEAD_ROWS:
    if required not in present:
        problems.append(f"overhead row missing: {required}")
counter_verified = report.get("run", {}).get("allocation_counter_verified") is True
for row in overhead:
    for key in OVERHEAD_FIELDS:
        if key not in row:
            problems.append(f"overhead row {row.get('name')}: field '{key}' missing")
    for key in ["ns_per_op", "baseline_ns_per_op", "ratio", "plain_baseline_ns_per_op", "plain_ratio"]:
        number(row, key)
    number(row, "allocations_per_op", nullable=not counter_verified)
    if row.get("caller") not in CALLERS:
        problems.append(f"overhead row {row.get('name')}: unknown caller {row.get('caller')!r}")
    # The pipeline's goal is judged on timeout.success timed in turns with it.
    if row.get("name") == "pipeline.standard.success":
        reference = row.get("reference")
        if not isinstance(reference, dict) or reference.get("name") != "timeout.success":
            problems.append(f"pipeline.standard.success ({row.get('caller')}): no timeout.success reference")
        else:
            number(reference, "ns_per_op")
            number(reference, "ratio")
            number(reference, "cpu_time_ratio", nullable=True)

memory = {row.get("name"): row for row in report.get("memory", [])}
if counter_verified:
    for name in REQUIRED_MEMORY_ROWS:
        if name not in memory:
            problems.append(f"memory row missing: {name}")
        else:
            number(memory[name], "bytes")

simulations = report.get("simulations", [])
contention = {row.get("schedule"): row for row in simulations if row.get("name") == "contention"}
for schedule in SCHEDULES:
    if schedule not in contention:
        problems.append(f"contention row missing: {schedule}")
    else:
        number(contention[schedule], "calls")
        number(contention[schedule], "completion_ms")
outage = {(row.get("budget"), row.get("breaker")): row for row in simulations if row.get("name") == "outage"}
for key in REQUIRED_OUTAGE_ROWS:
    if key not in outage:
        problems.append(f"outage row missing: budget={key[0]} breaker={key[1]}")
    else:
        number(outage[key], "attempts_per_request")
        number(outage[key], "recovery_ms", nullable=not key[1])  # the breaker rows exist to report it
        if "recovery_ms" not in outage[key]:
            problems.append(f"outage row budget={key[0]}: field 'recovery_ms' missing")
throttle = {row.get("retry_after"): row for row in simulations if row.get("name") == "throttle"}
for key in REQUIRED_THROTTLE_ROWS:
    if key not in throttle:
        problems.append(f"throttle row missing: retry_after={key}")
    else:
        number(throttle[key], "attempts_per_request")

for name, key, values, fields in REQUIRED_TOOLBOX_ROWS:
    rows = {row.get(key): row for row in simulations if row.get("name") == name}
    for value in values:
        if value not in rows:
            problems.append(f"{name} row missing: {key}={value!r}")
            continue
        if name == "hedging" and not isinstance(rows[value].get("hedged"), bool):
            problems.append(f"hedging row: 'hedged' is not a bool")
        for field in fields:
            number(rows[value], field)
for name, (flag, fields, nullable) in REQUIRED_LOAD_ROWS.items():
    rows = {row.get(flag): row for row in simulations if row.get("name") == name}
    for value in [False, True]:
        if value not in rows:
            problems.append(f"{name} row missing: {flag}={value}")
            continue
        for field in fields:
            number(rows[value], field)
        for field in nullable:
            if field not in rows[value]:
                problems.append(f"{name} row {flag}={value}: field '{field}' missing")
            else:
                number(rows[value], field, nullable=True)

with open(again_path) as handle:
    again = json.load(handle)
if again.get("simulations") != simulations:
    problems.append("simulations differ between two runs with the same seed")

for chart in CHARTS:
    path = os.path.join(charts_dir, chart)
    try:
        root = ElementTree.parse(path).getroot()
        if not root.tag.endswith("svg"):
            problems.append(f"{chart}: root element is {root.tag}, not svg")
    except (OSError, ElementTree.ParseError) as error:
        problems.append(f"{chart}: {error}")

if problems:
    print("benchmark JSON check failed:")
    for problem in problems:
        print("  -", problem)
    sys.exit(1)
print(f"benchmark JSON ok: {len(overhead)} overhead rows, {len(simulations)} simulation rows, "
      f"{len(memory)} memory rows, {len(CHARTS)} charts; simulations repeatable")
PY
