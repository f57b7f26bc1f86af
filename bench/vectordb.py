"""Check the README's recipe for taking an index to Chroma: `rag.py export`, load
the JSON Lines through Chroma's REST API, ask Chroma with the same question
vectors, and compare its top 10 with `rag.py search --mode dense --exact`.

    chroma run --path /tmp/chroma --port 8000        # pip install chromadb, in a venv of its own
    python bench/vectordb.py --db sf.db --cases ../shared/data/scifact/train.json
    python bench/vectordb.py --db sf-minilm.db --cases ... # with LLM_BASE_URL and EMBED_MODEL set as for rag.py

Standard library only. When no Chroma server answers at --url it says so and
exits 1 without checking anything. Chroma's HNSW index is approximate: the
collection is made with the README recipe's settings (ef 1,000, 32 neighbours).
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
RAG = os.path.join(HERE, "..", "rag.py")
sys.path.insert(0, os.path.join(HERE, ".."))
import rag  # noqa: E402

EF = 1000  # HNSW candidates kept while building and searching: 500 still missed an exact neighbour
BATCH = 500  # records a request (Chroma's limit on this machine: GET /api/v2/pre-flight-checks)
COLLECTIONS = "/api/v2/tenants/default_tenant/databases/default_database/collections"


def unit(vec):
    """vec scaled to unit length, as rag.py scores questions."""
    norm = math.hypot(*vec)
    return list(map((1.0 / norm).__mul__, vec)) if norm else list(vec)


def call(url, path, body=None):
    """One REST call; the parsed JSON reply."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data, {"Content-Type": "application/json"},
                                 method="GET" if body is None else "POST")
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read() or b"null")


def records(lines):
    """Chroma's add body for a batch of export lines: ids, vectors, texts, citations."""
    rows = [json.loads(line) for line in lines]
    return {"ids": [str(r["id"]) for r in rows], "embeddings": [r["vector"] for r in rows],
            "documents": [r["text"] for r in rows],
            "metadatas": [{"path": r["path"], "citation": r["citation"], "heading": r["heading"],
                           "document_digest": r["document_digest"]} for r in rows]}


def load(url, name, export_file):
    """Make the collection (inner product, as rag.py scores) and add every chunk."""
    made = call(url, COLLECTIONS, {"name": name, "configuration": {
        "hnsw": {"space": "ip", "ef_construction": EF, "ef_search": EF, "max_neighbors": 32}}})
    with open(export_file, encoding="utf-8") as f:
        batch = []
        for line in f:
            batch.append(line)
            if len(batch) == BATCH:
                call(url, f"{COLLECTIONS}/{made['id']}/add", records(batch))
                batch = []
        if batch:
            call(url, f"{COLLECTIONS}/{made['id']}/add", records(batch))
    return made["id"]


def exact_ids(db, question):
    out = subprocess.run([sys.executable, RAG, "search", question, "--db", db, "--mode", "dense",
                          "--exact", "--json", "-k", "10"], check=True, capture_output=True, text=True)
    return [h["chunk_id"] for h in json.loads(out.stdout)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", required=True, help="the index to export")
    p.add_argument("--cases", required=True, help="eval file whose questions are asked")
    p.add_argument("--questions", type=int, default=50)
    p.add_argument("--url", default="http://localhost:8000", help="Chroma server")
    a = p.parse_args()
    try:
        call(a.url, "/api/v2/heartbeat")
    except (urllib.error.URLError, OSError) as e:
        print(f"vectordb: no Chroma server at {a.url} ({getattr(e, 'reason', e)}): nothing was checked. "
              "Install it with 'pip install chromadb' (in a venv of its own) and start "
              "'chroma run --path DIR --port 8000'.", file=sys.stderr)
        return 1
    cfg = rag.config_from_env(db=a.db)
    embedder = rag.make_embedder(cfg)
    questions = [c["question"] for c in rag.load_cases(a.cases)[:a.questions]]
    name = f"rag-check-{os.getpid()}"
    with tempfile.TemporaryDirectory() as tmp:
        export = os.path.join(tmp, "index.jsonl")
        t0 = time.perf_counter()
        subprocess.run([sys.executable, RAG, "export", "--db", a.db, "--out", export], check=True)
        t1 = time.perf_counter()
        cid = load(a.url, name, export)
        t2 = time.perf_counter()
    same_order = same_set = 0
    try:
        for q in questions:
            vec = unit(embedder.embed([q])[0])
            got = call(a.url, f"{COLLECTIONS}/{cid}/query", {"query_embeddings": [vec], "n_results": 10,
                                                              "include": ["distances"]})
            chroma = [int(i) for i in got["ids"][0]]
            exact = exact_ids(a.db, q)
            same_order += chroma == exact
            same_set += set(chroma) == set(exact)
            if set(chroma) != set(exact):
                print(f"  differs: {q[:70]!r}: chroma {chroma} exact {exact}", file=sys.stderr)
    finally:
        urllib.request.urlopen(urllib.request.Request(f"{a.url}{COLLECTIONS}/{name}", method="DELETE"))
    n = len(questions)
    print(f"{os.path.basename(a.db)} ({cfg.embed_model}): export {t1 - t0:.1f} s, load into Chroma "
          f"{t2 - t1:.1f} s; top 10 equal to rag.py search --mode dense --exact for {same_set}/{n} "
          f"questions as sets, {same_order}/{n} in the same order")
    return 0 if same_set == n else 1


if __name__ == "__main__":
    sys.exit(main())
