"""Load test of `rag.py serve`: warm search latency, then sustained searches
from concurrent clients while an `index` run adds documents to the same database.

    python bench/serve_load.py --db INDEX --cases CASES.json [--adding FOLDER]

The index is copied to a temporary folder first (yours is never changed). One
client asks --latency questions in turn (median and p95 seconds per POST
/search, keep-alive); then --clients clients (default 8), each on its own
keep-alive connection, send POST /search for --seconds (default 60) while
`rag.py index` runs again and again on the copy: it adds the --adding folders'
documents, then removes them (--prune), then adds them again, until the time
is up. Any reply that is not 200 with a list of passages is an error.
Standard library only; the README has its figures.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RAG = os.path.join(HERE, "..", "rag.py")


def start(db, env):
    return serve(["--db", db], env)


def serve(flags, env):
    """A `rag.py serve` on a free port (flags: where the index is, and any more); (process, port)."""
    server = subprocess.Popen([sys.executable, RAG, "serve", "--port", "0", *flags],
                              stderr=subprocess.PIPE, text=True, env=env)
    line = server.stderr.readline()
    port = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    if not port:
        server.kill()
        raise SystemExit(f"serve did not start: {line}{server.stderr.read()}")
    threading.Thread(target=server.stderr.read, daemon=True).start()  # drain notes
    return server, int(port.group(1))


def search(conn, question):
    conn.request("POST", "/search", json.dumps({"question": question}), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    body = resp.read()
    if resp.status != 200 or not isinstance(json.loads(body), list):
        raise RuntimeError(f"HTTP {resp.status}: {body[:200]!r}")


def client_loop(port, questions, stop, out):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    i = 0
    while not stop.is_set():
        t0 = time.perf_counter()
        try:
            search(conn, questions[i % len(questions)])
            out["times"].append(time.perf_counter() - t0)
        except Exception as e:  # count it, open a new connection, go on
            out["errors"].append(str(e)[:200])
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        i += 1
    conn.close()


def indexer(db, folders, stop, env, runs, tmp):
    """Until stopped: copy the folders into a feed folder and index it (adding
    their documents), then empty it and index it with --prune (removing them)."""
    feed = os.path.join(tmp, "feed")
    os.makedirs(feed)
    with open(os.path.join(feed, "keep.md"), "w") as f:
        f.write("# Feed\n\nA document that stays, so that every run has one.\n")
    while not stop.is_set():
        for adding in (True, False):
            for i, folder in enumerate(folders):
                target = os.path.join(feed, f"{i}-{os.path.basename(folder.rstrip('/'))}")
                if adding:
                    shutil.copytree(folder, target)
                else:
                    shutil.rmtree(target)
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, RAG, "index", feed, "--prune", "--db", db], capture_output=True,
                               text=True, env=env)
            line = next((l for l in p.stdout.splitlines() if l.startswith("indexed")), p.stderr.strip()[-200:])
            runs.append((time.perf_counter() - t0, p.returncode, line))
            if stop.is_set():
                break


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", required=True, help="the index to serve (copied first)")
    p.add_argument("--cases", required=True, help="eval cases whose questions are the queries")
    p.add_argument("--adding", action="append", default=[], help="folder indexed during the load (repeatable)")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--latency", type=int, default=200, help="questions for the one-client latency")
    a = p.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_", "EMBED_", "RERANK_"))}
    questions = [c["question"] for c in json.load(open(a.cases))]
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "index.db")
        shutil.copy(a.db, db)
        server, port = start(db, env)
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            times = []
            for q in questions[:a.latency]:
                t0 = time.perf_counter()
                search(conn, q)
                times.append(time.perf_counter() - t0)
            conn.close()
            warm = times[1:]  # the first loads the signatures
            print(f"one client, {len(warm)} searches after the first ({times[0]:.3f} s): median "
                  f"{statistics.median(warm):.4f} s, p95 {sorted(warm)[int(0.95 * len(warm))]:.4f} s")
            stop, runs, outs = threading.Event(), [], [{"times": [], "errors": []} for _ in range(a.clients)]
            workers = [threading.Thread(target=client_loop, args=(port, questions[i::a.clients], stop, o))
                       for i, o in enumerate(outs)]
            if a.adding:
                workers.append(threading.Thread(target=indexer, args=(db, a.adding, stop, env, runs, tmp)))
            t0 = time.perf_counter()
            for w in workers:
                w.start()
            time.sleep(a.seconds)
            stop.set()
            for w in workers:
                w.join()
            secs = time.perf_counter() - t0
            done = [t for o in outs for t in o["times"]]
            errors = [e for o in outs for e in o["errors"]]
            print(f"{a.clients} clients for {secs:.0f} s: {len(done)} searches, {len(done) / secs:.1f}/s, "
                  f"median {statistics.median(done):.4f} s, p95 {sorted(done)[int(0.95 * len(done))]:.4f} s, "
                  f"{len(errors)} errors" + (f" (first: {errors[0]})" if errors else ""))
            if runs:
                failed = [line for _, code, line in runs if code]
                print(f"alongside: {len(runs)} index runs on the same database, each "
                      f"{min(r[0] for r in runs):.1f}-{max(r[0] for r in runs):.1f} s, {len(failed)} failed"
                      + (f" (first: {failed[0]})" if failed else "") + f"; first: {runs[0][2]}; "
                      f"second: {runs[1][2] if len(runs) > 1 else '-'}")
        finally:
            server.terminate()
            server.wait(30)


if __name__ == "__main__":
    main()
