"""A big folder, as a user runs rag.py on it: the first index run, runs with
nothing changed, cold search processes, and what the index holds per chunk.

    python bench/bigfolder.py /usr/share/doc --db doc.db            # index it first if new
    python bench/bigfolder.py /usr/share/doc --db doc.db --runs 5 --searches 9
    python bench/bigfolder.py /usr/share/doc --db doc.db --runs 0 --searches 0 --recall 50

Each command is a new `python rag.py ...` process (as a user types it), timed
by wall clock, with its peak resident memory from os.wait4. The questions are
the first lines of --questions (default: a few about a Debian system's docs).
The index is kept, so a second call measures only what is already indexed
(the first index run only when --db does not exist yet). --recall N compares
the default dense search's top 10 with the exact one (every vector scored) for
N questions made from the index's own chunks (every other word of a stretch of
8), with the embedder the index was made with. Standard library only.
"""

import argparse
import contextlib
import inspect
import math
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RAG = os.path.join(HERE, "..", "rag.py")
QUESTIONS = ["How do I set the gzip compression level?", "What license covers redistribution?",
             "How to configure a network interface", "What changed in the latest release?",
             "Which options does the command accept for verbose output?",
             "How are man pages formatted?", "Where is the configuration file read from?",
             "How do I report a bug?", "What are the system requirements?"]


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak resident MB) of one rag.py process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, RAG, *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    secs = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"rag.py {' '.join(argv)} failed")
    return secs, usage.ru_maxrss / 1024


def per_table(db: str) -> tuple[dict[str, float], int]:
    """Bytes a chunk in use by each table and its indexes (SQLite's dbstat), and the chunks."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT name, sum(pgsize) - sum(unused) FROM dbstat GROUP BY name")
        out: dict[str, float] = {}
        for name, used in rows:
            key = ("keyword index" if name.startswith("chunks_fts") else
                   "chunks" if name.startswith("chunks") else name)
            out[key] = out.get(key, 0) + used
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return {k: v / max(chunks, 1) for k, v in out.items()}, chunks
    finally:
        conn.close()


def recall(db: str, n: int) -> str:
    """How much of the exact top 10 the default dense search finds, over n questions."""
    sys.path.insert(0, os.path.join(HERE, ".."))
    import rag
    with contextlib.ExitStack() as closer:
        cfg = rag.config_from_env(db=db)
        store, retriever = rag.open_for_query(cfg, rag.QueryOptions(), closer)
        # the depth a search ranks to (Retriever.rank's), of which the top 10 are shown
        depth = inspect.signature(rag.Retriever.rank).parameters["depth"].default
        return _recall(store, retriever, n, depth)


def _recall(store, retriever, n: int, depth: int) -> str:
    """recall's figure: each question's exact top 10 from every stored vector, against the
    top 10 of the retriever's dense search to depth."""
    dot = getattr(math, "sumprod", None) or (lambda a, b: sum(x * y for x, y in zip(a, b)))
    rnd = random.Random(7)
    ids = [cid for cid, _ in store.chunk_docs()]
    questions = []
    for row in store.chunks(rnd.sample(ids, min(len(ids), 3 * n))).values():
        words = row.chunk.text.split()
        if len(words) > 12:
            i = rnd.randrange(len(words) - 8)
            questions.append(" ".join(words[i:i + 8:2]))
    questions = questions[:n]
    qvecs = [retriever.embed_question(q) for q in questions]  # unit vectors, as a search's
    exact = [[] for _ in qvecs]  # (score, id) of the best 10 so far, one pass over the vectors
    for i in range(0, len(ids), 1000):
        for cid, v in store.vectors(ids[i:i + 1000]):
            for best, q in zip(exact, qvecs):
                best.append((dot(q, v), -cid))
                if len(best) > 40:
                    best.sort(reverse=True)
                    del best[10:]
    found = 0
    for q, best in zip(qvecs, exact):
        truth = {-c for _, c in sorted(best, reverse=True)[:10]}
        found += len(truth & {c for c, _ in retriever.dense(q, depth)[:10]})
    return f"default dense top 10 against exact, {len(qvecs)} questions: {found / (10 * len(qvecs)):.3f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder")
    p.add_argument("--db", required=True)
    p.add_argument("--runs", type=int, default=3, help="index runs with nothing changed")
    p.add_argument("--searches", type=int, default=9, help="cold search processes")
    p.add_argument("--recall", type=int, default=0, metavar="N",
                   help="also compare the default dense top 10 with exact for N questions")
    a = p.parse_args()
    index = ["index", a.folder, "--db", a.db]
    if not os.path.exists(a.db):
        secs, mb = timed(index)
        print(f"first index run: {secs:.1f} s, peak {mb:.0f} MB")
    runs = [timed(index) for _ in range(a.runs)]
    if runs:
        print(f"index, nothing changed: median {statistics.median(s for s, _ in runs):.2f} s (runs "
              f"{', '.join(f'{s:.2f}' for s, _ in runs)}), peak {max(m for _, m in runs):.0f} MB")
    searches = [timed(["search", QUESTIONS[i % len(QUESTIONS)], "--db", a.db])
                for i in range(a.searches)]
    if searches:
        print(f"cold search process: median {statistics.median(s for s, _ in searches):.2f} s, "
              f"max {max(s for s, _ in searches):.2f} s, peak {max(m for _, m in searches):.0f} MB")
    if a.recall:
        print(recall(a.db, a.recall))
    sizes, n = per_table(a.db)
    files = sum(os.path.getsize(a.db + s) for s in ("", "-wal") if os.path.exists(a.db + s))
    print(f"{n:,} chunks; file {files / n:,.0f} bytes a chunk; in use {sum(sizes.values()):,.0f}: "
          + ", ".join(f"{k} {v:,.0f}" for k, v in sorted(sizes.items(), key=lambda kv: -kv[1])))


if __name__ == "__main__":
    main()
