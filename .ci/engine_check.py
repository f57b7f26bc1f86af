"""End to end on a real engine: Chroma's server (`chroma run`, from the
throwaway venv whose bin/ is argv[1]) with rag.py --store over urllib. Indexes
examples/docs, searches, asks, evaluates (the same figures as SQLite's), runs
the index again (nothing changed), and prints one PASS or FAIL line per check.

    python .ci/engine_check.py VENV/bin
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
RAG = os.path.join(ROOT, "rag.py")
STARTUP = 120  # seconds Chroma may take to start on a busy machine (it answered in 3 s here)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(port, proc):
    """Until Chroma answers its heartbeat, it exits, or STARTUP passes."""
    end = time.monotonic() + STARTUP
    while time.monotonic() < end and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=5):
                return True
        except OSError:
            time.sleep(0.5)
    return False


def rag(*args, env):
    p = subprocess.run([sys.executable, RAG, *args], capture_output=True, text=True, env=env, cwd=ROOT)
    return p.returncode, p.stdout, p.stderr


def check(name, ok, detail=""):
    print(f"{'PASS' if ok else 'FAIL'} {name}" + ("" if ok else f": {detail.strip()[-300:]}"))
    return ok


def main():
    bin_dir = sys.argv[1]
    data, work = tempfile.mkdtemp(), tempfile.mkdtemp()
    port = free_port()
    proc = subprocess.Popen([os.path.join(bin_dir, "chroma"), "run", "--path", data, "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not check("engine starts", wait_up(port, proc), "chroma run did not answer"):
            return
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_", "EMBED_", "RAG_"))}
        store = ["--store", f"chroma://127.0.0.1:{port}/ci-docs"]
        db = ["--db", os.path.join(work, "ci.db")]
        code, out, err = rag("index", "examples/docs", *store, env=env)
        check("index into the engine", code == 0 and "13 chunks" in out, out + err)
        code, out, err = rag("index", "examples/docs", *store, env=env)
        check("index again: nothing changed", code == 0 and "nothing changed" in out, out + err)
        code, out, err = rag("search", "how long do refunds take", "--json", *store, env=env)
        hits = json.loads(out) if code == 0 else []
        check("search cites the refunds page", hits and hits[0]["source"].endswith("refunds.md:6-13"), out + err)
        code, out, err = rag("ask", "how long do refunds take", *store, env=env)
        check("ask answers with a citation", code == 0 and "[1]" in out and "refunds.md" in out, out + err)
        code, out, err = rag("ask", "what is the capital of peru", *store, env=env)
        check("ask refuses off-topic", code == 0 and out.startswith("I could not find the answer"), out + err)
        rag("index", "examples/docs", *db, env=env)
        reports = [rag("eval", "examples/cases.json", "--json", *flags, env=env) for flags in (store, db)]
        figures = [{k: json.loads(out)[k] for k in ("recall@5", "ndcg@10", "abstention", "false_refusals")}
                   if code == 0 else err for code, out, err in reports]
        check("eval on the engine equals eval on SQLite", figures[0] == figures[1], repr(figures))
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
