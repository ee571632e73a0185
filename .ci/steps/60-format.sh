#!/usr/bin/env bash
# Formatting and lint, with the checked-in .swift-format. Any finding fails the run.
#
# The configuration enables AllPublicDeclarationsHaveDocumentation, so this gate
# also fails when a public declaration has no `///` comment. To fix formatting:
#   swift format --in-place --recursive Sources Tests Benchmarks Package.swift
set -euo pipefail
swift format lint --strict --recursive --configuration .swift-format \
    Sources Tests Benchmarks Package.swift
