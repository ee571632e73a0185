#!/usr/bin/env bash
# The test suite, exactly as the README tells a newcomer to run it.
set -euo pipefail
swift test
