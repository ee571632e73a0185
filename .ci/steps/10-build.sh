#!/usr/bin/env bash
# Build everything, debug (tests included) and release, and fail on any compiler warning.
#
# The builds use SwiftPM's default flags, the ones `swift test` and `swift run` use, so
# that `.ci/run`'s `swift test` (the README's command, as a newcomer types it) and the
# benchmark and soak steps reuse these products: a change of flags, such as
# `-Xswiftc -warnings-as-errors`, makes SwiftPM compile every module again. Warnings are
# caught from the compiler's own output instead. On a fresh clone every file is compiled
# here, so every warning is printed; a rebuild in a used checkout prints only those of the
# files it compiles again.
set -euo pipefail
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
swift build --build-tests 2>&1 | tee "$log"
swift build -c release 2>&1 | tee -a "$log"
if grep -E '\.swift:[0-9]+:[0-9]+: warning:' "$log" > /dev/null; then
    echo "error: the build printed compiler warnings:" >&2
    grep -E '\.swift:[0-9]+:[0-9]+: warning:' "$log" | sort -u >&2
    exit 1
fi
