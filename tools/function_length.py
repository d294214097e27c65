#!/usr/bin/env python3
"""Longest C++ function bodies outside tests (issue 18: none over 120 lines).

    tools/function_length.py [--max N] [--top K]

Reads every tracked .cpp/.h/.cc file outside tests/ and fuzz seeds, strips comments and
string/character literals, and measures each function body by brace matching: a body opens
on a line whose code ends in '{' after a parameter list ')' (free functions, member
functions, constructors; not control statements, lambdas, classes or namespaces). Prints the
K longest; exits 1 when one is longer than N lines (default 120).
"""
import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTROL = re.compile(r"^\s*(if|for|while|switch|else|do|catch|try|return|case)\b")
LITERAL = re.compile(r'R"\((?:.|\n)*?\)"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
COMMENT = re.compile(r"//[^\n]*|/\*(?:.|\n)*?\*/")


def code_lines(text: str) -> list[str]:
    def blank(m: re.Match) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    # Literals first (a '//' inside a string is not a comment), then comments.
    text = re.sub(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*(?:.|\n)*?\*/', blank, text)
    return text.split("\n")


def opens_function(line: str) -> bool:
    s = line.rstrip()
    if not s.endswith("{") or CONTROL.match(s):
        return False
    head = s[:-1].rstrip()
    if head.lstrip().startswith(("namespace", "struct", "class", "enum", "union", "#", "extern")):
        return False
    if "](" in head or head.endswith("]") or "=" in head.split("(")[0]:
        return False  # lambda, initialiser
    return head.endswith(")") or head.endswith("const") or head.endswith("override") or \
        re.search(r"\)\s*(const|noexcept|override|final|->\s*[\w:<>]+)*\s*$", head) is not None


def functions(path: Path):
    lines = code_lines(path.read_text(errors="ignore"))
    i = 0
    while i < len(lines):
        if opens_function(lines[i]):
            depth, j = 0, i
            while j < len(lines):
                depth += lines[j].count("{") - lines[j].count("}")
                if depth <= 0:
                    break
                j += 1
            yield j - i + 1, i + 1
            i = j
        i += 1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max", type=int, default=120)
    ap.add_argument("--top", type=int, default=5)
    args = ap.parse_args()
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "*.cpp", "*.h", "*.cc"], check=True,
                           capture_output=True, text=True).stdout.split()
    found = []
    for f in files:
        if "/tests/" in f or f.startswith("tests/"):
            continue
        for length, line in functions(ROOT / f):
            found.append((length, f, line))
    found.sort(reverse=True)
    for length, f, line in found[:args.top]:
        print(f"{length:5d} {f}:{line}")
    over = [x for x in found if x[0] > args.max]
    if over:
        print(f"{len(over)} function(s) over {args.max} lines", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
