#!/usr/bin/env bash
# The DocC catalogs build with warnings as errors: a broken symbol link such as
# ``Nonexistent``, a bad <doc:Article> reference or a malformed Topics section
# fails the run. Doc comments on public declarations are required by the
# format gate (AllPublicDeclarationsHaveDocumentation in .swift-format).
#
# Symbol graphs come from `swift package dump-symbol-graph`, which reuses the
# ordinary debug build; the toolchain's own `docc` converts each catalog, so no
# plugin dependency is needed.
set -euo pipefail

docc="$(command -v docc || true)"
docc="${docc:-/opt/swift/usr/bin/docc}"
[[ -x "$docc" ]] || { echo "docc not found on PATH or at $docc" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

rm -rf .build/*/symbolgraph
swift package dump-symbol-graph
graphs=(.build/*/symbolgraph)
[[ ${#graphs[@]} -eq 1 && -d "${graphs[0]}" ]] || { echo "no symbol graph directory under .build" >&2; exit 1; }

converted=0
for catalog in Sources/*/*.docc; do
    module="$(basename "$(dirname "$catalog")")"
    # One module's graphs only: its own, plus its extensions of other modules.
    mkdir -p "$work/$module/symbols"
    found=0
    for graph in "${graphs[0]}/$module.symbols.json" "${graphs[0]}/$module@"*.symbols.json; do
        if [[ -f "$graph" ]]; then
            cp "$graph" "$work/$module/symbols/"
            found=1
        fi
    done
    [[ $found -eq 1 ]] || { echo "no symbol graph for $module" >&2; exit 1; }
    echo "docc convert $catalog"
    "$docc" convert "$catalog" \
        --additional-symbol-graph-dir "$work/$module/symbols" \
        --fallback-display-name "$module" \
        --fallback-bundle-identifier "org.swift-resilience.$module" \
        --warnings-as-errors \
        --output-path "$work/$module/$module.doccarchive"
    converted=$((converted + 1))
done
[[ $converted -gt 0 ]] || { echo "no DocC catalog found under Sources" >&2; exit 1; }
echo "docc: $converted catalogs converted without warnings"
