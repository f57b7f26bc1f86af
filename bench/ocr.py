"""OCR of scanned PDF pages: time per page, and whether a question finds its page.

Standard library only, with poppler (pdftoppm) and tesseract installed. Takes
--pages SQuAD paragraphs (../shared/data/squad), prints each as a page of a
text PDF, renders that page to a 300 dpi grey picture and wraps the pictures
in a PDF with no text layer (a scan); then indexes that PDF with rag.py
(offline: built-in embedder), so every page goes through OCR, and asks
each paragraph's SQuAD questions with `search -k 1`: a hit is its page cited.

    python bench/ocr.py                 # 20 pages
    python bench/ocr.py --threads 2    # tesseract's OpenMP on two cores
    python bench/ocr.py --text         # the same pages as text: what OCR loses
"""

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import rag  # noqa: E402

SQUAD = os.path.join(HERE, "..", "..", "shared", "data", "squad")


def _pdf(pages):
    """A PDF of pages, each a list of objects' bodies for: its content stream
    and its resources (bytes); fonts and pictures as the caller gives."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    kids = []
    for content, resources, extra in pages:
        me = len(objs) + 1
        kids.append(me)
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources %s "
                    b"/Contents %d 0 R >>" % (resources.replace(b"SELF", b"%d" % (me + 2)), me + 1))
        objs.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
        objs.append(extra)
    objs[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    return pdf_file(objs)


def pdf_file(objs):
    """A PDF file of these objects' bodies (the first the catalog), with its cross-reference table."""
    out, offsets = b"%PDF-1.4\n", []
    for n, obj in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (n, obj)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objs) + 1, xref)


def text_page(text):
    """A page of 11 pt Helvetica, the text wrapped at 90 characters."""
    rows = textwrap.wrap(text, 90)
    esc = [r.encode("latin-1", "replace").replace(b"\\", b"\\\\").replace(b"(", b"\\(")
           .replace(b")", b"\\)") for r in rows]
    content = b"BT /F1 11 Tf 14 TL 60 740 Td " + b" ".join(b"(%s) '" % r for r in esc) + b" ET"
    return content, b"<< /Font << /F1 SELF 0 R >> >>", (
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")


def scanned_page(pgm):
    """A page that is only a grey picture (pdftoppm's PGM): a scan."""
    m = re.match(rb"P5\s+(\d+)\s+(\d+)\s+255\s", pgm)
    pixels = zlib.compress(pgm[m.end():])
    image = (b"<< /Type /XObject /Subtype /Image /Width %s /Height %s /ColorSpace /DeviceGray "
             b"/BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream"
             % (m.group(1), m.group(2), len(pixels), pixels))
    return b"q 612 0 0 792 0 0 cm /Im0 Do Q", b"<< /XObject << /Im0 SELF 0 R >> >>", image


def render(pdf, dpi=300):
    return subprocess.run(["pdftoppm", "-r", str(dpi), "-gray", "-singlefile", "-"], input=pdf,
                          capture_output=True, check=True).stdout


def cli(*argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = rag.main(list(argv))
    if code:
        raise SystemExit(f"rag.py {argv[0]} failed")
    return out.getvalue()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=20)
    ap.add_argument("--threads", type=int, help="OMP_THREAD_LIMIT for tesseract (threads it "
                    "uses; rag.py sets 1 unless the environment says)")
    ap.add_argument("--text", action="store_true",
                    help="the same pages with their text layer (no OCR): what OCR loses")
    args = ap.parse_args()
    if args.threads:
        os.environ["OMP_THREAD_LIMIT"] = str(args.threads)
    cases = json.load(open(os.path.join(SQUAD, "cases.json"), encoding="utf-8"))
    names = list(dict.fromkeys(c["sources"][0] for c in cases))[:args.pages]
    with tempfile.TemporaryDirectory() as tmp:
        folder, db = os.path.join(tmp, "docs"), os.path.join(tmp, "ocr.db")
        os.makedirs(folder)
        pages = []
        for name in names:
            with open(os.path.join(SQUAD, "docs", name), encoding="utf-8") as f:
                body = " ".join(f.read().split()[:350])  # what fits on a page at 11 pt
            pages.append(text_page(body) if args.text else
                         scanned_page(render(_pdf([text_page(body)]))))
        with open(os.path.join(folder, "scan.pdf"), "wb") as f:
            f.write(_pdf(pages))
        t0 = time.perf_counter()
        cli("index", folder, "--db", db)
        took = time.perf_counter() - t0
        asked = hits = 0
        for c in cases:
            if c["sources"][0] in names:
                got = json.loads(cli("search", c["question"], "-k", "1", "--json", "--db", db))
                asked += 1
                m = re.fullmatch(r"p\.(\d+)(?:-(\d+))?", got[0]["location"]) if got else None
                page = names.index(c["sources"][0]) + 1
                hits += bool(m) and int(m.group(1)) <= page <= int(m.group(2) or m.group(1))
        kind = "text" if args.text else "scanned"
        print(f"{len(names)} {kind} pages: index {took:.1f} s, {took / len(names):.2f} s a page "
              f"(pdftotext, pdftoppm at 300 dpi, tesseract with OMP_THREAD_LIMIT="
              f"{os.environ.get('OMP_THREAD_LIMIT', '1, rag.py default')}); "
              f"{hits}/{asked} questions found their page first")


if __name__ == "__main__":
    main()
