"""Retrieval and refusal quality for rag.py: corpora x embedders x modes, one table.

Standard library only. For each corpus it indexes the documents once per
embedder (databases are kept in --dir and reused), then runs rag.py's own eval
over the answerable questions mixed with off-topic ones, so each row has
ranking figures and the two refusal figures (off-topic refused, answerable
refused) at the floor rag.py chooses itself.

    python bench/quality.py                                # built-in embedder, SciFact and SQuAD
    python bench/quality.py --embedder all-MiniLM-L6-v2@http://127.0.0.1:8089/v1
    python bench/quality.py --corpus squad --embedder all-MiniLM-L6-v2@http://127.0.0.1:8089/v1 \\
        --embedder minilm-aniso-1@http://127.0.0.1:8091/v1 --modes hybrid

Corpora (in ../shared/data): scifact (5,183 abstracts; 809 claims from train.json,
300 general off-topic questions) and squad (504 Wikipedia paragraphs; 2,522
questions, 300 hard off-topic questions in the same style). An --embedder is
MODEL@BASE_URL of an OpenAI-compatible /embeddings endpoint (for example
../shared/tools/embed_server.py, whose --anisotropy S and --model-name imitate
a model with another similarity scale); the built-in embedder always runs
unless --no-builtin. --server URL --model NAME is the older spelling of one
--embedder.
"""

import argparse
import contextlib
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import rag  # noqa: E402

SHARED = os.path.join(HERE, "..", "..", "shared", "data")
CORPORA = {  # name: (folder, answerable cases, off-topic cases)
    "scifact": ("scifact", "train.json", "offtopic.json"),
    "squad": ("squad", "cases.json", "offtopic.json"),
}


def config(db, server, model, rerank=None):
    """The configuration for one embedder, whatever the environment says (env={}); an index
    run's patience. rerank: (model, url, depth), with no retries and patience for a slow
    local reranker (for the question's embedding too)."""
    if rerank:
        return rag.config_from_env(env={}, db=db, embed_url=server, embed_model=model,
                                   rerank_url=rerank[1], rerank_model=rerank[0],
                                   rerank_depth=rerank[2], timeout=600, retries=0)
    return rag.config_from_env(env={}, indexing=True, db=db, embed_url=server, embed_model=model)


def ensure_index(cfg, docs, log):
    """Index the corpus unless the database already holds it."""
    with contextlib.closing(rag.open_store(cfg, create=True)) as store:
        if not store.has_chunks():
            t0 = time.perf_counter()
            s = rag.index_paths(store, rag.make_embedder(cfg), [docs], rag.IndexOptions(), log)
            print(f"indexed {s.read} files, {s.chunks} chunks in {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr)


def load(data, corpus, limit):
    folder, answerable, offtopic = CORPORA[corpus]
    cases = []
    for name in (answerable, offtopic):
        cases += rag.load_cases(os.path.join(data, folder, name))[:limit]
    return os.path.join(data, folder, "docs"), cases


def row(corpus, cfg, cases, mode, exact=False):
    """One eval run (reranked when cfg names a reranker); the table row for it."""
    with contextlib.ExitStack() as closer:
        store, retriever = rag.open_for_query(cfg, rag.QueryOptions(exact=exact), closer)
        # the floor as ask finds it: measured on the index
        floor = rag.ask_options(rag.QueryOptions(mode=mode), retriever)[0].floor
        t0 = time.perf_counter()
        r = rag.evaluate(store, retriever, cases, rag.AskOptions(mode, 5, floor), rag.Log())
        secs = time.perf_counter() - t0
    label = mode + (" --exact" if exact else "") + (f" rerank@{cfg.rerank_depth}"
                                                     if cfg.rerank_model else "")
    return (f"| {corpus} | {retriever.embedder.model} | {label} | {r['ndcg@10']:.3f} | "
            f"{r['recall@5']:.3f} | "
            f"{r['recall@100']:.3f} | {r['mrr']:.3f} | {r['abstention']:.3f} | "
            f"{r['false_refusals']:.3f} | {secs:.0f} |")


def embedders(a):
    """(model, base URL) pairs: None, None is the built-in embedder."""
    out = [] if a.no_builtin else [(None, None)]
    if a.server:
        out.append((a.model, a.server))
    for spec in a.embedder:
        model, _, url = spec.partition("@")
        if not model or not url:
            raise SystemExit(f"--embedder takes MODEL@BASE_URL, not {spec!r}")
        out.append((model, url))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=SHARED, help="folder holding scifact/ and squad/")
    p.add_argument("--dir", default=os.path.join(HERE, "data"), help="where indexes are kept")
    p.add_argument("--corpus", default="scifact,squad", help="comma-separated: scifact, squad")
    p.add_argument("--embedder", action="append", default=[], metavar="MODEL@URL",
                   help="an embedding model behind an OpenAI-compatible endpoint (repeatable)")
    p.add_argument("--no-builtin", action="store_true", help="leave out the built-in embedder")
    p.add_argument("--server", help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    p.add_argument("--modes", default="hybrid,dense,keyword", help="comma-separated modes")
    p.add_argument("--exact", action="store_true", help="also run each dense/hybrid mode with --exact")
    p.add_argument("--limit", type=int, help="use only the first N cases of each file")
    p.add_argument("--rerank", metavar="MODEL@URL", help="also run each mode reranked by this "
                   "/rerank endpoint (for example bench/rerank_server.py)")
    p.add_argument("--rerank-depths", default="10,20,30,50", help="comma-separated --rerank-depth values")
    a = p.parse_args()
    builtin = rag.config_from_env(env={}).embed_model  # the built-in embedder's model
    os.makedirs(a.dir, exist_ok=True)
    print(f"k=5; rag.py {rag.__version__}, Python {sys.version.split()[0]}\n")
    print("| corpus | embedder | mode | nDCG@10 | recall@5 | recall@100 | MRR | off-topic refused | "
          "answerable refused | seconds |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for corpus in a.corpus.split(","):
        docs, cases = load(a.data, corpus, a.limit)
        for model, server in embedders(a):
            name = (model or builtin).replace("/", "_")
            cfg = config(os.path.join(a.dir, f"{corpus}-{name}.db"), server, model)
            ensure_index(cfg, docs, rag.Log())
            for mode in a.modes.split(","):
                print(row(corpus, cfg, cases, mode), flush=True)
                if a.rerank:
                    reranker, _, url = a.rerank.partition("@")
                    for depth in map(int, a.rerank_depths.split(",")):
                        reranked = config(cfg.db, server, model, (reranker, url, depth))
                        print(row(corpus, reranked, cases, mode), flush=True)
                if a.exact and mode != "keyword":
                    print(row(corpus, cfg, cases, mode, exact=True), flush=True)


if __name__ == "__main__":
    main()
