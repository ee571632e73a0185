#!/usr/bin/env bash
# Fuzz the Retry-After and RateLimit parsers, the error-hint extractors and the retry schedule
# arithmetic with libFuzzer for about a minute in all, starting from the
# checked-in seed corpus; fails on any crash, hang or violated invariant.
# See Tests/Fuzz/README.md.
set -euo pipefail
FUZZ_SECONDS="${FUZZ_SECONDS:-60}" exec bash Tests/Fuzz/run.sh
