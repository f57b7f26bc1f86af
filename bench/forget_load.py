"""Forget under load: is every receipt of `rag.py forget` true while a server
answers asks and streamed chats that quote the text being forgotten?

    python bench/forget_load.py [--rounds 20] [--asks 200] [--clients 8] [--delay 0.3]
                                [--rag PATH]

One `rag.py serve` (a fake chat server on 127.0.0.1 answers each question
after --delay seconds, quoting its first passage: streamed for the chats)
and --clients clients sending --asks requests a round in all (POST /ask and
streamed POST /v1/chat/completions, half each, about a secret plan and about
other documents). Each round: a new secret plan is indexed; once a quarter of
the round's requests have been answered, `rag.py forget plans/roundN.md` runs
while the rest are in flight. When every request has been answered, the
index's file and its write-ahead log are searched for any 40-byte run of the
plan's text (the bench's own search, for what forget's check promises): a
receipt that said "checked: no ... run" and is followed by a run found is
false. Then `forget` runs again on the same path (the plan's file is still
there, its document gone): it must succeed.

Standard library only, loopback only, bounded (every request has a timeout,
every loop a count). --rag runs another rag.py (an older one, to see the
bench catch what it let through). Prints one line a round and the totals;
exit status 1 when any receipt was false or any second forget failed.
"""

import argparse
import contextlib
import http.client
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
STEP = 120  # seconds any one command or request may take before the round counts as failed
RUN = 40  # bytes: forget promises no run this long of a forgotten text is left
HAS_WORD = re.compile(rb"[A-Za-z0-9\x80-\xff]")  # a run of spaces or dashes tells nothing
PLACES = 3  # places a file's runs are named at most

OTHERS = {f"guide/topic{n}.md": f"# Topic {n}\n\nThe {w} team meets on floor {n} every {d}; "
          f"its handbook covers {w} rotas, {w} budgets and the yearly {w} review.\n"
          for n, (w, d) in enumerate(zip(
              ["support", "billing", "design", "legal", "sales", "research", "security", "travel"],
              ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "morning", "evening",
               "week"]))}


def plan(n: int) -> str:
    """Round n's secret: a codename, figures and sentences no other document holds."""
    rnd = random.Random(n)
    price, week = rnd.randrange(100, 999), rnd.randrange(1, 52)
    return (f"# Project Bluebird{n}\n\nAcme will buy Globex{n} for {price} million dollars in week "
            f"{week}; the board of Bluebird{n} votes in private before the merger of Globex{n}.\n\n"
            f"Only the two chief executives of Bluebird{n} know the price of {price} million.\n")


class FakeChat:
    """/v1/chat/completions on a free loopback port: after delay seconds, the
    first passage's first sentence, cited as [1] (streamed when asked)."""

    def __init__(self, delay: float):
        chat = self
        self.delay = delay
        self.count = 0
        self.lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with chat.lock:
                    chat.count += 1
                time.sleep(chat.delay * random.random() * 2)  # the model at work (uneven)
                prompt = body["messages"][-1]["content"]
                m = re.search(r"<passage n=\"1\"[^>]*>\n(.*?)\n</passage>", prompt, re.S)
                text = (m.group(1).split("\n\n")[-1].split(";")[0] if m else "No passage") + " [1]."
                if body.get("stream"):
                    return self.stream(text)
                out = json.dumps({"choices": [{"message": {"role": "assistant", "content": text},
                                               "finish_reason": "stop"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def stream(self, text):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for i in range(0, len(text), 12):
                    event = {"choices": [{"delta": {"content": text[i:i + 12]}}]}
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b'data: {"choices": [{"delta": {}, "finish_reason": "stop"}]}\n\n'
                                 b"data: [DONE]\n\n")
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def run(rag: str, args: list, cwd: str, env: dict) -> tuple[int, str]:
    p = subprocess.run([sys.executable, rag, *args], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=STEP)
    return p.returncode, p.stdout + p.stderr


def serve(rag: str, cwd: str, env: dict):
    """`rag.py serve` on a free port: (process, port)."""
    proc = subprocess.Popen([sys.executable, rag, "serve", "--port", "0"], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for _ in range(50):  # notes before the line that says where it serves
        line = proc.stderr.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if m:
            threading.Thread(target=proc.stderr.read, daemon=True).start()  # drain its notes
            return proc, int(m.group(1))
        if not line:
            break
    proc.kill()
    raise SystemExit("serve did not start")


def request(port: int, n: int, round_no: int) -> str:
    """One ask (even n) or streamed chat (odd n); the reply's body as text."""
    q = (f"What will Acme pay for Globex{round_no} in Project Bluebird{round_no}?" if n % 3
         else "When does the billing team meet?")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=STEP)
    try:
        if n % 2:
            body = {"model": "rag", "stream": True, "messages": [{"role": "user", "content": q}]}
            conn.request("POST", "/v1/chat/completions", json.dumps(body),
                         {"Content-Type": "application/json"})
        else:
            conn.request("POST", "/ask", json.dumps({"question": q}),
                         {"Content-Type": "application/json"})
        resp = conn.getresponse()
        text = resp.read().decode("utf-8", "replace")
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}: {text[:200]}")
        return text
    finally:
        conn.close()


class Runs:
    """Every RUN-byte run of some texts (UTF-8), found in other bytes in one pass: a run
    covers one aligned half-run block, so blocks are looked up first, and runs only around
    a block that matches."""

    def __init__(self, texts: list[str]):
        data = b"\0".join(t.encode("utf-8") for t in texts)
        self.blocks = {data[i:i + RUN // 2] for i in range(len(data) - RUN // 2 + 1)}
        self.runs = {data[i:i + RUN] for i in range(len(data) - RUN + 1)}

    def find(self, data: bytes, start: int = 0) -> int:
        """The offset of the first run of the texts in data at or after start; -1: none."""
        half = RUN // 2
        for s in range(start + (-start) % half, len(data) - half + 1, half):
            if data[s:s + half] in self.blocks:
                for at in range(max(start, s - half + 1), s + 1):  # the runs covering this block
                    if data[at:at + RUN] in self.runs and HAS_WORD.search(data[at:at + RUN]):
                        return at
        return -1

    def holds(self, text: str) -> bool:
        return self.find(text.encode("utf-8")) >= 0


def runs_of(db: str, rel: str) -> Runs:
    """The Runs of a document's stored text (its chunks and headings), read before it goes."""
    import sqlite3
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        texts = [f"{t}\0{h}" for t, h in conn.execute(
            "SELECT c.text, c.heading FROM chunks c JOIN documents d ON d.id = c.doc_id "
            "WHERE d.rel = ?", (rel,))]
    finally:
        conn.close()
    return Runs(texts)


def left_in(db: str, runs: Runs) -> list[str]:
    """'FILE at byte N' for the runs in the index's file and its write-ahead log (PLACES
    at most a file)."""
    places = []
    for path in (db, db + "-wal"):
        data = b""
        with contextlib.suppress(FileNotFoundError), open(path, "rb") as f:
            data = f.read()
        at, found = runs.find(data), 0
        while at >= 0 and found < PLACES:
            places.append(f"{os.path.basename(path)} at byte {at}")
            at, found = runs.find(data, at + RUN), found + 1
    return places


def one_round(a, n: int, tmp: str, env: dict, port: int) -> dict:
    docs, db = os.path.join(tmp, "docs"), os.path.join(tmp, "rag.db")
    rel = os.path.join("plans", f"round{n}.md")
    with open(os.path.join(docs, rel), "w", encoding="utf-8") as f:
        f.write(plan(n))
    code, out = run(a.rag, ["index", "docs"], tmp, env)
    if code:
        raise SystemExit(f"index failed: {out}")
    runs = runs_of(db, rel)
    todo = list(range(a.asks))
    lock, answered, quoting, errors = threading.Lock(), [0], [0], []
    quarter = threading.Event()

    def client():
        while True:
            with lock:
                if not todo:
                    return
                k = todo.pop()
            try:
                reply = request(port, k, n)
                with lock:
                    answered[0] += 1
                    quoting[0] += runs.holds(reply)
                    if answered[0] >= a.asks // 4:
                        quarter.set()
            except Exception as e:  # counted; the round goes on
                with lock:
                    errors.append(str(e)[:120])
                    quarter.set() if len(errors) > a.asks // 4 else None

    threads = [threading.Thread(target=client) for _ in range(a.clients)]
    for t in threads:
        t.start()
    quarter.wait(STEP)
    t0 = time.perf_counter()
    code, receipt = run(a.rag, ["forget", rel], tmp, env)
    took = time.perf_counter() - t0
    in_flight = a.asks - answered[0] - len(todo)  # sent, not yet answered, as forget returned
    for t in threads:
        t.join(STEP)
    found = left_in(db, runs)
    said_clean = code == 0 and "checked: no " in receipt
    code2, again = run(a.rag, ["forget", rel], tmp, env)
    os.remove(os.path.join(docs, rel))
    return {"round": n, "forget_exit": code, "seconds": round(took, 2), "said_clean": said_clean,
            "false": said_clean and bool(found), "found": found[:3], "in_flight": in_flight,
            "quoting": quoting[0], "errors": len(errors), "again_exit": code2,
            "receipt": receipt.strip().splitlines()[-1][:160] if code else "",
            "again": again.strip().splitlines()[-1][:160] if code2 else ""}


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--asks", type=int, default=200, help="requests a round, from all clients")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--delay", type=float, default=0.3, help="the chat server's mean seconds")
    p.add_argument("--rag", default=os.path.join(HERE, "..", "rag.py"))
    a = p.parse_args(argv)
    a.rag = os.path.abspath(a.rag)
    tmp = os.path.realpath(tempfile.mkdtemp(prefix="rag-forget-load-"))
    chat = FakeChat(a.delay)
    env = {k: v for k, v in os.environ.items()
           if not re.match(r"(LLM|OPENAI|EMBED|RERANK|RAG)_", k)}
    env.update(LLM_BASE_URL=chat.url, LLM_API_KEY="sk-bench", EMBED_MODEL="builtin-hash-v2")
    server = None
    try:
        os.makedirs(os.path.join(tmp, "docs", "plans"))
        for rel, text in OTHERS.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, "docs", rel)), exist_ok=True)
            with open(os.path.join(tmp, "docs", rel), "w", encoding="utf-8") as f:
                f.write(text)
        run(a.rag, ["index", "docs"], tmp, env)
        server, port = serve(a.rag, tmp, env)
        rounds = []
        for n in range(1, a.rounds + 1):
            r = one_round(a, n, tmp, env, port)
            rounds.append(r)
            print(json.dumps(r), flush=True)
        false = sum(r["false"] for r in rounds)
        failed_again = sum(r["again_exit"] != 0 for r in rounds)
        total = lambda key: sum(r[key] for r in rounds)  # noqa: E731
        print(f"rounds {len(rounds)}; receipts that said clean {total('said_clean')}, false {false}"
              f"; forget refused or found runs {sum(r['forget_exit'] != 0 for r in rounds)}"
              f"; second forget failed {failed_again}; replies quoting the plan "
              f"{total('quoting')}; requests in flight as forget returned {total('in_flight')}"
              f"; request errors {total('errors')}"
              f"; forget seconds median {sorted(r['seconds'] for r in rounds)[len(rounds) // 2]}")
        return 1 if false or failed_again else 0
    finally:
        if server:
            server.terminate()
            try:
                server.wait(STEP)
            except subprocess.TimeoutExpired:
                server.kill()
        chat.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
