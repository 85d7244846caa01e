#!/usr/bin/env python3
"""Fails when a code excerpt in README.md quotes a line its example file no longer has.

Each fenced block in the language of an example (c, cpp, python, go) must consist of lines
of that example, or of the file its fence names after the language (```c path), compared
without indentation; `...` marks an omission.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = {"c": "examples/c/hello.c", "cpp": "examples/cpp/hello.cpp",
            "python": "examples/python/hello.py", "go": "examples/go/main.go"}


def main():
    readme = (ROOT / "README.md").read_text()
    stale = []
    for lang, named, body in re.findall(r"```(\w+)[ \t]*([^\n]*)\n(.*?)```", readme, re.S):
        if lang not in EXAMPLES:
            continue
        example = named.strip() or EXAMPLES[lang]
        source = {line.strip() for line in (ROOT / example).read_text().splitlines()}
        stale += [f"{example}: {line.strip()}" for line in body.splitlines()
                  if line.strip() not in ("", "...") and line.strip() not in source]
    for line in stale:
        print(f"README quotes a line its example lacks: {line}", file=sys.stderr)
    print(f"check_readme: {'FAILED' if stale else 'README excerpts match the examples'}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
