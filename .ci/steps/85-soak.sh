#!/usr/bin/env bash
# Memory soak: 10,000,000 calls through long-lived retry policies and a shared
# budget in a release build; fails if resident memory grows by more than 16 MiB
# after warm-up. Takes a few seconds plus the build. See Benchmarks/Soak/RetrySoak.swift.
set -euo pipefail
exec bash Benchmarks/Soak/run.sh "${SOAK_CALLS:-10000000}" "${SOAK_ALLOWED_GROWTH_MIB:-16}"
