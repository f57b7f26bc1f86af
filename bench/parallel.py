"""Indexing time against an embeddings server that takes LATENCY seconds a request,
one request at a time and with --parallel N, and whether the databases are the same.

    python bench/parallel.py [--docs ../shared/data/scifact/docs] [--latency 0.3] [--parallel 1,4,8]

The server is bench's fake OpenAI-compatible server (bench/fakes.py, 64-dimension
vectors) with every embeddings reply held for --latency seconds, as a hosted API
holds it whatever the client does. Each run indexes into a new
database; the table gives the wall time, the speed-up over --parallel 1, and
whether documents, chunk texts and vectors equal those of --parallel 1.
"""

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import rag  # noqa: E402
from fakes import FakeServer, embeddings_body, snapshot  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", default=os.path.join(HERE, "..", "..", "shared", "data", "scifact", "docs"))
    p.add_argument("--latency", type=float, default=0.3)
    p.add_argument("--parallel", default="1,4,8")
    a = p.parse_args()
    server = FakeServer()

    def slow(body):
        time.sleep(a.latency)
        return 200, {"Content-Type": "application/json"}, embeddings_body(body)
    server.fault_when = (lambda body: True, slow)
    os.environ.update(LLM_BASE_URL=server.url, EMBED_MODEL="fake-embed")
    print("| --parallel | seconds | speed-up | requests | same database as --parallel 1 |\n"
          "| --- | --- | --- | --- | --- |")
    base = first = None
    with tempfile.TemporaryDirectory() as tmp:
        for n in map(int, a.parallel.split(",")):
            db = os.path.join(tmp, f"p{n}.db")
            before = server.embed_count
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                code = rag.main(["index", a.docs, "--db", db, "--parallel", str(n)])
            secs = time.perf_counter() - t0
            if code:
                raise SystemExit(f"index failed with --parallel {n}")
            shot = snapshot(db)
            base, first = base or secs, first or shot
            print(f"| {n} | {secs:.1f} | {base / secs:.1f}x | {server.embed_count - before} | "
                  f"{'yes' if shot == first else 'NO'} |", flush=True)
    server.close()


if __name__ == "__main__":
    main()
