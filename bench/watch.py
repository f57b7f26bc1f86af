"""`rag.py index --watch` on a big folder: how soon a change is found, and
what the watch costs when nothing changes.

    python bench/watch.py                                   # 50 changes, a 60 s idle window
    python bench/watch.py --changes 6 --idle-seconds 10     # a quick look
    python bench/watch.py --idle-folder /usr/share/doc      # also a folder that is not ours

What it measures (targets from the issue):
1. Change to found: a copy of SciFact's 5,183 abstracts (../shared/data/scifact/docs, or
   --folder; copied afresh each run into a temp folder, so the source is never changed) is
   indexed by `rag.py index COPY --db DB --watch` (the built-in embedder: no LLM_*, EMBED_*,
   OPENAI_*, RERANK_* or RAG_* variable reaches it). Then --changes changes, each after a
   random pause of 1.5 to 3.0 s (random.Random(--seed)), so that they land at every phase
   of the poll; in rotation: a sentence appended to a file, a new file, a file rewritten
   entirely, a file renamed. Each text carries a made-up word (zq and 8 letters) and is
   found when a read-only connection to the index matches it in chunks_fts; a rename is
   found when documents.rel holds the new name. The database is asked every 20 ms from
   just after the write (or rename) returns; latency = found - changed; after 30 s the
   change is a miss. Median and p95 (nearest rank) of the found ones: target <= 2 s, on a
   folder of >= 5,000 files. --deletions files are then deleted, timed until their
   document is gone, and reported apart.
2. Idle CPU: after the changes and a 5 s rest, the watch's CPU time (utime + stime in
   /proc/PID/stat) over --idle-seconds with nothing changing, as a share of one core:
   target <= 3%.
3. --idle-folder DIR: the same idle share on another folder (for example /usr/share/doc,
   about 4,500 files), indexed read-only into a temp database first (minutes).

Each watch is stopped with SIGINT, which must end it with exit code 0. Then a table of the
figures and the command line. Linux only (/proc); standard library only.
"""

import argparse
import math
import os
import random
import re
import shlex
import shutil
import signal
import sqlite3
import statistics
import string
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RAG = os.path.join(HERE, "..", "rag.py")
SCIFACT = os.path.join(HERE, "..", "..", "shared", "data", "scifact", "docs")
MIN_FILES = 5000          # the folder size the latency target is stated for
PAUSE = (1.5, 3.0)        # seconds between changes, uniform
ASK_EVERY = 0.02          # seconds between two looks at the index
REST = 5.0                # seconds after the last change before the idle window
KINDS = ("append", "create", "rewrite", "rename")
TEXT_EXTS = (".txt", ".md")  # existing files a change may edit
PASS_LINE = re.compile(r"^\d\d:\d\d:\d\d indexed (\d+) file\(s\), (\d+) removed")
WATCHING = re.compile(r"watching (\d+) file\(s\) in (\d+) folder\(s\), a poll every ([\d.]+) s")
CHILD_VARS = ("LLM_", "OPENAI_", "EMBED_", "RERANK_", "RAG_")


def child_env() -> dict:
    """The environment without a server or store setting (the built-in embedder), and
    without PYTHONUNBUFFERED: the watch's output buffered as a user's would be."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(CHILD_VARS) and k != "PYTHONUNBUFFERED"}


class Watch:
    """One `rag.py index FOLDER --db DB --watch` process; its output lines are kept with
    the monotonic time they were read."""

    def __init__(self, folder: str, db: str):
        self.argv = [sys.executable, RAG, "index", folder, "--db", db, "--watch"]
        self.started = time.monotonic()
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=child_env(), stdin=subprocess.DEVNULL)
        self.out: list[tuple[float, str]] = []
        self.err: list[tuple[float, str]] = []
        self.watching = threading.Event()
        self.readers = [threading.Thread(target=self._read, args=(s, lines), daemon=True)
                        for s, lines in ((self.proc.stdout, self.out),
                                         (self.proc.stderr, self.err))]
        for t in self.readers:
            t.start()

    def _read(self, stream, lines: list) -> None:
        for line in stream:
            lines.append((time.monotonic(), line.rstrip("\n")))
            if WATCHING.search(line):
                self.watching.set()

    def wait_watching(self, progress_every: float = 30.0) -> float:
        """Seconds until the watching line; progress while the first index runs."""
        while not self.watching.wait(progress_every):
            if self.proc.poll() is not None:
                tail = "\n".join(line for _, line in self.err[-10:])
                raise SystemExit(f"the watch ended ({self.proc.returncode}) before watching:\n"
                                 f"{tail}")
            print(f"  first index still running: {time.monotonic() - self.started:.0f} s",
                  flush=True)
        return time.monotonic() - self.started

    def said(self) -> tuple[int, int, float]:
        """(files, folders, poll seconds) from the watching line."""
        m = next(WATCHING.search(line) for _, line in self.err if WATCHING.search(line))
        return int(m[1]), int(m[2]), float(m[3])

    def cpu_seconds(self) -> float:
        """utime + stime of the watch process so far."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def pass_lines(self, until: float = math.inf) -> list[tuple[float, str]]:
        """The lines of passes that changed something, read before until."""
        return [(t, line) for t, line in self.out if t < until and PASS_LINE.match(line)]

    def stop(self, patience: float = 60.0) -> int | None:
        """SIGINT, as Ctrl-C; the exit code, None when it had not ended after patience (then
        killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(patience)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = None
        for t in self.readers:
            t.join(5)
        return code

    def notes(self) -> list[str]:
        """stderr lines other than the watching and stopped lines."""
        return [line for _, line in self.err
                if not WATCHING.search(line) and "stopped watching" not in line]


def count_files(folder: str) -> int:
    return sum(len(files) for _, _, files in os.walk(folder))


def text_files(folder: str, rnd: random.Random) -> list[str]:
    """The folder's text files a change may edit, in a random order."""
    paths = sorted(os.path.join(d, f) for d, _, files in os.walk(folder) for f in files
                   if f.endswith(TEXT_EXTS))
    rnd.shuffle(paths)
    return paths


def word(rnd: random.Random, used: set) -> str:
    """A made-up word, letters only (one token to FTS5's porter unicode61), never used before."""
    while True:
        w = "zq" + "".join(rnd.choice(string.ascii_lowercase) for _ in range(8))
        if w not in used:
            used.add(w)
            return w


def sentence(w: str) -> str:
    return f"The {w} assay was repeated in a second cohort of patients with similar results."


class Changer:
    """Makes each kind of change in the folder; each returns what finds it: (SQL, its
    argument, whether a row must be there) and what it touched."""

    FOUND_TEXT = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?"
    FOUND_REL = "SELECT count(*) FROM documents WHERE rel = ?"

    def __init__(self, folder: str, rnd: random.Random):
        self.folder, self.rnd, self.used = folder, rnd, set()
        self.existing = text_files(folder, rnd)
        self.created = 0

    def pick(self) -> str:
        if not self.existing:
            raise SystemExit(f"no more unchanged {'/'.join(TEXT_EXTS)} files in {self.folder}")
        return self.existing.pop()

    def append(self):
        path, w = self.pick(), word(self.rnd, self.used)
        with open(path, "a", encoding="utf-8") as f:
            f.write("\n" + sentence(w) + "\n")
        return (self.FOUND_TEXT, f'"{w}"', True), path

    def create(self):
        w = word(self.rnd, self.used)
        self.created += 1
        path = os.path.join(self.folder, f"watch-new-{self.created:03d}.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"A new note, number {self.created}.\n\n{sentence(w)}\n")
        return (self.FOUND_TEXT, f'"{w}"', True), path

    def rewrite(self):
        path, w = self.pick(), word(self.rnd, self.used)
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"This abstract was rewritten.\n\n{sentence(w)} Nothing else was kept.\n")
        return (self.FOUND_TEXT, f'"{w}"', True), path

    def rename(self):
        path, w = self.pick(), word(self.rnd, self.used)
        new = os.path.join(os.path.dirname(path), f"renamed-{w}.txt")
        os.rename(path, new)
        return (self.FOUND_REL, os.path.relpath(new, self.folder), True), new

    def delete(self):
        path = self.pick()
        os.remove(path)
        return (self.FOUND_REL, os.path.relpath(path, self.folder), False), path


def wait_found(conn: sqlite3.Connection, check, since: float, give_up: float) -> float | None:
    """Seconds from since until the check holds (asked every ASK_EVERY); None after give_up."""
    sql, arg, present = check
    while True:
        found = conn.execute(sql, (arg,)).fetchone()[0] > 0
        now = time.monotonic()
        if found == present:
            return now - since
        if now - since > give_up:
            return None
        time.sleep(ASK_EVERY)


def timed_changes(watch: Watch, db: str, changer: Changer, kinds: list[str],
                  give_up: float) -> list[tuple[str, str, float | None]]:
    """Each change after a random pause, timed until found: (kind, file, seconds or None)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    results = []
    try:
        for i, kind in enumerate(kinds, 1):
            time.sleep(changer.rnd.uniform(*PAUSE))
            check, path = getattr(changer, kind)()
            changed = time.monotonic()
            secs = wait_found(conn, check, changed, give_up)
            results.append((kind, os.path.basename(path), secs))
            shown = f"{secs:.2f} s" if secs is not None else f"MISS (not found in {give_up:.0f} s)"
            print(f"  {i:3d}/{len(kinds)} {kind:8s} {os.path.basename(path):28s} {shown}",
                  flush=True)
            if watch.proc.poll() is not None:
                raise SystemExit(f"the watch ended ({watch.proc.returncode}) during the changes")
    finally:
        conn.close()
    return results


def p95(values: list[float]) -> float:
    """The 95th percentile, nearest rank."""
    s = sorted(values)
    return s[max(0, math.ceil(0.95 * len(s)) - 1)]


def latency_summary(results) -> str:
    found = [s for _, _, s in results if s is not None]
    if not found:
        return "none found"
    return (f"median {statistics.median(found):.2f} s, p95 {p95(found):.2f} s, "
            f"max {max(found):.2f} s")


def by_kind(results) -> str:
    parts = []
    for kind in dict.fromkeys(k for k, _, _ in results):
        found = [s for k, _, s in results if k == kind and s is not None]
        n = sum(1 for k, _, _ in results if k == kind)
        med = f"{statistics.median(found):.2f} s" if found else "-"
        parts.append(f"{kind} {med}" + (f" ({n - len(found)} missed)" if len(found) < n else ""))
    return ", ".join(parts)


def idle_share(watch: Watch, seconds: float) -> tuple[float, int]:
    """The watch's CPU seconds per wall second over an idle window, and the pass lines read
    meanwhile (0 when nothing changed)."""
    lines = len(watch.pass_lines())
    c0, t0 = watch.cpu_seconds(), time.monotonic()
    time.sleep(seconds)
    c1, t1 = watch.cpu_seconds(), time.monotonic()
    return (c1 - c0) / (t1 - t0), len(watch.pass_lines()) - lines


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else "MISSED"


def passes_line(watch: Watch, stopped_at: float) -> str:
    """How many pass lines the watch printed, how many were read before the SIGINT, and the
    files they name."""
    lines = watch.pass_lines()
    files = sum(int(PASS_LINE.match(line)[1]) for _, line in lines)
    removed = sum(int(PASS_LINE.match(line)[2]) for _, line in lines)
    early = len(watch.pass_lines(stopped_at))
    return (f"{len(lines)} ({files} file(s) indexed, {removed} removed); {early} of them "
            "read while the watch ran")


def copy_folder(source: str, tmp: str) -> str:
    copy = os.path.join(tmp, "docs")
    print(f"copying {source} ...", flush=True)
    shutil.copytree(source, copy)
    return copy


def start(folder: str, db: str) -> Watch:
    watch = Watch(folder, db)
    print("started: " + shlex.join(["python", "rag.py"] + watch.argv[2:]), flush=True)
    secs = watch.wait_watching()
    files, folders, poll = watch.said()
    print(f"  watching {files:,} file(s) in {folders:,} folder(s) after {secs:.1f} s, "
          f"a poll every {poll} s", flush=True)
    return watch


def stop_line(watch: Watch) -> tuple[str, float]:
    stopped_at = time.monotonic()
    code = watch.stop()
    said = any("stopped watching" in line for _, line in watch.err)
    if code is None:
        return "did NOT exit within 60 s of SIGINT (killed)", stopped_at
    return (f"exit code {code}" + ("" if code == 0 else " (NOT 0)")
            + (", said 'stopped watching'" if said else ", did NOT say 'stopped watching'"),
            stopped_at)


def main_folder(a, tmp: str, rows: list) -> None:
    """Part 1 and 2: changes timed, then the idle share, on a copy of the folder."""
    copy = copy_folder(a.folder, tmp)
    n = count_files(copy)
    rows.append(("folder", f"{n:,} files (a copy of {os.path.normpath(a.folder)})"
                 + ("" if n >= MIN_FILES else f"; FEWER than the {MIN_FILES:,} of the target")))
    watch = start(copy, os.path.join(tmp, "index.db"))
    try:
        files, _, poll = watch.said()
        rows.append(("watch said", f"{files:,} file(s), a poll every {poll} s"))
        changer = Changer(copy, random.Random(a.seed))
        kinds = [KINDS[i % len(KINDS)] for i in range(a.changes)]
        results = timed_changes(watch, os.path.join(tmp, "index.db"), changer, kinds, a.give_up)
        report_changes(results, a, rows)
        if a.deletions:
            time_deletions(watch, os.path.join(tmp, "index.db"), changer, a, rows)
        measure_idle(watch, a.idle_seconds, rows, "")
    finally:
        stopped, stopped_at = stop_line(watch)
    rows.append(("pass lines", passes_line(watch, stopped_at)))
    rows.append(("SIGINT", stopped))
    add_notes(watch, rows, "")


def report_changes(results, a, rows: list) -> None:
    found = [s for _, _, s in results if s is not None]
    misses = len(results) - len(found)
    head = latency_summary(results)
    if found:
        head += f" (target p95 <= 2 s: {verdict(p95(found), 2.0)})"
    rows.append((f"change -> found ({len(results)})", head))
    rows.append(("  by kind (median)", by_kind(results)))
    rows.append((f"  misses (> {a.give_up:.0f} s)", str(misses)))


def time_deletions(watch: Watch, db: str, changer: Changer, a, rows: list) -> None:
    """Files deleted, timed until their document is gone: reported apart from the changes."""
    print("deletions:", flush=True)
    gone = timed_changes(watch, db, changer, ["delete"] * a.deletions, a.give_up)
    misses = sum(s is None for _, _, s in gone)
    rows.append((f"delete -> gone ({a.deletions})", f"{latency_summary(gone)}; misses {misses}"))


def measure_idle(watch: Watch, seconds: float, rows: list, label: str) -> None:
    print(f"resting {REST:.0f} s, then {seconds:.0f} s idle ...", flush=True)
    time.sleep(REST)
    share, passes = idle_share(watch, seconds)
    extra = "" if not passes else f"; {passes} pass line(s) meanwhile: NOT idle"
    rows.append((f"{label}idle CPU ({seconds:.0f} s)",
                 f"{100 * share:.2f}% of a core (target <= 3%: {verdict(share, 0.03)}){extra}"))


def idle_folder(a, tmp: str, rows: list) -> None:
    """Part 3: the idle share on a folder that is only read."""
    print(f"indexing {a.idle_folder} (read only; this can take minutes) ...", flush=True)
    watch = start(a.idle_folder, os.path.join(tmp, "idle.db"))
    try:
        files, folders, poll = watch.said()
        first = next(line for _, line in watch.out if line.startswith("indexed"))
        rows.append(("idle folder", f"{a.idle_folder}: {files:,} file(s) in {folders:,} "
                                    f"folder(s), a poll every {poll} s"))
        rows.append(("  its first index", first))
        measure_idle(watch, a.idle_seconds, rows, "  ")
    finally:
        stopped, _ = stop_line(watch)
    rows.append(("  SIGINT", stopped))
    add_notes(watch, rows, "  ")


def add_notes(watch: Watch, rows: list, label: str) -> None:
    """How many notes the watch gave on stderr (skipped files, failed passes), and the first."""
    notes = watch.notes()
    if notes:
        rows.append((f"{label}its notes", f"{len(notes)}, the first: {notes[0][:70]}"))


def print_table(rows: list) -> None:
    width = max(len(k) for k, _ in rows) + 2
    print()
    for k, v in rows:
        print(k.ljust(width) + v)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--folder", default=SCIFACT,
                   help="folder to copy and watch (default: SciFact's 5,183 abstracts)")
    p.add_argument("--changes", type=int, default=50, help="changes timed (default 50)")
    p.add_argument("--deletions", type=int, default=5, help="deletions timed apart (default 5)")
    p.add_argument("--idle-seconds", type=float, default=60.0,
                   help="idle window for the CPU share (default 60)")
    p.add_argument("--idle-folder", metavar="DIR",
                   help="also the idle share of a watch on DIR (only read)")
    p.add_argument("--give-up", type=float, default=30.0,
                   help="seconds after which a change not found is a miss (default 30)")
    p.add_argument("--seed", type=int, default=0, help="random seed of pauses and picks")
    p.add_argument("--keep", action="store_true", help="keep the temp folder and databases")
    return p.parse_args()


def main():
    a = parse_args()
    if not os.path.isdir(a.folder):
        raise SystemExit(f"no folder {a.folder}")
    command = shlex.join(["python", os.path.relpath(os.path.abspath(__file__))] + sys.argv[1:])
    tmp = tempfile.mkdtemp(prefix="rag-watch-")
    rows: list[tuple[str, str]] = []
    try:
        main_folder(a, tmp, rows)
        if a.idle_folder:
            idle_folder(a, tmp, rows)
    finally:
        if a.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print_table(rows)
    print(f"\ncommand: {command}")


if __name__ == "__main__":
    main()
