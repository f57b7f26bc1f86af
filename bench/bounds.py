"""Bounded work (issues #46, #53): what hostile or large inputs cost an index run.

    python bench/bounds.py ocr              # a 7000 x 7000 pt PDF page, a 25000 x 25000 PNG
    python bench/bounds.py log --mb 33      # one big application log
    python bench/bounds.py nochange --chunks 250000 --runs 5
                                            # index with nothing changed, images without text
    python bench/bounds.py expand           # Office and EPUB files that expand (ZIP_BOMBS)
    python bench/bounds.py oneline          # one long line chunked, against the same text wrapped

Each `python rag.py index` is a new process (offline: the built-in embedder),
timed by wall clock, with the peak resident memory of it and of every program
it ran (pdftoppm, tesseract) from os.wait4, the largest of them. The folders
are made in a temporary folder outside the project (SciFact and SQuAD texts
from ../shared/data for nochange) and removed after, unless --keep names one.
Standard library only; OCR needs poppler and tesseract.
"""

import argparse
import importlib.util
import io
import os
import random
import shutil
import sqlite3
import statistics
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
import zlib

from ocr import pdf_file  # bench/ocr.py's PDF writer

HERE = os.path.dirname(os.path.abspath(__file__))
RAG = os.path.join(HERE, "..", "rag.py")
DATA = os.path.join(HERE, "..", "..", "shared", "data")


def timed(argv, cwd=None, check=True, timeout=None, max_mb=None):
    """(wall seconds, peak resident MB, stdout + stderr) of one rag.py process; killed after
    timeout seconds, its address space capped at max_mb (an older rag.py on a bomb)."""
    import resource
    import threading
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "EMBED_", "RAG_"))}
    cap = max_mb and (lambda: resource.setrlimit(resource.RLIMIT_AS, (max_mb << 20,) * 2))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, RAG, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env, cwd=cwd, preexec_fn=cap or None)
    timer = threading.Timer(timeout or 1e9, proc.kill)
    timer.start()
    said = proc.stdout.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(proc.pid, 0)
    timer.cancel()
    secs = time.perf_counter() - t0
    if timeout and secs >= timeout:
        said += f"\n(stopped after {timeout:g} s)"
    if check and os.waitstatus_to_exitcode(status):
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


# Office and EPUB files built to expand (issue #53): each a few KB to 2 MB.

W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
S = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
R = 'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
RELS = ('<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="x/{}" Target="{}"/></Relationships>')


def zipped(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return buf.getvalue()


def words(n, seed=3):
    rnd = random.Random(seed)
    return " ".join(rnd.choice(["kelp", "tide", "reef", "salt", "gull", "cove", "surf", "shoal"])
                    + str(rnd.randrange(1000)) for _ in range(n))


def epub(chapters, spine):
    """An EPUB of chapters (HTML bodies) whose spine names them by index, as often as spine says."""
    items = "".join(f'<item id="c{i}" href="c{i}.xhtml"/>' for i in range(len(chapters)))
    refs = "".join(f'<itemref idref="c{i}"/>' for i in spine)
    m = {"META-INF/container.xml": '<container><rootfiles><rootfile full-path="book.opf"/>'
                                   "</rootfiles></container>",
         "book.opf": f"<package><manifest>{items}</manifest><spine>{refs}</spine></package>"}
    m.update((f"c{i}.xhtml", f"<html><body>{c}</body></html>") for i, c in enumerate(chapters))
    return zipped(m)


def xlsx(strings, rows, sheets=1):
    """A workbook of shared strings and one sheet's rows (XML), named by sheets sheets."""
    book = "".join(f'<sheet name="S{i}" sheetId="{i}" r:id="rId1"/>' for i in range(1, sheets + 1))
    return zipped({"xl/workbook.xml": f"<workbook {S} {R}><sheets>{book}</sheets></workbook>",
                   "xl/_rels/workbook.xml.rels": RELS.format("worksheet", "worksheets/s.xml"),
                   "xl/sharedStrings.xml": f"<sst {S}>"
                   + "".join(f"<si><t>{t}</t></si>" for t in strings) + "</sst>",
                   "xl/worksheets/s.xml": f"<worksheet {S}><sheetData>{rows}</sheetData>"
                                          "</worksheet>"})


def docx(body):
    return zipped({"word/document.xml": f"<w:document {W}><w:body>{body}</w:body></w:document>"})


def pptx(slide_text, ids):
    p = 'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"'
    a = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'
    sld = "".join(f'<p:sldId id="{256 + i}" r:id="rId1"/>' for i in range(ids))
    return zipped({"ppt/presentation.xml": f"<p:presentation {p} {R}><p:sldIdLst>{sld}"
                                           "</p:sldIdLst></p:presentation>",
                   "ppt/_rels/presentation.xml.rels": RELS.format("slide", "slides/s1.xml"),
                   "ppt/slides/s1.xml": f"<p:sld {p} {a}><p:cSld><p:spTree><p:sp><p:txBody><a:p>"
                                        f"<a:r><a:t>{slide_text}</a:t></a:r></a:p></p:txBody>"
                                        "</p:sp></p:spTree></p:cSld></p:sld>"})


def sections(n):
    """A .docx of n headings, each over one word."""
    return docx("".join(f'<w:p><w:pPr><w:outlineLvl w:val="0"/></w:pPr><w:r><w:t>T{i}</w:t></w:r>'
                        f"</w:p><w:p><w:r><w:t>w{i}</w:t></w:r></w:p>" for i in range(n)))


def text_rows(n, seed=5):
    """n rows of 10 cells, each one of 1,000 shared strings at random: distinct rows."""
    rnd = random.Random(seed)
    return "".join("<row>" + "".join(f'<c t="s"><v>{rnd.randrange(1000)}</v></c>'
                                     for _ in range(10)) + "</row>" for _ in range(n))


ZIP_BOMBS = {  # name -> (what it is, its bytes)
    "spine.epub": ("one 65 KB chapter, its spine naming it 20,000 times",
                   lambda: epub(["<p>" + words(8000) + "</p>"], [0] * 20_000)),
    "shared.xlsx": ("one 65 KB shared string in each of 1,000,000 cells",
                    lambda: xlsx([words(8000)], ("<row>" + '<c t="s"><v>0</v></c>' * 10
                                                 + "</row>") * 100_000)),
    "sheets.xlsx": ("nested repeats: 1,000 sheets naming one part whose 10,000 cells share "
                    "one 6.5 KB string", lambda: xlsx([words(800)], (
                        "<row>" + '<c t="s"><v>0</v></c>' * 10 + "</row>") * 1000, sheets=1000)),
    "slides.pptx": ("one slide of 65 KB, its id listed 50,000 times",
                    lambda: pptx(words(8000), 50_000)),
    "text.xlsx": ("14,500 distinct rows of shared strings: the most text under the bound, "
                  "every chunk new", lambda: xlsx([words(8, seed=i) for i in range(1000)],
                                                  text_rows(14_500))),
    "nested.docx": ("2.5 million empty paragraphs in a table nested 250 deep (the most elements "
                    "under the bound, each cell over all the rest)",
                    lambda: docx("<w:tbl><w:tr><w:tc>" * 250 + "<w:p/>" * 2_500_000
                                 + "</w:tc></w:tr></w:tbl>" * 250)),
    "thin.epub": ("one chapter of 2.5 million one-letter paragraphs",
                  lambda: epub(["<p>a</p>" * 2_500_000], [0])),
    "breaks.docx": ("a paragraph of a million one-letter lines (line breaks)",
                    lambda: docx("<w:p><w:r>" + "<w:t>a</w:t><w:br/>" * 1_000_000
                                 + "</w:r></w:p>")),
    "sections.docx": ("59,000 headings each over one word: the most chunks under the bound (a "
                      "heading counts as the chunk it starts; 160,000 are skipped as too large)",
                      lambda: sections(59_000)),
    "sections-160k.docx": ("160,000 headings each over one word", lambda: sections(160_000)),
}


def expand(a, work):
    """Each ZIP_BOMBS file alone in a folder with one note, indexed: time, peak, what happened,
    the text stored (the chunks', overlap included)."""
    for name, (what, build) in ZIP_BOMBS.items():
        if a.only and not any(w in name for w in a.only):
            continue
        folder = os.path.join(work, name.replace(".", "-"))
        os.makedirs(folder)
        data = build()
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
        with open(os.path.join(folder, "note.md"), "w") as f:
            f.write("# Note\n\nA folder needs one readable document.\n")
        db = os.path.join(work, name + ".db")
        secs, mb, said = timed(["index", folder, "--db", db, "-v"], check=False, timeout=a.timeout,
                               max_mb=a.max_mb)
        with sqlite3.connect(db) as con:
            chunks, chars = con.execute(
                "SELECT count(*), coalesce(sum(length(c.text)), 0) FROM chunks c JOIN documents d "
                "ON d.id = c.doc_id WHERE d.path LIKE ?", (f"%{name}",)).fetchone()
        note = next((l.split(": ", 1)[-1] for l in said.splitlines() if f"{name}: " in l
                     and "read as" not in l or "stopped after" in l or "Error" in l), "indexed")
        print(f"{name} ({len(data):,} bytes; {what}): {secs:.1f} s, peak {mb:.0f} MB; "
              f"{note}; {chunks:,} chunks, {chars:,} characters stored")


def load_rag(path):
    spec = importlib.util.spec_from_file_location("rag_measured", path)
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # (dataclasses)
    spec.loader.exec_module(module)
    return module


def oneline(a, work):
    """Parse and chunk_lines in-process (the rag.py of --rag), one paragraph on one line
    against the same text wrapped at 80 columns; then both indexed (-i)."""
    rag = load_rag(RAG)
    corpus = " ".join(" ".join(t.split()) for _, t in texts())
    for mb in a.sizes:
        text = (corpus * (mb * 2**20 // len(corpus) + 1))[:mb * 2**20].rstrip()
        wrapped = "\n".join(textwrap.wrap(text, 80, break_long_words=False,
                                          break_on_hyphens=False))
        times = {}
        for shape, body in (("one line", text), ("wrapped", wrapped)):
            t0 = time.perf_counter()
            lines = rag.parse_document("a.txt", body.encode())[0]
            t1 = time.perf_counter()
            chunks = rag.chunk_lines(lines)
            times[shape] = (t1 - t0, time.perf_counter() - t1, len(chunks))
            if a.index:
                folder = os.path.join(work, f"{mb}-{shape[0]}")
                os.makedirs(folder)
                with open(os.path.join(folder, "a.txt"), "w") as f:
                    f.write(body)
                times[shape] += (timed(["index", folder, "--db", folder + ".db"])[0],)
        (p1, c1, n1, *i1), (p2, c2, n2, *i2) = times["one line"], times["wrapped"]
        print(f"{mb} MB: one line parse {p1:.2f} s + chunk {c1:.2f} s ({n1} chunks); wrapped "
              f"parse {p2:.2f} s + chunk {c2:.2f} s ({n2} chunks); chunk ratio {c1 / c2:.2f}, "
              f"parse and chunk {(p1 + c1) / (p2 + c2):.2f}"
              + (f"; index {i1[0]:.1f} s vs {i2[0]:.1f} s, ratio {i1[0] / i2[0]:.2f}"
                 if i1 else ""))


def main():
    global RAG, DATA
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["ocr", "log", "nochange", "expand", "oneline"])
    p.add_argument("only", nargs="*", help="expand: only the files whose name holds a word")
    p.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 12], help="oneline: MB")
    p.add_argument("-i", "--index", action="store_true", help="oneline: index both too")
    p.add_argument("--timeout", type=float, default=600, help="expand: seconds a run may take")
    p.add_argument("--max-mb", type=int, help="expand: the address space a run may take (MB)")
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
        {"ocr": ocr, "log": log, "nochange": nochange, "expand": expand,
         "oneline": oneline}[a.what](a, work)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
