#!/usr/bin/env python3
"""Check that every relative Markdown link in the repository's documents leads to a file.

Reads README.md, CHANGELOG.md, Docs/*.md and every Sources/*/*.docc/**/*.md. A link is
`[text](target)`; targets with a scheme (`https:`, `doc:`), or that are only an anchor
(`#section`), are not files and are skipped. A target is resolved against the folder of
the document that holds it, as GitHub resolves it. Prints each broken link with its file
and line, and exits 1 if there is one.
"""

from __future__ import annotations

import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def documents() -> list[str]:
    paths = ["README.md", "CHANGELOG.md"]
    paths += sorted(glob.glob("Docs/*.md", root_dir=ROOT))
    paths += sorted(glob.glob("Sources/*/*.docc/**/*.md", root_dir=ROOT, recursive=True))
    return [path for path in paths if os.path.exists(os.path.join(ROOT, path))]


def broken_links(path: str) -> list[tuple[int, str]]:
    folder = os.path.dirname(os.path.join(ROOT, path))
    broken = []
    in_fence = False
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.lstrip().startswith(("```", "~~~")):
                in_fence = not in_fence
            if in_fence:
                continue
            for match in LINK.finditer(line):
                target = match.group("target").split("#", 1)[0]
                if not target or SCHEME.match(target):
                    continue
                if not os.path.exists(os.path.normpath(os.path.join(folder, target))):
                    broken.append((number, match.group("target")))
    return broken


def main() -> int:
    failures = 0
    for path in documents():
        for number, target in broken_links(path):
            print(f"{path}:{number}: link to a missing file: {target}")
            failures += 1
    if failures:
        print(f"{failures} broken relative link(s)")
        return 1
    print(f"relative links: all resolve ({len(documents())} documents)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
