"""rag.py's lines by section against each section's budget, and what kind of line each is.

Standard library only. A section is a banner (two dashed comment lines round
its name) and what follows it; the parser tells docstring lines from code.
BUDGETS is the one table of the sections' line budgets: a test fails when a
section passes its budget (test_layers_sections_keep_their_line_budgets).

    python bench/sections.py                  # this rag.py
    python bench/sections.py OLD.py rag.py    # two versions side by side
"""

import ast
import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ("code", "doc", "comment", "blank")
MOST_LINES = 1200  # no section over this: past it, a section is a library, not an idea
# Each section's budget in lines: what it holds now, with room for a small change. A change
# that needs more first looks for what its lines replace, or raises the budget here, in review.
BUDGETS = {
    "Module docstring, imports": 250, "Constants": 175, "Helpers": 250, "Words and citations": 150,
    "Errors and records": 225, "Read text": 725, "Read documents": 750, "Read markup": 600,
    "Secrets": 600, "Parse": 175, "Chunk": 575, "Embed": 600, "Dense index": 375, "SQLite": 750,
    "Store": 925, "Engine store": 950, "Walk": 400, "Index": 875, "Watch": 200, "Retrieve": 775,
    "Converse": 175, "Refuse": 525, "Generate": 400, "Check": 275, "Extract": 1050, "Answer": 200,
    "Eval": 475, "Wiring": 200, "Serve": 550, "HTTP": 775, "Command line": 1175, "Data": 425,
}


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


def over_budget(table, budgets=None):
    """'Section: N lines, over its budget of M', one per section of a sections() table over
    it (none: [])."""
    budgets = BUDGETS if budgets is None else budgets
    return [f"{name}: {sum(c.values())} lines, over its budget of {budgets[name]}"
            for name, c in table.items() if sum(c.values()) > budgets.get(name, MOST_LINES)]


def main(paths):
    paths = paths or [os.path.join(HERE, "..", "rag.py")]
    tables = [sections(p) for p in paths]
    names = list(dict.fromkeys(n for t, _ in tables for n in t))
    cols = " | ".join(os.path.basename(os.path.dirname(os.path.abspath(p))) + "/"
                      + os.path.basename(p) for p in paths)
    change = " change |" if len(paths) > 1 else ""
    print(f"| section | {cols} |{change} budget | last: {' / '.join(KINDS)} |")
    print("| --- |" + " ---: |" * (len(paths) + bool(change) + 1) + " --- |")
    for n in names:
        counts = [sum(t.get(n, {}).values()) for t, _ in tables]
        last = tables[-1][0].get(n, collections.Counter())
        print(f"| {n} | " + " | ".join(f"{c:,}" for c in counts)
              + (f" | {counts[-1] - counts[0]:+,}" if change else "")
              + f" | {BUDGETS.get(n, MOST_LINES):,}"
              + f" | {' / '.join(format(last[k], ',') for k in KINDS)} |")
    totals = [n for _, n in tables]
    print("| **all** | " + " | ".join(f"**{n:,}**" for n in totals)
          + (f" | **{totals[-1] - totals[0]:+,}**" if change else "")
          + f" | **{sum(BUDGETS.values()):,}** | |")


if __name__ == "__main__":
    main(sys.argv[1:])
