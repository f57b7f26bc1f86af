"""What the benchmarks fake and check, kept here so that bench/ does not lean on the test module.

A fake OpenAI-compatible embeddings server on a free loopback port, with faults
injected by request number or by request body; the synthetic vocabulary the
corpora are written from; and the two views of a database the benchmarks
compare: what an index run decided, and whether SQLite and FTS5 find it sound.
The vectors, their shuffled order and the faults are those of the test suite's
fake server, so bench figures are produced as they were when bench borrowed it.
"""

import contextlib
import json
import random
import re
import socket
import sqlite3
import struct
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["WORDS", "FakeServer", "alpha_embed", "embeddings_body", "snapshot", "soundness"]

WORDS = ("amber birch cedar delta ember fjord grove harbor island juniper kestrel lagoon "
         "meadow nectar orchard prairie quartz river summit tundra").split()

DIM = 64            # small enough to be cheap, large enough that the fake words rarely collide
HANG_LIMIT = 30     # seconds a hang lasts if close() never comes, so no thread is held for ever
POLL = 0.02         # seconds between the serving loop's looks at shutdown(): close() is quick
RESET_CLAIM = "1000"   # the Content-Length a reset reply promises and never delivers
RESET_PART = b'{"data": [{"index": 0, "embed'   # the half body sent before the reset

# The words alpha_embed reads and those it leaves out: rag.py's word rule and stopwords when
# bench borrowed the test suite's fake (the vectors stay the same)
WORD = re.compile(r"\w+")
STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been
before being below between both but by can could did do does doing down during
each few for from further had has have having he her here hers herself him
himself his how i if in into is it its itself just me more most my myself no nor
not now of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these
they this those through to too under until up very was we were what when where
which while who whom why will with would you your yours yourself yourselves
""".split())


def alpha_embed(text, dim=DIM):
    """Hashed alphabetic words only (digits are invisible), stopwords left out."""
    vec = [0.0] * dim
    for word in WORD.findall(text.lower()):
        if word.isalpha() and word not in STOPWORDS:
            vec[zlib.crc32(word.encode()) % dim] += 1.0
    vec[0] += 0.01  # never all zero
    return vec


def embeddings_body(body, embed=alpha_embed, shuffle=True):
    """An embeddings response for a request body; shuffled, since a client must order by index."""
    items = [{"object": "embedding", "index": i, "embedding": embed(t)}
             for i, t in enumerate(body["input"])]
    if shuffle:
        random.Random(len(items)).shuffle(items)
    return json.dumps({"data": items, "model": body["model"]}).encode()


class FakeServer:
    """/v1/embeddings on a free loopback port, answering faults where asked.

    A fault is (status, headers, body), "reset" (the connection is cut after
    half a body), "hang" (no answer until the client gives up) or a function of
    the request body returning (status, headers, body). fault_at.get(n) answers
    the n-th embeddings request (from 1): a dict, or any object with get();
    fault_when = (predicate of the request body, fault) chooses by content.
    """

    def __init__(self):
        self.fault_at = {}
        self.fault_when = None
        self.embed_count = 0
        self.lock = threading.Lock()         # requests arrive on many threads at --parallel
        self.released = threading.Event()    # ends every hang at close
        self.httpd = _Server(("127.0.0.1", 0), type("Handler", (_Handler,), {"fake": self}))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(POLL,), daemon=True)
        self.thread.start()

    def fault_for(self, path, body):
        """The fault this request meets, or None; counts embeddings requests."""
        if not path.endswith("/embeddings"):
            return None
        with self.lock:
            self.embed_count += 1
            fault = self.fault_at.get(self.embed_count)
        if not fault and self.fault_when and self.fault_when[0](body):
            fault = self.fault_when[1]
        return fault

    def close(self):
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a client that gave up on a hang; nothing to report


class _Handler(BaseHTTPRequestHandler):
    """One request to `fake`, the FakeServer that a subclass per server binds."""

    fake = None

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        fault = self.fake.fault_for(self.path, body)
        if fault:
            self.fault(fault, body)
        elif self.path.endswith("/embeddings"):
            self.reply(200, {"Content-Type": "application/json"}, embeddings_body(body))
        else:
            self.reply(404, {}, b'{"error": {"message": "no such route"}}')

    def fault(self, fault, body):
        if fault == "hang":
            self.fake.released.wait(HANG_LIMIT)
        elif fault == "reset":
            self.reset()
        else:
            self.reply(*(fault(body) if callable(fault) else fault))

    def reset(self):
        """Half a body, then a TCP reset (SO_LINGER 0 on close), as a dropped proxy does."""
        self.send_response(200)
        self.send_header("Content-Length", RESET_CLAIM)
        self.end_headers()
        self.wfile.write(RESET_PART)
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True

    def reply(self, status, headers, data):
        self.send_response(status)
        for k, v in {**headers, "Content-Length": str(len(data))}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


DOCUMENTS = "SELECT path, digest FROM documents ORDER BY path"
CHUNKS = ("SELECT d.path, c.ordinal, c.text, c.heading, c.start_line, c.end_line, c.vector "
          "FROM chunks c JOIN documents d ON d.id = c.doc_id ORDER BY d.path, c.ordinal")
FTS_CHECK = "INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')"


def snapshot(db):
    """What an index run decides: documents and every chunk with its vector."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute(DOCUMENTS).fetchall(), conn.execute(CHUNKS).fetchall()


def soundness(db):
    """SQLite's and FTS5's own integrity checks, and one signature per chunk."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute(FTS_CHECK)  # raises if FTS5 finds its index and the chunks disagree
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        chunks, sigs = (conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                        for table in ("chunks", "sigs"))
    return integrity, chunks == sigs
