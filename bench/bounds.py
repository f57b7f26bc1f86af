"""Bounded work (issue #46, item 8): what hostile or large inputs cost an index run.

    python bench/bounds.py ocr              # a 7000 x 7000 pt PDF page, a 25000 x 25000 PNG
    python bench/bounds.py log --mb 33      # one big application log
    python bench/bounds.py nochange --chunks 250000 --runs 5
                                            # index with nothing changed, images without text

Each `python rag.py index` is a new process (offline: the built-in embedder),
timed by wall clock, with the peak resident memory of it and of every program
it ran (pdftoppm, tesseract) from os.wait4, the largest of them. The folders
are made in a temporary folder outside the project (SciFact and SQuAD texts
from ../shared/data for nochange) and removed after, unless --keep names one.
Standard library only; OCR needs poppler and tesseract.
"""

import argparse
import os
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib

from ocr import pdf_file  # bench/ocr.py's PDF writer

HERE = os.path.dirname(os.path.abspath(__file__))
RAG = os.path.join(HERE, "..", "rag.py")
DATA = os.path.join(HERE, "..", "..", "shared", "data")


def timed(argv, cwd=None):
    """(wall seconds, peak resident MB, stdout + stderr) of one rag.py process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "EMBED_", "RAG_"))}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, RAG, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env, cwd=cwd)
    said = proc.stdout.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(proc.pid, 0)
    secs = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"rag.py {' '.join(argv)} failed:\n{said[-2000:]}")
    return secs, usage.ru_maxrss / 1024, said


def png(width, height):
    """A grey PNG of width x height white pixels, made row by row (a few MB for 25000 x 25000)."""
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(
            ">I", zlib.crc32(kind + body))
    z, row, parts = zlib.compressobj(9), b"\0" + b"\xff" * width, []
    for _ in range(height):
        parts.append(z.compress(row))
    parts.append(z.flush())
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", b"".join(parts))
            + chunk(b"IEND", b""))


def pdf_page(width_pt, height_pt):
    """A PDF of one page width_pt x height_pt points, a grey square on it, no text."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Contents 4 0 R >>"
            % (width_pt, height_pt),
            b"<< /Length 21 >>\nstream\n0.5 g 9 9 99 99 re f\nendstream"]
    return pdf_file(objs)


def ocr(a, work):
    for name, data in (("page.pdf", pdf_page(7000, 7000)), ("picture.png", png(25000, 25000))):
        folder = os.path.join(work, name.split(".")[0])
        os.makedirs(folder)
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
        with open(os.path.join(folder, "note.md"), "w") as f:
            f.write("# Note\n\nA folder needs one readable document.\n")
        secs, mb, said = timed(["index", folder, "--db", os.path.join(work, name + ".db")])
        note = next((l for l in said.splitlines() if "OCR" in l), "(no note)")
        print(f"{name} ({len(data):,} bytes): {secs:.2f} s, peak {mb:.0f} MB; {note.strip()}")


LEVELS = ["INFO"] * 14 + ["DEBUG"] * 4 + ["WARN", "ERROR"]
PATHS = ["/api/orders", "/api/users", "/api/cart", "/health", "/api/search", "/api/payments"]


def make_log(path, mb, seed=7):
    """An application log of about mb megabytes: timestamp, level, worker, message."""
    rnd, t, size = random.Random(seed), 1714521600.0, 0
    with open(path, "w") as f:
        while size < mb << 20:
            t += rnd.expovariate(40)
            stamp = (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))
                     + f".{int(t % 1 * 1000):03d}Z")
            level, worker = rnd.choice(LEVELS), rnd.randrange(16)
            if level == "ERROR":
                msg = (f"request {rnd.getrandbits(64):016x} failed: upstream "
                       f"{rnd.choice(PATHS)} timed out after {rnd.randrange(1000, 30000)} ms "
                       f"(attempt {rnd.randrange(1, 4)})")
            else:
                msg = (f"{rnd.choice(['GET', 'POST', 'PUT'])} "
                       f"{rnd.choice(PATHS)}/{rnd.randrange(10**6)} "
                       f"status={rnd.choice([200, 200, 200, 201, 304, 404, 500])} "
                       f"took={rnd.randrange(1, 900)}ms user={rnd.randrange(10**5)}")
            line = f"{stamp} {level:5} [worker-{worker:02d}] {msg}\n"
            f.write(line)
            size += len(line)


def log(a, work):
    folder = os.path.join(work, "logs")
    os.makedirs(folder)
    path = os.path.join(folder, "app.log")
    make_log(path, a.mb)
    secs, mb, said = timed(["index", folder, "--db", os.path.join(work, "log.db"),
                            "--max-file-mb", str(a.mb + 1)])
    chunks = next((l for l in said.splitlines() if "chunks" in l), "").strip()
    print(f"{os.path.getsize(path) / 2**20:.1f} MB log: {secs:.1f} s, peak {mb:.0f} MB; {chunks}")


def texts():
    """SciFact's abstracts and SQuAD's articles (../shared/data/*/docs), as (name, text)."""
    for corpus in ("scifact", "squad"):
        docs = os.path.join(DATA, corpus, "docs")
        for name in sorted(os.listdir(docs)):
            with open(os.path.join(docs, name), encoding="utf-8") as f:
                yield f"{corpus}-{name}", f.read()


FILE_CHARS = 200_000  # characters a file of the big folder holds, about
CHARS_A_CHUNK = 850   # SciFact and SQuAD at the default chunk size: enough copies for --chunks


def nochange(a, work):
    folder, db = os.path.join(work, "big"), os.path.join(work, "big.db")
    if not os.path.exists(db):
        # files of about FILE_CHARS, as a documentation folder has (not one a paragraph)
        corpus, files, size = list(texts()), [[]], 0
        for name, text in corpus:
            if size > FILE_CHARS:
                files.append([])
                size = 0
            files[-1].append(f"# {name}\n\n{text}\n")
            size += len(text)
        per_copy = sum(len(t) for _, t in corpus) / CHARS_A_CHUNK
        for c in range(int(a.chunks / per_copy) + 1):
            sub = os.path.join(folder, f"copy{c:02d}")
            os.makedirs(sub)
            for n, parts in enumerate(files):
                with open(os.path.join(sub, f"part{n:04d}.md"), "w") as f:
                    f.write(f"copy {c}\n\n" + "\n".join(parts))
        icons = os.path.join(folder, "icons")
        os.makedirs(icons)
        for n in range(a.icons):  # pictures without text: tesseract finds nothing in them
            with open(os.path.join(icons, f"icon{n:02d}.png"), "wb") as f:
                f.write(png(48 + n, 48 + n))
        secs, mb, said = timed(["index", folder, "--db", db])
        print(f"first index run: {secs:.0f} s, peak {mb:.0f} MB; "
              + next((l for l in said.splitlines() if "chunks" in l), "").strip())
    time.sleep(2.5)  # past _SETTLE_SECONDS: files read within it are read again, as designed
    runs = [timed(["index", folder, "--db", db]) for _ in range(a.runs)]
    if not runs:
        return
    print(f"index, nothing changed: median {statistics.median(s for s, _, _ in runs):.2f} s "
          f"(runs {', '.join(f'{s:.2f}' for s, _, _ in runs)}), "
          f"peak {max(m for _, m, _ in runs):.0f} MB; "
          + next((l for l in runs[-1][2].splitlines() if "skipped" in l), "").strip())


def main():
    global RAG, DATA
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["ocr", "log", "nochange"])
    p.add_argument("--mb", type=int, default=33, help="log: its size")
    p.add_argument("--chunks", type=int, default=250_000, help="nochange: at least this many")
    p.add_argument("--icons", type=int, default=52, help="nochange: pictures without text")
    p.add_argument("--runs", type=int, default=5, help="nochange: runs with nothing changed")
    p.add_argument("--keep", metavar="FOLDER", help="work here and keep it (nochange: reuse)")
    p.add_argument("--data", default=DATA, help="the shared data sets (SciFact, SQuAD)")
    p.add_argument("--rag", default=RAG, help="the rag.py to run (an older one: before)")
    a = p.parse_args()
    RAG, DATA = a.rag, a.data
    work = a.keep or tempfile.mkdtemp(prefix="rag-bounds-")
    os.makedirs(work, exist_ok=True)
    try:
        {"ocr": ocr, "log": log, "nochange": nochange}[a.what](a, work)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
