#!/usr/bin/env bash
# The test suite again under ThreadSanitizer. A reported data race fails the run.
#
# It builds in its own scratch directory (.build-tsan, gitignored) so that the
# instrumented build does not evict the ordinary one. Our Lock is a pthread
# mutex precisely so that this gate can see it; see Docs/DesignDecisions.md.
set -euo pipefail
# halt_on_error: stop at the first race, so a failure is short and cannot be missed.
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}"
# A hung test fails the gate after 20 minutes instead of stalling CI; SIGINT lets
# `swift test` stop its test runner too.
timeout --signal=INT --kill-after=30 1200 swift test --sanitize=thread --scratch-path .build-tsan
