#!/usr/bin/env bash
# Builds and runs every libFuzzer target for a bounded time; fails on the first crash, hang or invariant violation.
#
#   Tests/Fuzz/run.sh           # about 60 s of fuzzing in all, split evenly across the targets
#   FUZZ_SECONDS=600 Tests/Fuzz/run.sh
#   Tests/Fuzz/run.sh RetryAfterHeaderFuzz   # one target only
#   FUZZ_JOBS=1 Tests/Fuzz/run.sh            # one target at a time
#
# Targets run FUZZ_JOBS at a time (default: one per core), each for its share of
# FUZZ_SECONDS: each fuzzer is single-threaded, so on two cores two of them do the
# same work as one after the other in half the wall-clock time.
#
# Each target starts from its checked-in seed corpus in Tests/Fuzz/Corpus/<target>;
# inputs it discovers go to a scratch corpus under $FUZZ_BUILD, never into the
# repository. A failing input is saved to fuzz-artifacts/ and the command to
# replay it is printed.
set -euo pipefail
cd "$(dirname "$0")/../.."

out="${FUZZ_BUILD:-.build-fuzz}"
total_seconds="${FUZZ_SECONDS:-60}"
artifacts="fuzz-artifacts"

if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    targets=()
    for source in Tests/Fuzz/Sources/Targets/*.swift; do
        targets+=("$(basename "$source" .swift)")
    done
fi

bash Tests/Fuzz/build.sh

# The Swift runtime's crash backtracer and AddressSanitizer fight over a crashing
# process: the backtracer's memory reader trips ASan ("stack-buffer-underflow in
# memserver_read") and a detached swift-backtrace process can keep the pipe open
# for its 30 s timeout. libFuzzer reports crashes itself, so turn the backtracer off.
export SWIFT_BACKTRACE=enable=no

per_target=$(( total_seconds / ${#targets[@]} ))
(( per_target >= 1 )) || per_target=1
jobs="${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}"
(( jobs >= 1 )) || jobs=1
mkdir -p "$artifacts"

# Runs one target; its output goes to $out/<target>.log.
fuzz() {
    local target=$1
    local seeds="Tests/Fuzz/Corpus/$target"
    local scratch="$out/corpus/$target"
    mkdir -p "$scratch"
    local options=(
        -max_total_time="$per_target"
        -timeout=10             # a single input running this long is a hang
        -rss_limit_mb=2048
        -max_len=4096
        -print_final_stats=1
        -artifact_prefix="$artifacts/$target-"
    )
    if [[ -f "Tests/Fuzz/Dictionaries/$target.dict" ]]; then
        options+=(-dict="Tests/Fuzz/Dictionaries/$target.dict")
    fi
    echo "fuzz: running $target for ${per_target}s from $(find "$seeds" -type f | wc -l | tr -d ' ') seeds"
    "$out/$target" "${options[@]}" "$scratch" "$seeds" >"$out/$target.log" 2>&1
}

failed=0
for (( first = 0; first < ${#targets[@]}; first += jobs )); do
    batch=("${targets[@]:first:jobs}")
    pids=()
    for target in "${batch[@]}"; do
        fuzz "$target" &
        pids+=($!)
    done
    for index in "${!batch[@]}"; do
        target="${batch[$index]}"
        log="$out/$target.log"
        if ! wait "${pids[$index]}"; then
            tail -n 40 "$log"
            echo "fuzz: $target FAILED; the failing input is in $artifacts/. Replay it with:"
            echo "    SWIFT_BACKTRACE=enable=no $out/$target $artifacts/$target-<crash|timeout|oom>-<hash>"
            failed=1
            continue
        fi
        echo "fuzz: $target:"
        grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|DONE' "$log" || true
    done
    (( failed == 0 )) || exit 1
done
echo "fuzz: all targets ran clean"
