#!/usr/bin/env bash
# Builds the retry-engine memory soak in release mode and runs it.
#
#   Benchmarks/Soak/run.sh              # 10,000,000 calls, fail if resident memory grows more than 16 MiB
#   Benchmarks/Soak/run.sh 1000000 8    # calls, allowed growth in MiB
#
# Like the fuzzers (see Tests/Fuzz/README.md), it is built with swiftc rather than
# SwiftPM, so it needs no target in Package.swift: the Resilience sources and the
# soak compile as one optimized module.
set -euo pipefail
cd "$(dirname "$0")/../.."

out="${SOAK_BUILD:-.build-soak}"
mkdir -p "$out"
mapfile -t sources < <(find Sources/Resilience -name '*.swift' | sort)
echo "soak: building (release)"
# Keep in step with the settings loop at the end of Package.swift.
swiftc -swift-version 6 -package-name swift_resilience \
    -enable-upcoming-feature ExistentialAny \
    -enable-upcoming-feature MemberImportVisibility \
    -enable-upcoming-feature InternalImportsByDefault \
    -warnings-as-errors -O -wmo -parse-as-library -module-name ResilienceSoak \
    "${sources[@]}" Benchmarks/Soak/RetrySoak.swift -o "$out/retry-soak"
"$out/retry-soak" "$@"
