#!/usr/bin/env bash
# Build everything, debug and release, with warnings as errors.
set -euo pipefail
swift build -Xswiftc -warnings-as-errors
swift build -c release -Xswiftc -warnings-as-errors
