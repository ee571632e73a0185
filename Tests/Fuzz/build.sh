#!/usr/bin/env bash
# Builds the libFuzzer targets in Tests/Fuzz/Sources/Targets into $FUZZ_BUILD (default .build-fuzz).
#
# The Resilience sources are compiled once into a static library instrumented for
# libFuzzer and AddressSanitizer, with -enable-testing so the harnesses can reach
# internal entry points (the raw-bytes Retry-After parser) and -package-name so
# they see `package` declarations such as Duration.resilienceMaximum. Each
# target is then one small module linked against that library; libFuzzer
# supplies `main`.
#
# Why swiftc and not SwiftPM: see Tests/Fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

out="${FUZZ_BUILD:-.build-fuzz}"
mkdir -p "$out"

# Keep in step with the settings loop at the end of Package.swift.
common=(
    -swift-version 6
    -package-name swift_resilience
    -enable-upcoming-feature ExistentialAny
    -enable-upcoming-feature MemberImportVisibility
    -enable-upcoming-feature InternalImportsByDefault
    -sanitize=fuzzer,address
    -parse-as-library
    -use-ld=lld
    -warnings-as-errors
    -O
    -g
)

mapfile -t library_sources < <(find Sources/Resilience -name '*.swift' | sort)
echo "fuzz: building the instrumented Resilience library (${#library_sources[@]} files)"
swiftc "${common[@]}" -enable-testing -module-name Resilience \
    -emit-module -emit-module-path "$out/Resilience.swiftmodule" \
    -emit-library -static -o "$out/libResilience.a" \
    "${library_sources[@]}"

# The targets are independent: build them side by side, one per core.
jobs="${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}"
pids=()
for target in Tests/Fuzz/Sources/Targets/*.swift; do
    name="$(basename "$target" .swift)"
    echo "fuzz: building $name"
    swiftc "${common[@]}" -module-name "$name" -I "$out" -L "$out" -lResilience \
        Tests/Fuzz/Sources/Support/*.swift "$target" -o "$out/$name" &
    pids+=($!)
    if (( ${#pids[@]} >= jobs )); then
        wait "${pids[0]}"
        pids=("${pids[@]:1}")
    fi
done
for pid in "${pids[@]}"; do
    wait "$pid"
done
