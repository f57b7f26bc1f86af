"""rag.py on a server engine beside SQLite: the same corpus, embedder and
questions, indexed into each and evaluated by each, one table.

Standard library only; the engine runs elsewhere (Chroma: `pip install
chromadb` in a venv of its own, `chroma run --path DIR --host 127.0.0.1
--port 8000`). For each corpus and embedder it times `rag.py index` into a new
SQLite file and into a new engine collection, then runs `rag.py eval --json` on
both over the answerable questions mixed with off-topic ones, and prints the
figures side by side with their differences.

    python bench/engine.py --store chroma://127.0.0.1:8000 --corpus scifact
    python bench/engine.py --store chroma://127.0.0.1:8000 --embedder all-MiniLM-L6-v2@http://127.0.0.1:8089/v1

Indexes are kept in --dir (SQLite) and as collections named bench-CORPUS-MODEL
(the engine); --fresh makes both again.
"""

import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import statistics
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from serve_load import serve  # noqa: E402  (a rag.py serve on a free port)
RAG = os.path.join(HERE, "..", "rag.py")
SHARED = os.path.join(HERE, "..", "..", "shared", "data")
CORPORA = {"scifact": ("train.json", "offtopic.json"), "squad": ("cases.json", "offtopic.json")}
FIGURES = ("ndcg@10", "recall@5", "abstention", "false_refusals")


def rag(args, env):
    """Run rag.py; (seconds, stdout)."""
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, RAG, *args], env=env, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"rag.py {' '.join(args[:2])} failed: {p.stderr.strip()[-500:]}")
    return time.perf_counter() - t0, p.stdout


def drop(store, name):
    """Remove an engine collection and its -rag twin (Chroma's API), so that the next index is a first run."""
    import urllib.error
    import urllib.request
    base = store.replace("chroma://", "http://").rstrip("/") + "/api/v2/tenants/default_tenant/databases/" \
        "default_database/collections/"
    for n in (name, name + "-rag"):
        try:
            urllib.request.urlopen(urllib.request.Request(base + n, method="DELETE"), timeout=60).close()
        except urllib.error.HTTPError as e:
            if e.code != 404:
                raise


def mixed_cases(data, corpus, folder):
    cases = []
    for name in CORPORA[corpus]:
        with open(os.path.join(data, corpus, name), encoding="utf-8") as f:
            cases += json.load(f)
    path = os.path.join(folder, f"{corpus}-mixed.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cases, f)
    return path


def client(port, questions, times):
    """Ask each question in turn on one keep-alive connection; each POST /search's seconds go to times."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for q in questions:
        t0 = time.perf_counter()
        conn.request("POST", "/search", json.dumps({"question": q}), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise SystemExit(f"HTTP {resp.status}: {body[:200]!r}")
        times.append(time.perf_counter() - t0)


def served(flags, env, questions, clients):
    """Median and p95 seconds of POST /search with clients at once, each asking
    its share of questions, from the first request on (serve's default workers, for
    both stores: each is warm before serve says it serves)."""
    server, port = serve(flags, env)
    try:
        times = []
        threads = [threading.Thread(target=client, args=(port, questions[i::clients], times)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return statistics.median(times), statistics.quantiles(times, n=20)[-1], len(times)
    finally:
        server.terminate()
        server.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store", required=True, help="the engine, without a collection: chroma://HOST:PORT")
    p.add_argument("--data", default=SHARED)
    p.add_argument("--dir", default=os.path.join(HERE, "data"))
    p.add_argument("--corpus", default="scifact,squad")
    p.add_argument("--embedder", action="append", default=[], metavar="MODEL@URL")
    p.add_argument("--no-builtin", action="store_true")
    p.add_argument("--fresh", action="store_true", help="index again into new databases and collections")
    p.add_argument("--serve", type=int, default=0, metavar="N", help="also time served searches: N questions "
                   "of the cases asked over POST /search by 1 client, then by 8 at once, on each store")
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    tmp = tempfile.mkdtemp()
    embedders = ([] if a.no_builtin else [(None, None)]) + [tuple(s.split("@", 1)) for s in a.embedder]
    rows, served_rows = [], []
    for corpus in a.corpus.split(","):
        cases = mixed_cases(a.data, corpus, tmp)
        for model, url in embedders:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_", "EMBED_", "RAG_"))}
            if model:
                env.update(EMBED_BASE_URL=url, EMBED_MODEL=model)
            name = re.sub(r"[^A-Za-z0-9]+", "-", f"bench-{corpus}-{model or 'builtin'}").strip("-")
            db = os.path.join(a.dir, f"{name}.db")
            where = {"sqlite": ["--db", db], "engine": ["--store", f"{a.store.rstrip('/')}/{name}"]}
            if a.fresh:
                if os.path.exists(db):
                    os.remove(db)
                drop(a.store, name)
            out = {}
            for kind, flags in where.items():
                secs, text = rag(["index", os.path.join(a.data, corpus, "docs"), *flags], env)
                chunks = re.search(r"; (\d+) chunks \((\d+) embedded", text)
                _, report = rag(["eval", cases, "--json", *flags], env)
                out[kind] = (secs, chunks.groups() if chunks else ("?", "?"), json.loads(report))
                print(f"{corpus} {model or 'builtin'} {kind}: index {secs:.1f} s ({text.splitlines()[0]})",
                      file=sys.stderr)
            if a.serve:
                with open(cases, encoding="utf-8") as f:
                    questions = [c["question"] for c in json.load(f)][:a.serve]
                for kind, flags in where.items():
                    for n in (1, 8):
                        med, p95, count = served(flags, env, questions, n)
                        served_rows.append(f"| {corpus} | {model or 'builtin-hash-v1'} | {kind} | {n} | "
                                           f"{med * 1000:.0f} | {p95 * 1000:.0f} | {count} |")
            s, e = out["sqlite"][2], out["engine"][2]
            rows.append(f"| {corpus} | {model or 'builtin-hash-v1'} | " + " | ".join(
                f"{s[f]:.3f} / {e[f]:.3f} ({e[f] - s[f]:+.3f})" for f in FIGURES)
                + f" | {out['sqlite'][0]:.0f} / {out['engine'][0]:.0f} s |")
    print("| corpus | embedder | " + " | ".join(f"{f} SQLite / engine (diff)" for f in FIGURES)
          + " | index SQLite / engine |")
    print("| --- " * (len(FIGURES) + 3) + "|")
    print("\n".join(rows))
    if served_rows:
        print("\n| corpus | embedder | store | clients | median ms | p95 ms | searches |")
        print("| --- " * 7 + "|")
        print("\n".join(served_rows))


if __name__ == "__main__":
    main()
