"""Duplicates in the top k, before and after rag.py shows a copied text once.

Standard library only, offline (the built-in embedder). Builds a folder as a
Debian machine has one: every /usr/share/doc/*/copyright file (licences
copied into hundreds of them, each under its own copyright lines) and Node's
API pages, each as .md, as .html and inside all.html (when nodejs's docs are
installed), indexes it once (kept in --dir), then asks questions made from
its own passages (every other word of one sentence, as rag.py's floor does),
half from the copyright files, half from the Node .md pages, and counts:

    dup slots   top-k slots holding a passage alike to a better-ranked one in
                the same top k (Jaccard of word 3-grams >= 0.7, rag.py's rule for a
                copy), and of those, identical ones (the same words)
    loose dups  the same at Jaccard >= 0.5 (what a looser rule would also merge)
    recall@k    the question's own document among the top k's documents;
                "copies": also when it is a copy of a passage shown (eval's rule)

"before" is the ranking as rag.py gave it without collapsing (Retriever.rank's
top k); "after" is Retriever.retrieve's.

    python bench/duplicates.py                    # 100 questions, k=5
    python bench/duplicates.py --questions 200 --k 10 --dir /tmp/dups-bench
"""

import argparse
import contextlib
import glob
import inspect
import os
import random
import re
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import rag  # noqa: E402

NODE_API = "/usr/share/doc/nodejs/api"
NODE_PAGES = 12  # Node modules whose .md and .html twins are copied (all.html holds every one)
ALIKE = 0.7  # Jaccard of word 3-grams at which rag.py shows two passages as one
GRAM = 3  # words a shingle spans
QUESTION_WORDS = (8, 40)  # a sentence this long (words) becomes a question, as rag.py's floor does
SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*\s+")
# Abbreviations whose period ends no sentence: group 1 those that never end one, group 2 those
# that may ('... pears, etc. The next'), as rag.py reads sentences
ABBREVIATION = re.compile(r"(?<![\w.])(?:(e\.g|i\.e|mr|mrs|ms|dr|prof|vs|cf|viz)"
                          r"|(etc|figs?|al|approx|eqs?|nos?|resp|ca|vol|pp?|sec|ch))$", re.I)
# Retriever.rank's depth, where retrieve starts ranking before copies are folded
DEPTH = inspect.signature(rag.Retriever.rank).parameters["depth"].default
# What a word is to a shingle: letters, digits and UTF-8 beyond ASCII, lowercased
WORD_BYTES = bytes(b if chr(b).isalnum() or b > 127 else 32 for b in range(256))


def build_folder(docs: str) -> None:
    """The copyright files (as copyright/<package>/copyright) and Node's twins (node/)."""
    for path in sorted(glob.glob("/usr/share/doc/*/copyright")):
        if os.path.isfile(path):
            target = os.path.join(docs, "copyright", os.path.basename(os.path.dirname(path)), "copyright")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(path, target)
    pages = sorted(p[:-3] for p in glob.glob(os.path.join(NODE_API, "*.md")) if os.path.exists(p[:-3] + ".html"))
    os.makedirs(os.path.join(docs, "node"), exist_ok=True)
    for page in pages[:NODE_PAGES] + [os.path.join(NODE_API, "all")]:
        for ext in (".md", ".html"):
            if os.path.exists(page + ext):
                shutil.copyfile(page + ext, os.path.join(docs, "node", os.path.basename(page) + ext))


def sentences(text: str) -> list[list[str]]:
    """The words of each sentence of text; an abbreviation's period ends none."""
    out, start = [], 0
    for m in SENTENCE_END.finditer(text):
        short = ABBREVIATION.search(text, max(0, m.start() - 8), m.start())
        if text[m.start()] == "." and short and (short.group(1)
                                                 or not text[m.end():m.end() + 1].isupper()):
            continue
        out.append(text[start:m.end()].split())
        start = m.end()
    return [words for words in out + [text[start:].split()] if words]


def questions(store, n: int, seed: int = 1) -> list[tuple[str, str]]:
    """(question, its document) from n passages: half copyright files, half Node .md pages."""
    ids = sorted(cid for cid, _ in store.chunk_docs())
    chunks = {}
    for i in range(0, len(ids), 500):
        chunks.update(store.chunks(ids[i:i + 500]))
    rows = [(chunks[c].chunk.text, chunks[c].path) for c in ids if c in chunks]
    groups = [g for g in ([r for r in rows if r[1].endswith("/copyright")],
                          [r for r in rows if r[1].endswith(".md")]) if g]
    rnd, out = random.Random(seed), []
    for group in groups:
        taken = 0
        for text, path in rnd.sample(group, min(len(group), 4 * n)):
            long = [w for w in sentences(text) if QUESTION_WORDS[0] <= len(w) <= QUESTION_WORDS[1]]
            if long:
                out.append((" ".join(rnd.choice(long)[::2]), path))
                taken += 1
                if taken == n // len(groups):
                    break
    return out


def shingles(text: str) -> frozenset:
    """A passage's runs of GRAM lowercased words (punctuation and markup aside); a shorter
    passage, its words as one; one without words, its text."""
    words = text.lower().encode("utf-8", "replace").translate(WORD_BYTES).split()
    grams = frozenset(zip(*(words[i:] for i in range(GRAM))))
    return grams or frozenset([tuple(words) if words else " ".join(text.split())])


def alike(a: frozenset, b: frozenset, threshold: float) -> bool:
    """Whether two passages' shingles have a Jaccard similarity of at least threshold."""
    common = len(a & b)
    return common >= threshold * (len(a) + len(b) - common)


def dup_slots(texts: list[str], threshold: float) -> tuple[int, int]:
    """(slots alike to a better-ranked slot, of which identical) among texts in rank order."""
    sets = [shingles(t) for t in texts]
    copied = [i for i in range(len(sets)) if any(alike(sets[i], sets[j], threshold) for j in range(i))]
    return len(copied), len([i for i in copied if any(sets[i] == sets[j] for j in range(i))])


def before(retriever, q: str, k: int) -> list:
    """The top k as rag.py ranked them before copies were shown once."""
    ranked, qvec = retriever.rank(q, "hybrid", max(DEPTH, k))
    return retriever.hits(ranked[:k], qvec)


def after(retriever, q: str, k: int) -> list:
    return retriever.retrieve(q, "hybrid", k).hits


def measure(retriever, asked: list[tuple[str, str]], k: int) -> dict:
    """Totals over the questions, each way."""
    t: dict = {}
    for way in (before, after):
        for q, gold in asked:
            hits = way(retriever, q, k)
            texts = [h.chunk.text for h in hits]
            dups, same = dup_slots(texts, ALIKE)
            for key, value in (("dups", dups), ("same", same), ("loose", dup_slots(texts, 0.5)[0]),
                               ("slots", len(hits)), ("recall", gold in {h.path for h in hits}),
                               ("copies", gold in {c.path for h in hits for c in (h, *h.copies)})):
                t[way.__name__, key] = t.get((way.__name__, key), 0) + value
    t.update(timings(retriever, asked, k))
    return t


def timings(retriever, asked: list[tuple[str, str]], k: int, rounds: int = 3) -> dict:
    """The median over the questions of each way's fastest of rounds tries, the
    two ways taking turns (so that a busy moment of the machine costs both)."""
    best: dict = {}
    for r in range(rounds):
        for i, (q, _) in enumerate(asked):
            for way in (before, after) if (i + r) % 2 else (after, before):
                t0 = time.perf_counter()
                way(retriever, q, k)
                took = time.perf_counter() - t0
                best[way.__name__, i] = min(best.get((way.__name__, i), took), took)
    return {(way, "ms"): round(1000 * statistics.median(v for (w, _), v in best.items() if w == way), 1)
            for way in ("before", "after")}


def report(name: str, t: dict, n: int, k: int) -> None:
    print(f"\n{name}: {n} questions, top {k}")
    for way in ("before", "after"):
        print(f"  {way:<6}  {t[way, 'slots']:4d} slots: {t[way, 'dups']:3d} duplicates ({t[way, 'same']} identical), "
              f"{t[way, 'loose']:3d} at Jaccard >= 0.5; recall@{k} {t[way, 'recall'] / n:.3f} "
              f"(with copies {t[way, 'copies'] / n:.3f}); median {t[way, 'ms']} ms")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", default=os.path.join("/tmp", "rag-duplicates"), help="folder and index kept here")
    p.add_argument("--questions", type=int, default=100)
    p.add_argument("-k", "--k", type=int, default=5)
    args = p.parse_args()
    docs, db = os.path.join(args.dir, "docs"), os.path.join(args.dir, "index.db")
    cfg = rag.config_from_env(env={}, db=db)  # the built-in embedder
    if not os.path.exists(db):
        shutil.rmtree(docs, ignore_errors=True)
        build_folder(docs)
        with contextlib.closing(rag.open_store(cfg, create=True)) as store:
            t0 = time.perf_counter()
            s = rag.index_paths(store, rag.make_embedder(cfg), [docs], rag.IndexOptions(), rag.Log())
        print(f"indexed {s.read} files, {s.chunks} chunks in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    with contextlib.ExitStack() as closer:
        store, retriever = rag.open_for_query(cfg, rag.QueryOptions(), closer)
        asked = questions(store, args.questions)
        for name, part in (("copyright files", [a for a in asked if a[1].endswith("/copyright")]),
                           ("Node .md pages", [a for a in asked if a[1].endswith(".md")])):
            if part:
                report(name, measure(retriever, part, args.k), len(part), args.k)
    return 0


if __name__ == "__main__":
    sys.exit(main())
