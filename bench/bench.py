"""Search speed benchmark for rag.py: candidates by sketch (and signature) + exact rescoring vs --exact.

Standard library only. Builds synthetic indexes through rag.py's own index run
(index_paths: one-line chunks, clustered unit vectors handed out by a replaying
embedder, so near neighbours exist; the storing it times: from the vectors handed
out to the rows written), then runs
queries drawn near stored points and reports, per size: median and p95 search
time of the default path and of the exact scan, their ratio, recall@10 of the
default path against the exact ranking, peak memory of the searching process
and the database size. Each search uses a fresh Retriever, as one
`python rag.py search` does, so loading the signatures is counted.

    python bench/bench.py                          # 10k and 100k at 1536 dims, 1M at 384
    python bench/bench.py --sizes 10000:1536       # one size
    python bench/bench.py --db rag.db              # your own index (queries near stored points)
    python bench/bench.py --db rag.db --cases cases.json   # real questions, embedded as configured

Databases are kept in --dir (default: bench/data, git-ignored) and reused.
"""

import argparse
import json
import math
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import rag  # noqa: E402

DEFAULT_SIZES = "10000:1536,100000:1536,1000000:384"
PER_DOC = 100  # chunks a synthetic document
BATCH = 2000   # chunks a request of the index run (each the chunks of PER_DOC-chunk documents)
DOT = getattr(math, "sumprod", None) or (lambda a, b: sum(x * y for x, y in zip(a, b)))


def unit(vec):
    """vec scaled to unit length (as rag.py stores vectors)."""
    norm = math.hypot(*vec)
    return list(map((1.0 / norm).__mul__, vec)) if norm else list(vec)


class Replay(rag.Embedder):
    """An embedder handing out vectors made beforehand (the documents'), so that only storing
    is timed: returned is when it last handed some out, given counts them. A question (the
    floor an index run measures at its end) gets a random unit vector."""

    def __init__(self, model, vectors, dim, seed):
        self.model, self.vectors, self.dim, self.rnd = model, vectors, dim, random.Random(seed)
        self.returned, self.given = time.perf_counter(), 0

    def embed_request(self, texts, patient=True):
        out = [next(self.vectors) for _ in texts]
        self.given += len(out)
        self.returned = time.perf_counter()
        return out

    def embed(self, texts, kind=None):
        return [unit([self.rnd.gauss(0, 1) for _ in range(self.dim)]) for _ in texts]


def clustered(rnd, n, dim, centres=2000, spread=0.35):
    """Yield n unit vectors scattered around random centres."""
    cs = [unit([rnd.gauss(0, 1) for _ in range(dim)]) for _ in range(min(centres, n))]
    pool = [[rnd.gauss(0, spread / math.sqrt(dim)) for _ in range(dim)] for _ in range(256)]
    for _ in range(n):
        c, a, b = rnd.choice(cs), rnd.choice(pool), rnd.choice(pool)
        shift = rnd.random()
        yield unit([x + y + shift * z for x, y, z in zip(c, a, b)])


def write_docs(folder, n):
    """n chunks' text as Markdown files of PER_DOC one-line paragraphs, each one chunk."""
    for d in range((n + PER_DOC - 1) // PER_DOC):
        with open(os.path.join(folder, f"doc{d:07d}.md"), "w") as f:
            f.write("\n\n".join(f"synthetic chunk {d}.{i}"
                                 for i in range(min(PER_DOC, n - d * PER_DOC))) + "\n")


def build(path, n, dim, seed=1):
    """Index n synthetic chunks with rag's index run; return chunks/s of storing: the time
    from each request's vectors handed out until the documents they complete are written
    (normalise, JSON, signature, sketch, SQLite insert), the reading and chunking left out."""
    store = rag.open_store(rag.config_from_env(env={}, db=path), create=True)
    embedder = Replay(f"synthetic-{dim}", clustered(random.Random(seed), n, dim), dim, seed + 1)
    write, stored = store.write, [0.0]

    def timed_write(*args, **kwargs):
        write(*args, **kwargs)
        stored[0] += time.perf_counter() - embedder.returned
        embedder.returned = time.perf_counter()  # a second write: from the first one's end
        print(f"  built {embedder.given}/{n} ({embedder.given / stored[0]:.0f} chunks/s stored)",
              file=sys.stderr, end="\r")
    store.write = timed_write
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(path))) as docs:
        write_docs(docs, n)
        # chunks of 30 characters: each paragraph one chunk (two do not fit in one)
        s = rag.index_paths(store, embedder, [docs], rag.IndexOptions(size=30, overlap=0,
                                                                       batch=BATCH), rag.Log())
    print(file=sys.stderr)
    store.close()
    if s.chunks != n:
        raise SystemExit(f"the index run made {s.chunks} chunks of {n}")
    return n / stored[0]


def query_vectors(conn, count, seed=2):
    """Questions near stored points: a stored vector plus noise, renormalised."""
    rnd = random.Random(seed)
    ids = rnd.sample([r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY id")], count)
    vecs = [json.loads(conn.execute("SELECT vector FROM chunks WHERE id = ?", (i,)).fetchone()[0])
            for i in ids]
    return [unit([x + rnd.gauss(0, 0.5 / math.sqrt(len(v))) for x in v]) for v in vecs]


def exact_top(conn, queries, k):
    """Exact top-k ids for every query in one pass over the stored vectors."""
    tops = [[] for _ in queries]
    for cid, vec in conn.execute("SELECT id, vector FROM chunks"):
        v = json.loads(vec)
        for t, q in zip(tops, queries):
            t.append((DOT(q, v), cid))
            if len(t) > 4 * k:
                t.sort(reverse=True)
                del t[k:]
    return [[cid for _, cid in sorted(t, reverse=True)[:k]] for t in tops]


def connect(db):
    """The index's database, read only (the bench reads its chunks' vectors)."""
    if not os.path.exists(db):
        raise SystemExit(f"no index at {db}")
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True)


def peak_memory_mb():
    """This process's peak resident memory (VmHWM; ru_maxrss would include the parent's)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cached_truth(conn, db, queries):
    """Exact top-10 per query, saved beside the database: it is the slow part."""
    path = db + ".truth.json"
    if os.path.exists(path):
        with open(path) as f:
            saved = json.load(f)
        if saved["queries"] == queries:
            return saved["truth"]
    truth = exact_top(conn, queries, 10)
    with open(path, "w") as f:
        json.dump({"queries": queries, "truth": truth}, f)
    return truth


def search_child(db, queries_file, exact_runs):
    """Run in a fresh process: time searches, report recall and peak memory as JSON."""
    store = rag.open_store(rag.config_from_env(env={}, db=db))
    with open(queries_file) as f:
        queries = json.load(f)
    fast_t, exact_t, found = [], [], []
    for q in queries:
        r = rag.Retriever(store, None)
        t0 = time.perf_counter()
        hits = r.dense(q, 10)
        fast_t.append(time.perf_counter() - t0)
        found.append([cid for cid, _ in hits])
    for q in queries[:exact_runs]:
        r = rag.Retriever(store, None, exact=True)
        t0 = time.perf_counter()
        r.dense(q, 10)
        exact_t.append(time.perf_counter() - t0)
    peak_mb = peak_memory_mb()
    print(json.dumps({"fast": fast_t, "exact": exact_t, "found": found, "peak_mb": peak_mb}))


def measure(db, queries, exact_runs, label, stored_rate=None):
    """Time default and exact search in a child process; one table row."""
    conn = connect(db)
    truth = cached_truth(conn, db, queries)
    n, dim = conn.execute("SELECT count(*) FROM chunks").fetchone()[0], len(queries[0])
    conn.close()
    qfile = db + ".queries.json"
    with open(qfile, "w") as f:
        json.dump(queries, f)
    out = subprocess.run([sys.executable, __file__, "--child", db, qfile, str(exact_runs)],
                         check=True, capture_output=True, text=True).stdout
    res = json.loads(out)
    recall = statistics.mean(len(set(a) & set(b)) / len(b) for a, b in zip(res["found"], truth))
    fast, exact = statistics.median(res["fast"]), statistics.median(res["exact"])
    p95 = sorted(res["fast"])[int(0.95 * (len(res["fast"]) - 1))]
    size_mb = sum(os.path.getsize(db + s) for s in ("", "-wal") if os.path.exists(db + s)) / 1e6
    return (f"| {label} | {n:,} | {dim} | {fast:.3f} | {p95:.3f} | {exact:.2f} | {exact / fast:.0f}x "
            f"| {recall:.3f} | {res['peak_mb']:.0f} | {size_mb:,.0f} | "
            + (f"{stored_rate:,.0f}" if stored_rate else "-") + " |")


HEADER = ("| index | chunks | dims | default median s | default p95 s | exact median s | speed-up "
          "| recall@10 vs exact | peak MB | db MB | stored chunks/s |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")


def real_questions(db, cases_file, count):
    """Embed real questions with the configured embedder (environment as for rag.py)."""
    cfg = rag.config_from_env(db=db)
    cases = rag.load_cases(cases_file)[:count]
    embedder = rag.make_embedder(cfg)
    return [unit(v) for v in embedder.embed([c["question"] for c in cases])]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default=DEFAULT_SIZES, help=f"N:DIM,... (default {DEFAULT_SIZES})")
    p.add_argument("--queries", type=int, default=50, help="queries per size (default 50)")
    p.add_argument("--exact-runs", type=int, default=3, help="exact searches timed per size (default 3)")
    p.add_argument("--dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "data"),
                   help="where synthetic databases are kept")
    p.add_argument("--db", help="benchmark this existing index instead")
    p.add_argument("--cases", help="with --db: real questions from an eval file")
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        return search_child(a.child[0], a.child[1], int(a.child[2]))
    print(f"Python {sys.version.split()[0]}, rag.py {rag.__version__}\n\n{HEADER}")
    if a.db:
        conn = connect(a.db)
        queries = real_questions(a.db, a.cases, a.queries) if a.cases else query_vectors(conn, a.queries)
        conn.close()
        print(measure(a.db, queries, a.exact_runs, os.path.basename(a.db)), flush=True)
        return
    os.makedirs(a.dir, exist_ok=True)
    for spec in a.sizes.split(","):
        n, dim = map(int, spec.split(":"))
        db = os.path.join(a.dir, f"synthetic-{n}-{dim}.db")
        rate = None
        if not os.path.exists(db):
            rate = build(db, n, dim)
        conn = connect(db)
        queries = query_vectors(conn, a.queries)
        conn.close()
        print(measure(db, queries, a.exact_runs, "synthetic", rate), flush=True)


if __name__ == "__main__":
    main()
