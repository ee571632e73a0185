#!/usr/bin/env bash
# A program that depends on the core `Resilience` product alone must not link
# FoundationNetworking (and with it libcurl): server users who never touch
# URLSession should not pay for it. Builds Tests/CoreOnly/main.swift as a
# separate package against this checkout, runs it, and checks its dynamic
# dependencies with ldd; prints the executable's size, dynamically and with the
# Swift runtime linked statically, for Docs/Benchmarks.md.
set -euo pipefail
root="$PWD"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# SwiftPM names a path dependency after its folder: give the checkout a stable name.
ln -s "$root" "$work/swift-resilience"
mkdir -p "$work/core-only/Sources/core-only"
cp Tests/CoreOnly/main.swift "$work/core-only/Sources/core-only/main.swift"
cat > "$work/core-only/Package.swift" <<'MANIFEST'
// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "core-only",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "../swift-resilience")],
    targets: [
        .executableTarget(
            name: "core-only",
            dependencies: [.product(name: "Resilience", package: "swift-resilience")]
        )
    ]
)
MANIFEST

cd "$work/core-only"
swift build -c release
bin="$(swift build -c release --show-bin-path)/core-only"
"$bin"
linked="$(ldd "$bin")"
dynamic_size=$(stat -c %s "$bin")
swift build -c release --static-swift-stdlib --scratch-path .build-static
static_bin="$(swift build -c release --static-swift-stdlib --scratch-path .build-static --show-bin-path)/core-only"
static_size=$(stat -c %s "$static_bin")
printf 'core-only executable: %d bytes (dynamic), %d bytes (static Swift runtime)\n' "$dynamic_size" "$static_size"
if grep -qiE 'FoundationNetworking|libcurl' <<<"$linked"; then
    echo "a program using only the Resilience product links FoundationNetworking:" >&2
    grep -iE 'FoundationNetworking|libcurl' <<<"$linked" >&2
    exit 1
fi
echo "core-only: no FoundationNetworking, no libcurl"
