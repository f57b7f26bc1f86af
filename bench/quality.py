"""Retrieval quality grid for rag.py on BEIR SciFact: modes x embedders, one table.

Standard library only. Indexes ../shared/data/scifact/docs (once per embedder;
databases are kept in --dir and reused), then runs rag.py's own eval over
train.json mixed with offtopic.json, so each row has ranking figures on the 809
answerable claims and abstention on the 300 off-topic questions.

    python bench/quality.py                                  # offline built-in embedder
    python bench/quality.py --server http://127.0.0.1:8089/v1 --model all-MiniLM-L6-v2

The second form also runs the grid with a real embedding model behind an
OpenAI-compatible /embeddings endpoint (for example ../shared/tools/embed_server.py).
--heading-prefix compares what is embedded for each chunk: rag.py's rule (the
default: the heading path parts the chunk does not open with, then its text),
always the whole heading path then the text, or never a prefix. Each variant
has its own databases (suffix -always, -nohead).
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import rag  # noqa: E402

DATA = os.path.join(HERE, "..", "..", "shared", "data", "scifact")


def config(db, server, model):
    return rag.Config(db=db, base_url=server, embed_model=model or rag.BUILTIN_MODEL)


def ensure_index(cfg, docs, log):
    """Index the corpus unless the database already holds it."""
    conn = rag.connect(cfg.db, create=True)
    if not conn.execute("SELECT 1 FROM documents LIMIT 1").fetchone():
        t0 = time.perf_counter()
        s = rag.index_paths(conn, rag.make_embedder(cfg), [docs], rag.IndexOptions(), log)
        print(f"indexed {s.read} files, {s.chunks} chunks in {time.perf_counter() - t0:.0f} s",
              file=sys.stderr)
    return conn


def row(cfg, conn, cases, mode, exact=False):
    """One eval run; the table row for it."""
    embedder = rag.make_embedder(cfg)
    retriever = rag.Retriever(conn, embedder, exact=exact)
    floor = rag.floor_for(embedder.model, None)
    t0 = time.perf_counter()
    r = rag.evaluate(conn, retriever, cases, mode, 5, floor, rag.Log())
    secs = time.perf_counter() - t0
    label = mode + (" --exact" if exact else "")
    return (f"| {embedder.model} | {label} | {r['ndcg@10']:.3f} | {r['recall@5']:.3f} | "
            f"{r['recall@100']:.3f} | {r['mrr']:.3f} | {r['abstention']:.3f} | "
            f"{r['false_refusals']:.3f} | {secs:.0f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=DATA, help="SciFact folder (docs/, train.json, offtopic.json)")
    p.add_argument("--dir", default=os.path.join(HERE, "data"), help="where indexes are kept")
    p.add_argument("--server", help="OpenAI-compatible base URL for a real embedding model")
    p.add_argument("--model", help="embedding model name at --server")
    p.add_argument("--modes", default="hybrid,dense,keyword", help="comma-separated modes")
    p.add_argument("--exact", action="store_true", help="also run each dense/hybrid mode with --exact")
    p.add_argument("--limit", type=int, help="use only the first N cases of each file")
    p.add_argument("--heading-prefix", choices=("rag", "always", "never"), default="rag",
                   help="what is embedded: rag.py's rule (default), the whole heading path + "
                        "text, or the text alone")
    a = p.parse_args()
    suffix = {"rag": "", "always": "-always", "never": "-nohead"}[a.heading_prefix]
    if a.heading_prefix == "always":
        rag.embed_text = lambda chunk: f"{chunk.heading}\n{chunk.text}" if chunk.heading else chunk.text
    elif a.heading_prefix == "never":
        rag.embed_text = lambda chunk: chunk.text
    cases = []
    for name in ("train.json", "offtopic.json"):
        cases += rag.load_cases(os.path.join(a.data, name))[:a.limit]
    os.makedirs(a.dir, exist_ok=True)
    setups = [(None, None)] + ([(a.server, a.model)] if a.server else [])
    print(f"SciFact: {sum(not c.get('unanswerable') for c in cases)} claims, "
          f"{sum(bool(c.get('unanswerable')) for c in cases)} off-topic questions; k=5; "
          f"rag.py {rag.__version__}, Python {sys.version.split()[0]}\n")
    print("| embedder | mode | nDCG@10 | recall@5 | recall@100 | MRR | off-topic refused | "
          "answerable refused | seconds |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for server, model in setups:
        name = (model or rag.BUILTIN_MODEL).replace("/", "_")
        cfg = config(os.path.join(a.dir, f"scifact-{name}{suffix}.db"), server, model)
        conn = ensure_index(cfg, os.path.join(a.data, "docs"), rag.Log())
        for mode in a.modes.split(","):
            print(row(cfg, conn, cases, mode), flush=True)
            if a.exact and mode != "keyword":
                print(row(cfg, conn, cases, mode, exact=True), flush=True)
        conn.close()


if __name__ == "__main__":
    main()
