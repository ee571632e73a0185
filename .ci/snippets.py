#!/usr/bin/env python3
"""Compile every ```swift block in the README and the DocC catalogs.

Each block becomes its own SwiftPM target in a generated package that depends
on this repository by path, exactly as a user's package would: it sees only the
public API of the `Resilience`, `ResilienceURLSession` and `ResilienceTesting` products. Blocks are
compiled in their own modules, so the names they declare never clash.

A block that imports `Testing` becomes a test target, and the tests it declares
are run as well: an example of how to test with `TestClock` must not only
compile but pass. Every other block becomes an executable target whose
`main.swift` is the block, so top-level statements and `try await` work as
they would in a script. Executable blocks are compiled, never run.

Markers, written as an HTML comment on the line just before the fence (DocC
and GitHub do not render them):

    <!-- snippet: skip -->            not compiled; use sparingly, for fragments
                                      such as a Package.swift excerpt
    <!-- snippet: continue -->        appended to the previous block of the same
                                      file, for an article that builds an example
                                      up step by step
    <!-- snippet: prelude NAME ... --> compiled together with the stub files
                                      .ci/snippet-preludes/NAME.swift, which
                                      declare things a block only uses, such as
                                      an `api` to call

A block that does not import `Resilience` gets the import added. Compiler
messages point at the Markdown file and line, through `#sourceLocation`.

Usage: .ci/snippets.py [--list] [FILE.md ...]
Without files it checks README.md and every Sources/*/*.docc/**/*.md.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, ".build-snippets")
PACKAGE = os.path.join(WORK, "package")
PRELUDES = os.path.join(ROOT, ".ci", "snippet-preludes")

# Any indentation: a fence inside a list item is indented, and must not be missed.
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)[^`]*$")
MARKER = re.compile(r"^\s*<!--\s*snippet:\s*(?P<body>.*?)\s*-->\s*$")


@dataclass
class Block:
    path: str  # relative to ROOT
    line: int  # 1-based line of the first code line
    code: str
    markers: dict[str, list[str]]


@dataclass
class Unit:
    """One compilation unit: a block, plus any blocks that continue it."""

    blocks: list[Block] = field(default_factory=list)
    preludes: list[str] = field(default_factory=list)

    @property
    def first(self) -> Block:
        return self.blocks[0]

    def imports(self, module: str) -> bool:
        # A comment may follow the import, as in any Swift file.
        pattern = rf"^\s*(@\w+\s+)*import\s+{module}\s*(//.*)?$"
        return any(re.search(pattern, block.code, re.M) for block in self.blocks)

    @property
    def is_test(self) -> bool:
        return self.imports("Testing")

    @property
    def name(self) -> str:
        stem = os.path.splitext(os.path.basename(self.first.path))[0]
        return re.sub(r"[^A-Za-z0-9]", "_", stem) + f"_L{self.first.line}"


def fail(message: str) -> None:
    print(f"snippets: {message}", file=sys.stderr)
    sys.exit(1)


def parse_markers(line: str) -> dict[str, list[str]] | None:
    match = MARKER.match(line)
    if not match:
        return None
    markers: dict[str, list[str]] = {}
    for clause in match.group("body").split(";"):
        words = clause.split()
        if not words:
            continue
        keyword, arguments = words[0], words[1:]
        if keyword not in ("skip", "continue", "prelude"):
            return {"invalid": [clause.strip()]}
        markers.setdefault(keyword, []).extend(arguments)
    return markers


def extract(path: str) -> list[Block]:
    """The ```swift blocks of one Markdown file, with the markers before each."""
    relative = os.path.relpath(path, ROOT)
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        match = FENCE.match(lines[index])
        if not match:
            marker = parse_markers(lines[index])
            if marker and "invalid" in marker:
                fail(f"{relative}:{index + 1}: unknown marker '{marker['invalid'][0]}'")
            index += 1
            continue
        fence, info = match.group("fence"), match.group("info").lower()
        indent = len(match.group("indent"))
        start = index + 1
        end = start
        while end < len(lines):
            closing = lines[end].strip()
            if closing.startswith(fence[0] * len(fence)) and set(closing) == {fence[0]}:
                break
            end += 1
        if end == len(lines):
            fail(f"{relative}:{index + 1}: code block is never closed")
        if info == "swift":
            previous = index - 1
            while previous >= 0 and not lines[previous].strip():
                previous -= 1
            markers = (parse_markers(lines[previous]) if previous >= 0 else None) or {}
            code = "\n".join(line[indent:] if line[:indent].isspace() else line for line in lines[start:end])
            blocks.append(Block(relative, start + 1, code, markers))
        index = end + 1
    return blocks


def group(blocks: list[Block]) -> list[Unit]:
    units: list[Unit] = []
    current: dict[str, Unit] = {}  # the last unit of each file, for `continue`
    for block in blocks:
        where = f"{block.path}:{block.line - 1}"
        if "skip" in block.markers:
            continue
        if "continue" in block.markers:
            unit = current.get(block.path)
            if unit is None:
                fail(f"{where}: 'continue' with no earlier compiled block in the file")
        else:
            unit = Unit()
            units.append(unit)
            current[block.path] = unit
        unit.blocks.append(block)
        for name in block.markers.get("prelude", []):
            if not os.path.isfile(os.path.join(PRELUDES, f"{name}.swift")):
                fail(f"{where}: no prelude named '{name}' in {os.path.relpath(PRELUDES, ROOT)}")
            if name not in unit.preludes:
                unit.preludes.append(name)
    return units


def source(unit: Unit) -> str:
    """The unit's Swift source, with line directives pointing at the Markdown."""
    parts = []
    if not unit.imports("Resilience"):
        parts.append("import Resilience\n")
    for block in unit.blocks:
        absolute = os.path.join(ROOT, block.path).replace("\\", "\\\\").replace('"', '\\"')
        parts.append(f'#sourceLocation(file: "{absolute}", line: {block.line})\n{block.code}\n#sourceLocation()\n')
    return "".join(parts)


def package_identity() -> str:
    # SwiftPM names a path dependency after the last component of its path.
    return os.path.basename(ROOT).lower()


def write_package(units: list[Unit]) -> None:
    if os.path.isdir(PACKAGE):
        shutil.rmtree(PACKAGE)
    os.makedirs(PACKAGE)
    identity = package_identity()
    targets = []
    for unit in units:
        directory = os.path.join(PACKAGE, "Blocks", unit.name)
        os.makedirs(directory)
        filename = f"{unit.name}.swift" if unit.is_test else "main.swift"
        with open(os.path.join(directory, filename), "w", encoding="utf-8") as handle:
            handle.write(source(unit))
        for name in unit.preludes:
            shutil.copy(os.path.join(PRELUDES, f"{name}.swift"), os.path.join(directory, f"Prelude_{name}.swift"))
        products = ["Resilience"]
        if unit.is_test or unit.imports("ResilienceTesting"):
            products.append("ResilienceTesting")
        if unit.imports("ResilienceURLSession"):
            products.append("ResilienceURLSession")
        dependencies = ", ".join(f'.product(name: "{p}", package: "{identity}")' for p in products)
        kind = "testTarget" if unit.is_test else "executableTarget"
        targets.append(f'        .{kind}(name: "{unit.name}", dependencies: [{dependencies}], path: "Blocks/{unit.name}"),')
    manifest = f"""// swift-tools-version: 6.2
// Generated by .ci/snippets.py: every Swift code block of the README and the DocC articles.
import PackageDescription

let package = Package(
    name: "snippet-check",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    dependencies: [.package(path: "{os.path.relpath(ROOT, PACKAGE)}")],
    targets: [
{chr(10).join(targets)}
    ],
    swiftLanguageModes: [.v6]
)
"""
    with open(os.path.join(PACKAGE, "Package.swift"), "w", encoding="utf-8") as handle:
        handle.write(manifest)


def run(arguments: list[str], timeout: int) -> None:
    print("+ " + " ".join(arguments), flush=True)
    # Its own process group, so that a timeout also ends the test runner it spawns.
    process = subprocess.Popen(arguments, cwd=ROOT, start_new_session=True)
    try:
        returncode = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        # SIGINT first: `swift test` then stops the test runner, which it starts
        # in a process group of its own.
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        fail(f"'{' '.join(arguments[:3])} …' took more than {timeout} s; does an example hang?")
    if returncode != 0:
        fail(f"'{' '.join(arguments[:3])} …' failed with exit code {returncode}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="Markdown files; default: README.md and the DocC catalogs")
    parser.add_argument("--list", action="store_true", help="list the blocks and what is done with each, then stop")
    args = parser.parse_args()

    files = [os.path.abspath(f) for f in args.files] or sorted(
        [os.path.join(ROOT, "README.md")]
        + glob.glob(os.path.join(ROOT, "Sources", "*", "*.docc", "**", "*.md"), recursive=True)
    )
    files = [f for f in files if os.path.isfile(f)]
    blocks = [block for path in files for block in extract(path)]
    units = group(blocks)
    skipped = [b for b in blocks if "skip" in b.markers]

    for unit in units:
        kind = "test" if unit.is_test else "compile"
        preludes = f" (prelude {', '.join(unit.preludes)})" if unit.preludes else ""
        lines = ", ".join(str(b.line) for b in unit.blocks)
        print(f"  {kind:7} {unit.first.path} lines {lines}{preludes}")
    for block in skipped:
        print(f"  skip    {block.path} line {block.line}")
    print(f"snippets: {len(blocks)} blocks in {len(files)} files: {len(units)} units, {len(skipped)} skipped")
    if args.list:
        return
    if not units:
        fail("no Swift code blocks found; is the checker looking in the right place?")

    write_package(units)
    scratch = ["--package-path", PACKAGE, "--scratch-path", os.path.join(WORK, "build")]
    run(["swift", "build", *scratch, "--build-tests", "-Xswiftc", "-warnings-as-errors"], timeout=1_200)
    if any(unit.is_test for unit in units):
        run(["swift", "test", *scratch, "--skip-build"], timeout=int(os.environ.get("SNIPPETS_TEST_TIMEOUT", "300")))
    print(f"snippets: all {len(units)} units compile")


if __name__ == "__main__":
    main()
