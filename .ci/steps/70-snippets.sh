#!/usr/bin/env bash
# Every ```swift block in README.md and the DocC catalogs compiles against the
# public API, and the test examples among them pass. See .ci/snippets.py for the
# markers (skip, continue, prelude) and for how a block is compiled. Every
# relative link in the documents leads to a file (.ci/links.py).
set -euo pipefail
python3 .ci/links.py
python3 .ci/snippets.py
