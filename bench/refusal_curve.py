"""Refusing what is asked: the trade-off curve of rag.py's joint rule against the floor alone.

Standard library only. Runs rag.py's retrieval and refusal judgement (judge_question, default
settings: hybrid, k=5, the floor in force for the index) over a file of cases, answerable ones
and ones marked "unanswerable": true, and keeps each case's relevance, its verdict, and what
the judgement says of each rule apart: whether the passages hold too few of the question's
words (judged on evidence alone), and whether they hold too little of what the question asks
of its subject (the joint coverage; judged at a floor the relevance just clears). Then it
prints, for each margin the joint rule could use (a passage holding too little of what is asked
must clear the floor by that much), the share of unanswerable cases refused and of answerable
ones refused; beside it, what raising the floor for every question refuses at the same share of
answerable cases. The margins at which the rule gives every case the verdict rag.py gave it
(rag.py's own margin among them) are marked.

    python bench/refusal_curve.py --db DB CASES.json [--keep rows.json]
    python bench/refusal_curve.py --rows rows.json          # the curve again, no retrieval

The embedder is the index's (EMBED_BASE_URL etc. from the environment, as rag.py reads them).
A case's "group" (a folder's name) gets its own line: before the joint rule, and as rag.py
judged it.
"""

import argparse
import contextlib
import dataclasses
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import rag  # noqa: E402

MARGINS = (0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2, 0.3, 1.0)  # 1.0: joint alone


def measure(db: str, cases: list[dict]) -> list[dict]:
    """Each case's figures as rag.py's judgement finds them."""
    cfg = rag.config_from_env(db=db)
    q = rag.QueryOptions()
    rows = []
    with contextlib.ExitStack() as closer:
        store, retriever = rag.open_for_query(cfg, q, closer)
        opts, floor = rag.ask_options(q, retriever)
        for i, case in enumerate(cases, 1):
            print(f"\r{i}/{len(cases)}", end="", file=sys.stderr)
            question = case["question"]  # one alone: searched and judged as asked
            hits = retriever.retrieve(question, opts.mode, opts.k, also=question).judged
            v = rag.judge_question(retriever, question, hits, opts)
            alone = rag.judge_question(retriever, question, hits,
                                       dataclasses.replace(opts, by_evidence=True))
            cleared = rag.judge_question(retriever, question, hits, dataclasses.replace(
                opts, floor=v.relevance, by_evidence=False))  # only the joint rule's margin left
            rows.append({"question": question, "group": case.get("group", ""),
                         "unanswerable": bool(case.get("unanswerable")),
                         "relevance": v.relevance, "coverage": v.coverage, "joint": alone.joint,
                         "floor": opts.floor, "by_evidence": opts.by_evidence,
                         "refused": bool(v.refusal), "few_words": bool(alone.refusal),
                         "little_asked": bool(cleared.refusal) and not alone.refusal})
    print(file=sys.stderr)
    return rows


def refused(r: dict, margin: float | None, raise_by: float = 0.0) -> bool:
    """Whether r is refused: the floor (raised by raise_by) and the evidence, and the
    joint rule at margin (None: not applied)."""
    below = not r["by_evidence"] and r["relevance"] < r["floor"] + raise_by
    if below or r["few_words"]:
        return True
    return (margin is not None and not r["by_evidence"] and r["little_asked"]
            and r["relevance"] < r["floor"] + margin)


def shares(rows: list[dict], margin, raise_by: float = 0.0) -> tuple[float, float]:
    """(unanswerable refused, answerable refused)."""
    off = [refused(r, margin, raise_by) for r in rows if r["unanswerable"]]
    ans = [refused(r, margin, raise_by) for r in rows if not r["unanswerable"]]
    return sum(off) / max(len(off), 1), sum(ans) / max(len(ans), 1)


def verdicts(rows: list[dict]) -> tuple[float, float]:
    """(unanswerable refused, answerable refused) as rag.py judged them."""
    off = [r["refused"] for r in rows if r["unanswerable"]]
    ans = [r["refused"] for r in rows if not r["unanswerable"]]
    return sum(off) / max(len(off), 1), sum(ans) / max(len(ans), 1)


def floor_alone_at(rows: list[dict], answerable: float) -> float:
    """The unanswerable share the floor alone refuses when raised until it refuses
    as many answerable cases as answerable says (the nearest step not above it)."""
    best = shares(rows, None)[0]
    for step in range(1, 301):
        off, ans = shares(rows, None, step / 1000)
        if ans > answerable + 1e-9:
            break
        best = off
    return best


def report(rows: list[dict]) -> None:
    n_off = sum(r["unanswerable"] for r in rows)
    print(f"{len(rows) - n_off} answerable, {n_off} unanswerable cases")
    print("margin   unanswerable refused   answerable refused   floor alone at that rate")
    off, ans = shares(rows, None)
    print(f"  none   {off:20.3f}   {ans:18.3f}   (rag.py before the joint rule)")
    for m in MARGINS:
        off, ans = shares(rows, m)
        mark = "   <- rag.py's verdicts" if all(refused(r, m) == r["refused"] for r in rows) else ""
        print(f"  {m:4.2f}   {off:20.3f}   {ans:18.3f}   {floor_alone_at(rows, ans):.3f}{mark}")
    groups = sorted({r["group"] for r in rows if r["group"]})
    for g in groups:
        sub = [r for r in rows if r["group"] == g]
        before, now = shares(sub, None), verdicts(sub)
        print(f"  {g}: unanswerable refused {before[0]:.3f} -> {now[0]:.3f}, "
              f"answerable refused {before[1]:.3f} -> {now[1]:.3f}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="?", help="a JSON list of cases")
    p.add_argument("--db", help="the index")
    p.add_argument("--keep", help="write each case's figures here (JSON)")
    p.add_argument("--rows", help="read the figures kept by --keep instead of measuring")
    args = p.parse_args()
    if args.rows:
        with open(args.rows) as f:
            rows = json.load(f)
        if rows and "little_asked" not in rows[0]:
            p.error(f"{args.rows} was kept by an older refusal_curve.py: measure again")
    else:
        if not (args.cases and args.db):
            p.error("give CASES and --db, or --rows")
        with open(args.cases) as f:
            rows = measure(args.db, json.load(f))
        if args.keep:
            with open(args.keep, "w") as f:
                json.dump(rows, f)
    report(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
