"""Fault benchmark for rag.py: a long index run against a server that fails 30% of requests.

Standard library only. Writes a synthetic corpus (default 500 documents, about
2,500 chunks), indexes it once against bench's fake OpenAI-compatible server
(bench/fakes.py) without faults, then again from scratch with a fault on a
random share of embeddings requests: 429 (with and without Retry-After), 500,
502, 503, a connection reset mid-response and a hung server (the timeout
fires). When a run stops because one batch exhausted its retries, it is started
again, as a user would; finished documents are not embedded again. Reports
requests made, faults injected, retries, runs needed, time lost against the
clean run, and whether the final database equals the clean one (documents,
chunk texts, vectors) and passes SQLite's and FTS5's integrity checks.

    python bench/faults.py                      # 500 documents, 30% faults
    python bench/faults.py --docs 200 --rate 0.5 --seed 3
"""

import argparse
import contextlib
import io
import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import rag  # noqa: E402
from fakes import WORDS, FakeServer, snapshot, soundness  # noqa: E402

FAULTS = {
    "429": (429, {}, b'{"error": {"message": "Rate limit reached"}}'),
    "429 Retry-After": (429, {"Retry-After": "1"}, b"{}"),
    "500": (500, {}, b"Internal Server Error"),
    "502": (502, {"Content-Type": "text/html"}, b"<html>Bad Gateway</html>"),
    "503": (503, {}, b""),
    "reset": "reset",
    "hang": "hang",
}


class RandomFaults:
    """fault_at for FakeServer: each request fails with probability rate."""

    def __init__(self, rate, seed):
        self.rate, self.rng, self.injected = rate, random.Random(seed), {}

    def get(self, n):
        if self.rng.random() >= self.rate:
            return None
        name = self.rng.choice(sorted(FAULTS))
        self.injected[name] = self.injected.get(name, 0) + 1
        return FAULTS[name]


def write_corpus(folder, docs, seed):
    """docs Markdown files of a few sections each; returns nothing."""
    rng = random.Random(seed)
    for i in range(docs):
        parts = [f"# Report {i}"]
        for s in range(rng.randint(3, 7)):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(80, 160)))
            parts.append(f"## Section {s}\n\n{words}.")
        with open(os.path.join(folder, f"doc{i:04d}.md"), "w") as f:
            f.write("\n\n".join(parts) + "\n")


def index(folder, db, timeout, batch):
    """One `rag.py index` run in this process; returns (exit code, stderr)."""
    err = io.StringIO()
    argv = ["index", folder, "--db", db, "--timeout", str(timeout), "--batch-size", str(batch)]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = rag.main(argv)
    return code, err.getvalue()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=500, help="documents to generate (default: 500)")
    p.add_argument("--rate", type=float, default=0.3, help="share of requests that fail (default: 0.3)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default: 1)")
    p.add_argument("--timeout", type=float, default=1.0, help="client timeout for hangs, seconds (default: 1)")
    p.add_argument("--batch-size", type=int, default=16, help="texts per request (default: 16)")
    args = p.parse_args()

    server = FakeServer()
    os.environ.update(LLM_BASE_URL=server.url, LLM_API_KEY="sk-bench", EMBED_MODEL="fake-embed")
    with tempfile.TemporaryDirectory() as tmp:
        docs = os.path.join(tmp, "docs")
        os.mkdir(docs)
        write_corpus(docs, args.docs, args.seed)

        t0 = time.perf_counter()
        code, err = index(docs, os.path.join(tmp, "clean.db"), args.timeout, args.batch_size)
        clean_secs = time.perf_counter() - t0
        assert code == 0, err
        clean_requests = server.embed_count
        clean = snapshot(os.path.join(tmp, "clean.db"))

        server.embed_count = 0
        faults = server.fault_at = RandomFaults(args.rate, args.seed)
        db, runs, stops = os.path.join(tmp, "faulty.db"), 0, []
        t0 = time.perf_counter()
        while True:
            runs += 1
            code, err = index(docs, db, args.timeout, args.batch_size)
            if code == 0:
                break
            stops.append(err.strip())
            assert len(err.strip().splitlines()) == 1 and err.startswith("rag: error: ") and runs < 20, err
        faulty_secs = time.perf_counter() - t0
        server.close()

        same = snapshot(db) == clean
        sound = soundness(db)
        injected = sum(faults.injected.values())
        print(f"corpus: {args.docs} documents, {len(clean[1])} chunks, {args.batch_size} per request")
        print(f"clean run: {clean_requests} requests in {clean_secs:.1f} s")
        print(f"faulty runs: {server.embed_count} requests, {injected} faults injected "
              f"({injected / server.embed_count:.0%}): "
              + ", ".join(f"{k} {v}" for k, v in sorted(faults.injected.items())))
        print(f"  retries: {server.embed_count - clean_requests}; runs needed: {runs} "
              f"(stopped in one line {len(stops)} time(s){': ' + stops[0] if stops else ''})")
        print(f"  time: {faulty_secs:.1f} s, {faulty_secs - clean_secs:.1f} s lost to faults")
        print(f"result equals the clean run: {same}; integrity: {sound[0]}, signatures complete: {sound[1]}")
        return 0 if same and sound == ("ok", True) else 1


if __name__ == "__main__":
    sys.exit(main())
