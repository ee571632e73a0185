#!/usr/bin/env bash
# Build everything, debug (tests included) and release, with warnings as errors.
#
# Every later step that builds with SwiftPM passes the same flags (`.ci/run`'s
# `swift test`, the benchmark and soak steps), so that SwiftPM reuses these
# products: a change of flags makes it compile every module again.
set -euo pipefail
swift build --build-tests -Xswiftc -warnings-as-errors
swift build -c release -Xswiftc -warnings-as-errors
