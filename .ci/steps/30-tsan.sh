#!/usr/bin/env bash
# The test suite again under ThreadSanitizer. A reported data race fails the run.
#
# What it covers: every test, as `swift test` runs them. The ones that matter here are
# those that run code on several threads at once: the stress suites (10,000 concurrent
# calls through policies, breakers, limiters and pipelines), the lock, registry and
# cancellation tests. The rest run single-threaded logic and cost little; they stay in
# so that no test is left out of the race check by a list that drifts. The few suites
# that the whole run starves (they stand aside there) run a second time on their own.
#
# It builds only the test bundle (the product `swift-resiliencePackageTests`), not the
# benchmark executable, which no test runs and which is about a sixth of the Swift code
# SwiftPM would otherwise instrument and compile.
# It builds in its own scratch directory (.build-tsan, gitignored) so that the
# instrumented build does not evict the ordinary one. Our Lock is a pthread
# mutex precisely so that this gate can see it; see Docs/DesignDecisions.md.
set -euo pipefail
# halt_on_error: stop at the first race, so a failure is short and cannot be missed.
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}"
# Tells the suites that race thousands of tasks against a driven test clock to stand aside:
# the sanitizer starves them past their time limits (see CancellationMomentSupport.swift).
export RESILIENCE_TSAN=1
tsan=(--sanitize=thread --scratch-path .build-tsan)
swift build "${tsan[@]}" --product swift-resiliencePackageTests
# A hung test fails the gate after 20 minutes instead of stalling CI; SIGINT lets
# `swift test` stop its test runner too.
# Backtraces of thrown errors are not captured, as in `.ci/run`'s test step.
SWT_SWIFT_ERROR_BACKTRACING_ENABLED=0 timeout --signal=INT --kill-after=30 1200 swift test "${tsan[@]}" --skip-build

# The suites that stood aside above run again on their own, with nothing else competing for
# the two cores: alone they finish in seconds under the sanitizer, and their thousands of
# tasks are what this gate is for. The list is read from the sources (every suite declared
# `.disabled(if: runsUnderThreadSanitizer, ...)`), so a new heavy suite joins it by itself.
heavy=()
while IFS= read -r file; do
  name=$(awk '/runsUnderThreadSanitizer/ { hit = 1 }
    hit && /struct [A-Za-z0-9_]+/ { match($0, /struct [A-Za-z0-9_]+/); print substr($0, RSTART + 7, RLENGTH - 7); exit }' "$file")
  [ -n "$name" ] && heavy+=("$name")
done < <(grep -rlE 'disabled\(if: runsUnderThreadSanitizer|^ *if: runsUnderThreadSanitizer,' Tests)
if [ "${#heavy[@]}" -gt 0 ]; then
  filter=$(IFS='|'; echo "${heavy[*]}")
  echo "ThreadSanitizer, the heavy suites alone: ${heavy[*]}"
  timeout --signal=INT --kill-after=30 600 \
    env -u RESILIENCE_TSAN SWT_SWIFT_ERROR_BACKTRACING_ENABLED=0 swift test "${tsan[@]}" --skip-build --filter "[./](${filter})/"
fi
