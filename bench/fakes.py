"""The fakes the benchmarks and the tests share: bench/ never leans on the test module.

A fake OpenAI-compatible server (embeddings, chat, rerank) on a free loopback
port, with faults injected by request number, by request body or in order; the
synthetic vocabulary the corpora are written from; and the two views of a
database the benchmarks and the fault tests compare: what an index run decided,
and whether SQLite and FTS5 find it sound. The vectors, their shuffled order and
the faults are those bench figures were produced with.
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

__all__ = ["POLL", "WORDS", "FakeServer", "QuietServer", "alpha_embed", "embeddings_body",
           "is_probe", "snapshot", "soundness", "word_overlap"]

WORDS = ("amber birch cedar delta ember fjord grove harbor island juniper kestrel lagoon "
         "meadow nectar orchard prairie quartz river summit tundra").split()

DIM = 64            # small enough to be cheap, large enough that the fake words rarely collide
HANG_LIMIT = 30     # seconds a hang lasts if close() never comes, so no thread is held for ever
POLL = 0.005        # seconds between the serving loop's looks at shutdown(): close() waits one
RESET_CLAIM = "1000"   # the Content-Length a reset reply promises and never delivers
RESET_PART = b'{"data": [{"index": 0, "embed'   # the half body sent before the reset
CHAT_REPLY = "Refunds take 5 to 7 business days [1]."
USAGE = {"prompt_tokens": 50, "completion_tokens": 9}

# The words alpha_embed reads and those it leaves out: rag.py's word rule and stopwords as they
# were when bench's figures were made, kept here on purpose: a change to rag.py's stopwords must
# not move the fake's vectors, nor the figures made with them
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


def word_overlap(query, documents):
    """Fake rerank scores: the query's words found in each document."""
    words = set(WORD.findall(query.lower()))
    return [len(words & set(WORD.findall(d.lower()))) for d in documents]


def embeddings_body(body, embed=alpha_embed, shuffle=True):
    """An embeddings response for a request body; shuffled, since a client must order by index."""
    items = [{"object": "embedding", "index": i, "embedding": embed(t)}
             for i, t in enumerate(body["input"])]
    if shuffle:
        random.Random(len(items)).shuffle(items)
    return json.dumps({"data": items, "model": body["model"]}).encode()


def is_probe(body, probes) -> bool:
    """A request embedding only texts of probes (a set), each perhaps after a prefix (an
    embedding model's query prefix): the refusal probes every index run embeds after its
    documents."""
    texts = body.get("input") if isinstance(body, dict) else None
    return isinstance(texts, list) and bool(texts) and all(
        isinstance(t, str) and any(t[i:] in probes for i in range(min(len(t), 200)))
        for t in texts)


class FakeServer:
    """/v1/embeddings, /v1/chat/completions and /v1/rerank on a free loopback port.

    A fault is (status, headers, body), "reset" (the connection is cut after
    half a body), "hang" (no answer until the client gives up or close()) or a
    function of the request body returning (status, headers, body). Faults are
    chosen in this order: faults (a list, any request, taken in turn), then
    chat_faults or rerank_faults (the same, for that route), then for embeddings
    fault_at.get(n) for the n-th embeddings request (from 1; a dict, or any object
    with get()) and fault_when = (predicate of the request body, fault).

    probes: the refusal probes (rag.py's PROBES) to answer apart (is_probe): their
    requests are neither counted in embed_count nor faulted nor kept in requests
    (the tests count and fault the requests for documents and questions only);
    none given, they are requests like any other (as bench figures were measured).
    rewrite_prompt: the system prompt of rag.py's request for a question rewritten,
    which chat answers with rewrite_reply.
    """

    def __init__(self, probes=(), rewrite_prompt=None):
        self.probes = frozenset(probes)
        self.rewrite_prompt = rewrite_prompt
        self.requests = []          # (path, headers dict, body dict)
        self.faults = []            # answered before normal replies
        self.chat_faults = []       # the same, for chat requests only
        self.rerank_faults = []     # and for rerank requests only
        self.fault_at = {}          # embeddings request number -> fault
        self.fault_when = None      # (predicate of the request body, fault): by content, not order
        self.max_input = None       # longer inputs get the OpenAI "too long" 400
        self.after_reply = None     # called with the embeddings request number, once answered
        self.embed_count = 0
        self.probe_count = 0        # requests embedding the probes, when answered apart
        self.chat_reply = CHAT_REPLY
        self.rewrite_reply = None   # what a rewriting request gets; None: the question as sent
        self.embed = alpha_embed
        self.rerank = word_overlap  # (query, documents) -> one score per document
        self.shuffle = True
        self.lock = threading.Lock()         # requests arrive on many threads at --parallel
        self.released = threading.Event()    # ends every hang at close
        self.httpd = QuietServer(("127.0.0.1", 0), type("Handler", (_Handler,), {"fake": self}))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(POLL,), daemon=True)
        self.thread.start()

    def take(self, path, headers, body):
        """(fault or None, embeddings request number or None) for this request; records it."""
        if self.probes and path.endswith("/embeddings") and is_probe(body, self.probes):
            with self.lock:
                self.probe_count += 1
            return None, None
        with self.lock:
            self.requests.append((path, headers, body))
            fault = self.faults.pop(0) if self.faults else None
            if not fault and path.endswith("/chat/completions") and self.chat_faults:
                fault = self.chat_faults.pop(0)
            if not fault and path.endswith("/rerank") and self.rerank_faults:
                fault = self.rerank_faults.pop(0)
            if not path.endswith("/embeddings"):
                return fault, None
            self.embed_count += 1
            fault = fault or self.fault_at.get(self.embed_count)
            if not fault and self.fault_when and self.fault_when[0](body):
                fault = self.fault_when[1]
            return fault, self.embed_count

    def paths(self, suffix):
        """The requests recorded whose path ends with suffix."""
        return [r for r in self.requests if r[0].endswith(suffix)]

    def close(self):
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()


class QuietServer(ThreadingHTTPServer):
    """A fake server that says nothing of a client gone mid-reply (a hang given up on, a
    killed index run): the traceback would land in the stderr a test is reading."""

    # rag.py sends up to 8 requests at once (the floor's questions): with socketserver's
    # backlog of 5 a connection beyond it waits for the kernel's 1 s SYN retry
    request_queue_size = 64

    def handle_error(self, request, client_address):
        pass


class _Handler(BaseHTTPRequestHandler):
    """One request to `fake`, the FakeServer that a subclass per server binds."""

    fake = None

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        fault, n = self.fake.take(self.path, dict(self.headers), body)
        if fault:
            self.fault(fault, body)
        elif self.path.endswith("/embeddings"):
            self.embeddings(body)
        elif self.path.endswith("/chat/completions"):
            self.chat(body)
        elif self.path.endswith("/rerank"):
            self.rerank(body)
        else:
            self.reply(404, {}, b'{"error": {"message": "no such route"}}')
        if n is not None and self.fake.after_reply:
            self.fake.after_reply(n)

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

    def embeddings(self, body):
        limit = self.fake.max_input
        too_long = [t for t in body["input"] if limit and len(t) > limit]
        if too_long:
            msg = (f"This model's maximum context length is {limit} tokens, "
                   f"however you requested {len(too_long[0])} tokens.")
            return self.reply(400, {}, json.dumps({"error": {"message": msg}}).encode())
        self.reply(200, {"Content-Type": "application/json"},
                   embeddings_body(body, self.fake.embed, self.fake.shuffle))

    def chat(self, body):
        """The fixed chat_reply (a rewriting request: rewrite_reply, or the question as sent),
        whole or streamed 4 characters an event."""
        text = self.fake.chat_reply
        if self.fake.rewrite_prompt and body["messages"][0]["content"] == self.fake.rewrite_prompt:
            asked = body["messages"][1]["content"].split("Last question: ")[1].split("\n")[0]
            text = self.fake.rewrite_reply or asked
        if not body.get("stream"):
            data = {"choices": [{"message": {"role": "assistant", "content": text}}],
                    "usage": USAGE}
            return self.reply(200, {"Content-Type": "application/json"}, json.dumps(data).encode())
        events = [": keep-alive"]
        for i in range(0, len(text), 4):
            delta = {"choices": [{"delta": {"content": text[i:i + 4]}}]}
            events.append("data: " + json.dumps(delta))
        events.append("data: " + json.dumps({"choices": [], "usage": USAGE}))
        events.append("data: [DONE]")
        self.reply(200, {"Content-Type": "text/event-stream"},
                   ("\n\n".join(events) + "\n\n").encode())

    def rerank(self, body):
        scores = self.fake.rerank(body["query"], body["documents"])
        results = sorted(({"index": i, "relevance_score": x} for i, x in enumerate(scores)),
                         key=lambda r: -r["relevance_score"])[:body.get("top_n")]
        self.reply(200, {}, json.dumps({"results": results}).encode())


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
