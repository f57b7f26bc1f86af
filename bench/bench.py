"""Search speed benchmark for rag.py: candidates by sketch (and signature) + exact rescoring vs --exact.

Standard library only. Builds synthetic indexes through rag.py's own storage
functions (clustered unit vectors, so near neighbours exist), then runs
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
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import rag  # noqa: E402

DEFAULT_SIZES = "10000:1536,100000:1536,1000000:384"


class Replay(rag.Embedder):
    """An embedder handing out vectors made beforehand, so only storage is timed."""

    def __init__(self, model, vectors):
        self.model, self.vectors = model, vectors

    def embed(self, texts, kind=None):
        out, self.vectors = self.vectors[:len(texts)], self.vectors[len(texts):]
        return out


def clustered(rnd, n, dim, centres=2000, spread=0.35):
    """Yield n unit vectors scattered around random centres."""
    cs = [rag.normalize([rnd.gauss(0, 1) for _ in range(dim)]) for _ in range(min(centres, n))]
    pool = [[rnd.gauss(0, spread / math.sqrt(dim)) for _ in range(dim)] for _ in range(256)]
    for _ in range(n):
        c, a, b = rnd.choice(cs), rnd.choice(pool), rnd.choice(pool)
        shift = rnd.random()
        yield rag.normalize([x + y + shift * z for x, y, z in zip(c, a, b)])


def build(path, n, dim, seed=1, per_doc=100, batch=2000):
    """Write n synthetic chunks through rag's storage path; return chunks/s of storing."""
    rnd = random.Random(seed)
    store = rag.SqliteStore.open(path, create=True)
    gen, stored_time, done = clustered(rnd, n, dim), 0.0, 0
    while done < n:
        docs, vectors = [], []
        for d in range(done // per_doc, (min(n, done + batch) + per_doc - 1) // per_doc):
            count = min(per_doc, n - d * per_doc)
            chunks = tuple(rag.Chunk(i, f"synthetic chunk {d}.{i}", "", 1, 1) for i in range(count))
            docs.append(rag.PendingDoc(f"doc{d:07d}.txt", f"doc{d:07d}.txt", f"{d:064x}", 0.0, chunks))
            vectors.extend(next(gen) for _ in range(count))
        t0 = time.perf_counter()
        batcher = rag.Batcher(store, Replay(f"synthetic-{dim}", vectors), len(vectors), rag.IndexStats())
        for doc in docs:
            batcher.add(doc)
        batcher.finish()
        stored_time += time.perf_counter() - t0
        done += len(vectors)
        print(f"  built {done}/{n} ({done / stored_time:.0f} chunks/s stored)", file=sys.stderr, end="\r")
    print(file=sys.stderr)
    store.close()
    return n / stored_time


def query_vectors(conn, count, seed=2):
    """Questions near stored points: a stored vector plus noise, renormalised."""
    rnd = random.Random(seed)
    ids = rnd.sample([r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY id")], count)
    vecs = [json.loads(conn.execute("SELECT vector FROM chunks WHERE id = ?", (i,)).fetchone()[0])
            for i in ids]
    return [rag.normalize([x + rnd.gauss(0, 0.5 / math.sqrt(len(v))) for x in v]) for v in vecs]


def exact_top(conn, queries, k):
    """Exact top-k ids for every query in one pass over the stored vectors."""
    tops = [[] for _ in queries]
    for cid, vec in conn.execute("SELECT id, vector FROM chunks"):
        v = json.loads(vec)
        for t, q in zip(tops, queries):
            t.append((rag.dot(q, v), cid))
            if len(t) > 4 * k:
                t.sort(reverse=True)
                del t[k:]
    return [[cid for _, cid in sorted(t, reverse=True)[:k]] for t in tops]


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
    store = rag.SqliteStore.open(db)
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
    conn = rag.connect(db)
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
    return [rag.normalize(v) for v in embedder.embed([c["question"] for c in cases])]


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
        conn = rag.connect(a.db)
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
        conn = rag.connect(db)
        queries = query_vectors(conn, a.queries)
        conn.close()
        print(measure(db, queries, a.exact_runs, "synthetic", rate), flush=True)


if __name__ == "__main__":
    main()
