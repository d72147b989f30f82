#!/usr/bin/env python3
"""Lists the functions whose body is longer than LIMIT lines (issue 22: about 80).

Usage: scripts/long_fns.py LIMIT DIR...   e.g. scripts/long_fns.py 80 runtime/src flow/src macros/src topology/src

Counts, for rustfmt-formatted sources, the lines between a signature's opening `{` and the `}`
at the signature's indentation. Prints `lines path:line name`, longest first.
"""
import pathlib
import re
import sys

SIG = re.compile(r"^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")


def long_fns(limit, roots):
    for root in roots:
        for path in sorted(pathlib.Path(root).rglob("*.rs")):
            lines = path.read_text().split("\n")
            for i, line in enumerate(lines):
                m = SIG.match(line)
                if not m:
                    continue
                j = i
                while j < len(lines) and not lines[j].rstrip().endswith(("{", ";")):
                    j += 1
                if j == len(lines) or lines[j].rstrip().endswith(";"):
                    continue
                k = j + 1
                while k < len(lines) and lines[k] != m.group(1) + "}":
                    k += 1
                if k - j - 1 > limit:
                    yield k - j - 1, f"{path}:{i + 1}", m.group(7)


if __name__ == "__main__":
    found = sorted(long_fns(int(sys.argv[1]), sys.argv[2:]), reverse=True)
    for body, at, name in found:
        print(f"{body:4} {at} {name}")
