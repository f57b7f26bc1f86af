"""rag.py's lines by section, and what kind of line each is.

Standard library only. A section is a banner (two dashed comment lines round
its name) and what follows it; the parser tells docstring lines from code.

    python bench/sections.py                  # this rag.py
    python bench/sections.py OLD.py rag.py    # two versions side by side
"""

import ast
import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ("code", "doc", "comment", "blank")


def sections(path):
    """{section name: Counter of line kinds} in file order, and the line count."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    lines = src.splitlines()
    kind = ["blank" if not l.strip() else "comment" if l.lstrip().startswith("#") else "code"
            for l in lines]
    for node in ast.walk(ast.parse(src)):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)):
            for i in range(first.lineno - 1, first.end_lineno):
                kind[i] = "doc"
    heads = [(-1, "Module docstring, imports")] + [
        (i, lines[i + 1].strip("# ").split(":")[0].strip()) for i in range(len(lines) - 2)
        if lines[i].startswith("# ----") and lines[i + 2].startswith("# ----")]
    out, j = {}, 0
    for i in range(len(lines)):
        while j + 1 < len(heads) and i >= heads[j + 1][0]:
            j += 1
        out.setdefault(heads[j][1], collections.Counter())[kind[i]] += 1
    return out, len(lines)


def main(paths):
    paths = paths or [os.path.join(HERE, "..", "rag.py")]
    tables = [sections(p) for p in paths]
    names = list(dict.fromkeys(n for t, _ in tables for n in t))
    cols = " | ".join(os.path.basename(os.path.dirname(os.path.abspath(p))) + "/"
                      + os.path.basename(p) for p in paths)
    change = " change |" if len(paths) > 1 else ""
    print(f"| section | {cols} |{change} last: {' / '.join(KINDS)} |")
    print("| --- |" + " ---: |" * (len(paths) + bool(change)) + " --- |")
    for n in names:
        counts = [sum(t.get(n, {}).values()) for t, _ in tables]
        last = tables[-1][0].get(n, collections.Counter())
        print(f"| {n} | " + " | ".join(f"{c:,}" for c in counts)
              + (f" | {counts[-1] - counts[0]:+,}" if change else "")
              + f" | {' / '.join(format(last[k], ',') for k in KINDS)} |")
    totals = [n for _, n in tables]
    print("| **all** | " + " | ".join(f"**{n:,}**" for n in totals)
          + (f" | **{totals[-1] - totals[0]:+,}**" if change else "") + " | |")


if __name__ == "__main__":
    main(sys.argv[1:])
