#!/usr/bin/env bash
# The breaker memory soak in its quick mode (1 million calls per phase, a few seconds):
# a time-window breaker, retry around breaker, and a registry with 100,000 keys over a
# bound of 1,000. Fails if resident memory (VmRSS) or the allocator's live heap grows by
# more than 16 MiB after the warm-up, or if the registry ever holds more than its bound.
# The bound is generous on purpose: a leak of one small object per call would still
# exceed it by far (1 million calls), while allocator noise stays well under it.
set -euo pipefail

out=.ci-artifacts/breaker-soak
rm -rf "$out"
mkdir -p "$out"

# The flags of 10-build.sh, so that SwiftPM reuses its release build instead of compiling again.
swift build -c release --product resilience-benchmarks
bin="$(swift build -c release --show-bin-path)/resilience-benchmarks"

"$bin" --soak --quick --json > "$out/soak.json"

python3 - "$out/soak.json" <<'PY'
import json
import sys

LIMIT = 16 * 1024 * 1024
PHASES = ["breaker.time-window", "retry+breaker", "registry"]

with open(sys.argv[1]) as handle:
    soak = json.load(handle)["soak"]

problems = []
phases = {phase["name"]: phase for phase in soak.get("phases", [])}
for name in PHASES:
    phase = phases.get(name)
    if phase is None:
        problems.append(f"soak phase missing: {name}")
        continue
    if phase["calls"] != soak["calls_per_phase"]:
        problems.append(f"{name}: ran {phase['calls']} calls, expected {soak['calls_per_phase']}")
    ended = phase["successes"] + phase["failures"] + phase["rejections"]
    if ended != phase["calls"]:
        problems.append(f"{name}: {ended} outcomes for {phase['calls']} calls")
    if phase["transitions"] == 0:
        problems.append(f"{name}: no breaker changed state; the soak did not exercise the states")

registry = phases.get("registry", {})
bound = registry.get("registry_bound")
for key in ["registry_count", "registry_maximum_count"]:
    value = registry.get(key)
    if bound is None or value is None or value > bound:
        problems.append(f"registry: {key} = {value}, bound {bound}")

for key in ["rss_growth_after_warm_up_bytes", "heap_growth_after_warm_up_bytes"]:
    value = soak.get(key)
    if value is None:
        problems.append(f"{key} not measured (needs Linux /proc and glibc)")
    elif value > LIMIT:
        problems.append(f"{key} = {value} bytes, more than {LIMIT}")

peak = soak.get("rss_peak_bytes")
warm = soak.get("rss_after_warm_up_bytes")
if peak is not None and warm is not None and peak - warm > LIMIT:
    problems.append(f"resident memory peaked {peak - warm} bytes above the after-warm-up figure")

if problems:
    print("breaker soak failed:")
    for problem in problems:
        print("  -", problem)
    sys.exit(1)
mib = lambda value: f"{value / 1048576:.1f} MiB"
print(f"breaker soak ok: {soak['calls_per_phase']:,} calls per phase; RSS {mib(soak['rss_after_warm_up_bytes'])} "
      f"after warm-up, {mib(soak['rss_end_bytes'])} at the end; live heap growth "
      f"{soak['heap_growth_after_warm_up_bytes']:,} bytes; registry at most {registry['registry_maximum_count']} "
      f"of {bound}")
PY
