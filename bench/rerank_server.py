"""A stand-in reranking server for measuring rag.py's --rerank-model and --rerank-depth.

    python bench/rerank_server.py --embed-url http://127.0.0.1:8089/v1 --embed-model all-MiniLM-L6-v2

It answers POST /v1/rerank ({"model", "query", "documents", "top_n"} ->
{"results": [{"index", "relevance_score"}]}, the shape of Cohere, Jina, vLLM,
llama.cpp's server) by the cosine similarity of query and document under an
embedding model behind an OpenAI-compatible /embeddings endpoint (for example
../shared/tools/embed_server.py). That is a bi-encoder standing in for a
cross-encoder, which no package here ships: it shows how a second, stronger
model reorders rag.py's candidates at each depth, not what a cross-encoder
would score. Document vectors are cached by text, so a run over many depths
embeds each chunk once. Standard library only.
"""

import argparse
import hashlib
import json
import math
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Scorer:
    def __init__(self, url, model):
        self.url, self.model, self.cache = url.rstrip("/") + "/embeddings", model, {}

    def embed(self, texts):
        body = json.dumps({"model": self.model, "input": texts}).encode()
        req = urllib.request.Request(self.url, body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as resp:
            data = json.load(resp)["data"]
        return [item["embedding"] for item in sorted(data, key=lambda d: d["index"])]

    def scores(self, query, documents):
        keys = [hashlib.sha256(d.encode()).hexdigest() for d in documents]
        missing = list({k: d for k, d in zip(keys, documents) if k not in self.cache}.items())
        for i in range(0, len(missing), 64):
            part = missing[i:i + 64]
            for (k, _), vec in zip(part, self.embed([d for _, d in part])):
                self.cache[k] = vec
        q = self.embed([query])[0]
        return [cosine(q, self.cache[k]) for k in keys]


def cosine(a, b):
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    return sum(x * y for x, y in zip(a, b)) / (na * nb) if na and nb else 0.0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=8094)
    p.add_argument("--embed-url", required=True)
    p.add_argument("--embed-model", required=True)
    a = p.parse_args()
    scorer = Scorer(a.embed_url, a.embed_model)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if not self.path.endswith("/rerank"):
                return self.reply(404, {"error": {"message": "no such route"}})
            scores = scorer.scores(body["query"], body["documents"])
            results = sorted(({"index": i, "relevance_score": s} for i, s in enumerate(scores)),
                             key=lambda r: -r["relevance_score"])[:body.get("top_n") or len(scores)]
            self.reply(200, {"model": body.get("model"), "results": results})

        def reply(self, status, obj):
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    ThreadingHTTPServer(("127.0.0.1", a.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
