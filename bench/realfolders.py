"""Right answers from the folders people index: rag.py offline on this machine's own folders.

Standard library only. One index per folder, built (once; later runs index again, which
skips unchanged files) into --dbs, outside the project; then `rag.py eval --generate --json`
over that folder's cases of bench/realfolders.json (the cases whose "group" is the folder's
name), offline (built-in embedder, extractive answers, default settings: the environment's
LLM_*/EMBED_*/RAG_* settings are not passed on). Prints one table: per folder and overall,
answerable cases, answered right (an accepted answer string in the answer), the right share,
answerable refused, and the share of unanswerable cases refused.

    python bench/realfolders.py                       # every folder
    python bench/realfolders.py --group man -v        # one folder, each failed answer shown
    python bench/realfolders.py --rag ../other/rag.py --dbs /tmp/mydbs

The folders (cases were written for these, after opening each file):
    stdlib  /root/.pyenv/versions/3.11.7/lib/python3.11 (CPython 3.11.7; test/ kept in,
            site-packages/ and config-3.11-*/ left out); --stdlib DIR for another
    doc     /usr/share/doc (Debian's package docs), whole
    man     /usr/share/man: man1, man5, man8 (English) and the fr and de translations;
            man1's gcloud* pages (16,631 of them, one tool) left out
    etc     /etc, whole (files rag.py would not read, credentials, are skipped by rag.py)
    log     a folder generated into --dbs/log-folder (seeded, the same bytes each run):
            app/worker.log (timestamped lines: level, worker id, batch id) and
            apt/history.log (apt's history format)
A folder missing on this machine is skipped with a note.

    python bench/realfolders.py --cases bench/anyfolders.json --half dev

bench/anyfolders.json (issue #54) names its own folders: ten kinds of third-party repositories
(C headers, unit files, how-to pages, a JavaScript, a Python and a Go project, YAML,
Dockerfiles and scripts, reStructuredText docs, Ansible), each a repository at a commit and a
folder of it, taken from git mirrors under --mirror (the search tool's `fetch github:OWNER/NAME`
makes /work/.mirror/OWNER+NAME/repo) into --dbs. Its questions were written by helpers who never
read rag.py, each after opening the file; "half" splits them: dev to work from, test to run once
at the end. Each run's JSON report is kept in
--dbs as report-NAME.json (every case's answer and why it failed).
"""

import argparse
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "realfolders.json")
STDLIB = "/root/.pyenv/versions/3.11.7/lib/python3.11"
LOG_SEED = 47  # any fixed number: the generated log is the same on every machine
LOG_LINES = 60000  # about 5 MB of routine lines around the planted ones: a log worth indexing


def folders(args) -> dict:
    """name: (paths to index, extra index arguments)."""
    return {
        "stdlib": ([args.stdlib], ["--exclude", "site-packages/", "--exclude", "config-*/"]),
        "doc": (["/usr/share/doc"], []),
        "man": (["/usr/share/man"], ["--include", "man1/**", "--include", "man5/**",
                                     "--include", "man8/**", "--include", "fr/**",
                                     "--include", "de/**", "--exclude", "man1/gcloud*"]),
        "etc": (["/etc"], []),
        "log": ([os.path.join(args.dbs, "log-folder")], []),
    }


# The planted lines of the generated app log: (time, level, worker, text). Questions ask
# about these; the routine lines around them never repeat a batch id.
PLANTED = [
    ("2026-03-02 01:12:09,331", "INFO", "worker-02", "service started: version 4.18.2, "
     "config /srv/ingest/ingest.toml, 12 workers"),
    ("2026-03-02 02:47:55,004", "WARN", "worker-09", "batch 731905 slow: 48.2 s for 512 "
     "records (threshold 30 s)"),
    ("2026-03-02 03:05:41,618", "ERROR", "worker-04", "batch 558213 failed: connection reset "
     "by db-primary.internal:5432 (attempt 1 of 3)"),
    ("2026-03-02 03:05:44,902", "INFO", "worker-04", "batch 558213 retried: succeeded on "
     "attempt 2"),
    ("2026-03-02 04:30:00,000", "INFO", "scheduler", "nightly compaction started on shard "
     "eu-west-7"),
    ("2026-03-02 04:52:13,770", "INFO", "scheduler", "nightly compaction finished on shard "
     "eu-west-7: 18.4 GB reclaimed"),
    ("2026-03-02 06:18:27,145", "ERROR", "worker-11", "batch 209764 rejected: schema "
     "mismatch, field 'customer_ref' expected string, got null"),
    ("2026-03-02 07:41:02,559", "WARN", "worker-06", "disk usage on /var/spool/ingest at "
     "91%, above the 85% warning level"),
    ("2026-03-02 09:03:36,212", "INFO", "worker-01", "batch 884410 processed: 512 records in "
     "2.07 s (checksum 7f3a9c1e)"),
    ("2026-03-02 10:22:48,090", "INFO", "api", "config reloaded by operator jmoreau: "
     "max_batch_size 512 -> 1024"),
    ("2026-03-02 11:59:59,871", "ERROR", "worker-08", "out of memory while decoding batch "
     "615032 (RSS 3.9 GiB, limit 4 GiB); worker restarted"),
    ("2026-03-02 13:14:05,417", "WARN", "api", "rate limit hit for client acme-billing: 1200 "
     "requests in 60 s"),
    ("2026-03-02 14:36:50,333", "INFO", "worker-03", "batch 347118 processed: 1024 records "
     "in 3.61 s (checksum 02bd44e0)"),
    ("2026-03-02 15:45:12,676", "ERROR", "api", "TLS handshake failed with upstream "
     "payments.example.net: certificate expired on 2026-03-01"),
    ("2026-03-02 17:20:31,908", "INFO", "worker-10", "dead-letter queue drained: 37 messages "
     "re-queued"),
    ("2026-03-02 19:02:44,150", "WARN", "worker-05", "batch 990271 contained 14 duplicate "
     "records, dropped"),
    ("2026-03-02 21:37:18,522", "INFO", "scheduler", "backup to s3://ingest-backups/2026-03-02 "
     "completed: 212 files, 6.3 GB"),
    ("2026-03-02 23:58:40,009", "INFO", "worker-02", "service stopping: received SIGTERM "
     "from systemd"),
]

# apt's history.log entries: (start, command line, action, packages, end)
APT_HISTORY = [
    ("2026-01-05  09:14:02", "apt-get install -y nginx", "Install",
     "nginx:amd64 (1.24.0-2), nginx-common:amd64 (1.24.0-2, automatic)", "2026-01-05  09:14:19"),
    ("2026-01-12  16:40:51", "apt install postgresql-16", "Install",
     "postgresql-16:amd64 (16.1-1), postgresql-client-16:amd64 (16.1-1, automatic)",
     "2026-01-12  16:41:37"),
    ("2026-01-20  08:03:10", "apt-get upgrade", "Upgrade",
     "openssl:amd64 (3.0.11-1, 3.0.13-1), libssl3:amd64 (3.0.11-1, 3.0.13-1)",
     "2026-01-20  08:03:55"),
    ("2026-02-01  11:22:45", "apt install redis-server", "Install",
     "redis-server:amd64 (5:7.0.15-1), redis-tools:amd64 (5:7.0.15-1, automatic)",
     "2026-02-01  11:23:02"),
    ("2026-02-03  14:09:33", "apt remove --purge apache2", "Purge",
     "apache2:amd64 (2.4.58-1), apache2-bin:amd64 (2.4.58-1)", "2026-02-03  14:09:41"),
    ("2026-02-10  10:00:12", "apt install golang-1.22", "Install",
     "golang-1.22:amd64 (1.22.0-1), golang-1.22-go:amd64 (1.22.0-1, automatic)",
     "2026-02-10  10:01:48"),
    ("2026-02-17  07:30:05", "apt-get upgrade", "Upgrade",
     "nginx:amd64 (1.24.0-2, 1.24.0-2+deb12u1), nginx-common:amd64 (1.24.0-2, "
     "1.24.0-2+deb12u1)", "2026-02-17  07:30:21"),
    ("2026-02-24  18:45:59", "apt install fail2ban", "Install",
     "fail2ban:amd64 (1.0.2-2), python3-systemd:amd64 (235-1, automatic)",
     "2026-02-24  18:46:14"),
    ("2026-03-01  12:12:12", "apt remove snapd", "Remove", "snapd:amd64 (2.60.4-1)",
     "2026-03-01  12:12:30"),
]


def write_log_folder(root: str) -> None:
    """The generated log folder: the same bytes for the same seed (written when missing)."""
    app, apt = os.path.join(root, "app", "worker.log"), os.path.join(root, "apt", "history.log")
    if os.path.exists(app) and os.path.exists(apt):
        return
    for path in (app, apt):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(app, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in app_lines())
    with open(apt, "w", encoding="utf-8") as f:
        for start, command, action, packages, end in APT_HISTORY:
            f.write(f"\nStart-Date: {start}\nCommandline: {command}\n"
                    f"Requested-By: admin (1000)\n{action}: {packages}\nEnd-Date: {end}\n")


def app_lines() -> list[str]:
    """Routine lines (one batch each, ids never repeated) with PLANTED in time order."""
    rng = random.Random(LOG_SEED)
    planted_ids = {w for *_, text in PLANTED for w in text.split() if w.isdigit()}
    ids = [str(i) for i in rng.sample(range(100000, 999999), LOG_LINES + 50)
           if str(i) not in planted_ids][:LOG_LINES]
    start = 1772409600  # 2026-03-02 00:00:00 UTC: one day of lines
    lines = []
    for n, batch in enumerate(ids):
        t = start + n * 86400 / LOG_LINES
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + f",{int(t * 1000) % 1000:03d}"
        worker = f"worker-{rng.randrange(1, 13):02d}"
        lines.append(f"{stamp} INFO  [{worker}] batch {batch} processed: "
                     f"{rng.choice((256, 512, 512, 1024))} records in {rng.uniform(0.4, 4):.2f} s")
    lines += [f"{stamp} {level:<5} [{who}] {text}" for stamp, level, who, text in PLANTED]
    return sorted(lines)  # the timestamp leads each line


def offline_env() -> dict:
    """The environment without any model or index setting: offline, default settings."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("LLM_", "EMBED_", "RAG_", "OPENAI_"))}


def build(rag: str, db: str, paths: list[str], extra: list[str]) -> None:
    """Index the folder (a later run skips the unchanged files)."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, rag, "index", *paths, "--db", db, *extra],
                          env=offline_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    tail = (done.stdout.strip().splitlines() or [""])[-1]
    print(f"  index {os.path.basename(db)}: {time.perf_counter() - t0:.0f} s; {tail}",
          file=sys.stderr)
    if done.returncode != 0:
        sys.exit(f"realfolders: index failed: {done.stderr.strip()[-500:]}")


def run_eval(rag: str, db: str, cases: list[dict], dbs: str, name: str) -> dict:
    """rag.py eval --generate --json over the cases; the report (kept in dbs)."""
    path = os.path.join(dbs, f"cases-{name}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cases, f, indent=1)
    done = subprocess.run([sys.executable, rag, "eval", path, "--db", db, "--generate", "--json"],
                          env=offline_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    if done.returncode != 0:
        sys.exit(f"realfolders: eval failed: {done.stderr.strip()[-500:]}")
    report = json.loads(done.stdout)
    with open(os.path.join(dbs, f"report-{name}.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    return report


def figures(rows: list[dict]) -> dict:
    """answerable, right, refused; unanswerable, refused (from eval's rows)."""
    answerable = [r for r in rows if not r.get("unanswerable")]
    off = [r for r in rows if r.get("unanswerable")]
    def refused(r):  # the answer's refusal when it was judged, else the floor's
        return r.get("answer_refused", r["refused"])
    def declined(r):  # refused, or answered saying no passage holds what it is about
        return refused(r) or "missing_word" in r
    return {"answerable": len(answerable), "right": sum(bool(r.get("answer_ok"))
                                                        for r in answerable),
            "refused": sum(map(refused, answerable)), "unanswerable": len(off),
            "off_refused": sum(map(declined, off)),
            "missing": sum("missing_word" in r and not refused(r) for r in answerable),
            "held": sum(bool(r.get("passages_hold")) for r in answerable),
            "held_right": sum(bool(r.get("passages_hold") and r.get("answer_ok"))
                              for r in answerable)}


def row(name: str, f: dict) -> str:
    def part(n, d):
        return f"{n / d:.2f}" if d else "n/a"
    return (f"| {name} | {f['answerable']} | {f['right']} | {part(f['right'], f['answerable'])} "
            f"| {f['refused']} | {f['missing']} | {f['unanswerable']} "
            f"| {part(f['off_refused'], f['unanswerable'])} "
            f"| {part(f['held'], f['answerable'])} | {part(f['held_right'], f['held'])} |")


def show_failures(report: dict) -> None:
    for r in report["cases_detail"]:
        if r.get("failure") or (not r.get("unanswerable") and "answer_ok" not in r):
            why = r.get("failure") or f"gold not in the top k (first at {r.get('first')})"
            print(f"  {r['id']}: {r['question'][:70]} -> {str(r.get('answer', ''))[:90]!r}  "
                  f"({why})")


def repo_folders(spec: dict, args) -> dict:
    """name: ([the folder], []) for a cases file's own folders, each written out of its git
    mirror at its commit into --dbs (once)."""
    out = {}
    for name, f in spec.items():
        root = os.path.join(args.dbs, "folders", name)
        mirror = os.path.join(args.mirror, f["repo"].replace("/", "+"), "repo")
        if not os.path.isdir(root) and os.path.isdir(mirror):
            os.makedirs(root)
            tar = subprocess.run(["git", "--git-dir", mirror, "archive", f["commit"],
                                  *([f["subdir"]] if f["subdir"] else [])],
                                 stdout=subprocess.PIPE, check=True).stdout
            subprocess.run(["tar", "-x", "-C", root], input=tar, check=True)
        out[name] = ([os.path.join(root, f["subdir"]) if os.path.isdir(root) else mirror], [])
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dbs", default="/work/wt/dbs/realfolders",
                   help="where the indexes, the log folder and the reports go "
                        "(outside the project)")
    p.add_argument("--group", action="append", help="run only this folder (repeatable)")
    p.add_argument("--rag", default=os.path.join(HERE, "..", "rag.py"), help="the rag.py to run")
    p.add_argument("--stdlib", default=STDLIB if os.path.isdir(STDLIB) else None,
                   help=f"the Python standard library folder (default {STDLIB})")
    p.add_argument("--cases", default=CASES)
    p.add_argument("--no-index", action="store_true", help="use the indexes as they are")
    p.add_argument("--half", choices=("dev", "test"), help="only the cases of this half")
    p.add_argument("--mirror", default="/work/.mirror",
                   help="where the git mirrors of a cases file's repositories are")
    p.add_argument("-v", "--verbose", action="store_true", help="show every failed case")
    args = p.parse_args()
    os.makedirs(args.dbs, exist_ok=True)
    write_log_folder(os.path.join(args.dbs, "log-folder"))
    with open(args.cases, encoding="utf-8") as f:
        cases = json.load(f)
    where = folders(args)
    if isinstance(cases, dict):  # a cases file with its own folders
        where, cases = repo_folders(cases["folders"], args), cases["cases"]
    cases = [c for c in cases if not args.half or c.get("half") == args.half]
    table, every = [], []
    for name, (paths, extra) in where.items():
        if args.group and name not in args.group:
            continue
        if not all(p and os.path.isdir(p) for p in paths):
            where = paths[0] or "no Python standard library folder (--stdlib DIR)"
            print(f"realfolders: {name}: {where} is not on this machine; skipped",
                  file=sys.stderr)
            continue
        mine = [c for c in cases if c.get("group") == name]
        if not mine:
            continue
        db = os.path.join(args.dbs, f"{name}.db")
        if not args.no_index or not os.path.exists(db):
            build(args.rag, db, paths, extra)
        t0 = time.perf_counter()
        report = run_eval(args.rag, db, mine, args.dbs, name)
        print(f"  eval {name}: {len(mine)} cases in {time.perf_counter() - t0:.0f} s",
              file=sys.stderr)
        if args.verbose:
            show_failures(report)
        table.append((name, figures(report["cases_detail"])))
        every += report["cases_detail"]
    print("| folder | answerable | right | right share | answerable refused "
          "| answerable said missing | unanswerable | unanswerable refused or said missing "
          "| top k hold the answer | of those, the answer has it |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, f in table + [("all", figures(every))]:
        print(row(name, f))
    return 0


if __name__ == "__main__":
    sys.exit(main())
