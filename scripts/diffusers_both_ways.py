"""Runs diffusers' vendored test files both ways, wrapped (the VAE in a TorchaxVAE) and on plain diffusers, and writes
the table that tests/diffusers/SOURCE.md's and README's counts come from: a benchmark-style script, never a test.

The files run in chunks: each chunk is one pytest run per side (`-m slow`, heavy files included, two processes) with a
JUnit report, and after each chunk its files' counts are written to the state file (`--state`) with the commit, date
and minutes they ran at. A run that stops (or is stopped) keeps what it finished; the next run takes the files not in
the state file yet (`--again` runs them all). The whole set is hours on 2 cores, so it may take several runs.
diffusers' remote tests run wrapped only (on plain diffusers they would call Hugging Face's endpoints).

    python scripts/diffusers_both_ways.py                  # every vendored file not run yet, then the table
    python scripts/diffusers_both_ways.py tests/diffusers/tests/pipelines/wan --chunk 4
    python scripts/diffusers_both_ways.py --table-only     # the table of what the state file holds
"""

import argparse
import collections
import datetime
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parent.parent
VENDORED = ROOT / "tests" / "diffusers"
SIDES = {"wrapped": {}, "plain": {"TORCHAX_VAE_PLAIN_DIFFUSERS": "1"}}
STATE = ROOT / "docs" / "results" / "data" / "diffusers_both_ways.json"
MARKDOWN = ROOT / "docs" / "results" / "diffusers_both_ways.md"
OUTCOMES = ("passed", "xfailed", "failed", "skipped")


def test_files(paths: list[str]) -> list[str]:
    """The vendored test files under `paths` (every one by default), plus the harness's own test files, relative to
    the repository."""
    roots = [ROOT / p for p in paths] or [VENDORED / "tests" / "models" / "autoencoders", VENDORED / "tests" / "pipelines",
                                            VENDORED / "tests" / "modular_pipelines", VENDORED / "tests" / "remote",
                                            VENDORED / "test_qwenimage_as_wan.py"]
    files = []
    for root in roots:
        if not root.exists():
            raise SystemExit(f"{root}: no such file or folder")
        files += [root] if root.is_file() else sorted(root.rglob("test_*.py"))
    return [str(f.resolve().relative_to(ROOT)) for f in files]


def module_file(classname: str) -> str:
    """The test module of a JUnit classname ("tests.diffusers.tests.pipelines.wan.test_wan.TestWanPipeline"): the
    longest dotted prefix that is a file (a mixin's tests count for the module that runs them)."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end]) + ".py"
        if (ROOT / candidate).is_file():
            return candidate
    return classname


def outcome(case: ET.Element) -> str:
    skipped = case.find("skipped")
    if skipped is not None:
        return "xfailed" if skipped.get("type") == "pytest.xfail" else "skipped"
    if case.find("failure") is not None or case.find("error") is not None:
        return "failed"
    return "passed"


def run_side(side: str, files: list[str]) -> dict:
    """{file: {outcome: count}} of one pytest run of `files` (each file present, zero counts if nothing ran)."""
    if side == "plain":
        files = [f for f in files if "/remote/" not in f]
    counts = {f: collections.Counter() for f in files}
    if not files:
        return counts
    with tempfile.TemporaryDirectory() as folder:
        report = pathlib.Path(folder) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-m", "slow", "-n", "2", "--dist", "loadfile", "-q",
                   "-p", "no:cacheprovider", f"--junitxml={report}", *files]
        env = {**os.environ, **SIDES[side], "TORCHAX_VAE_ROTATION": ""}  # (every file asked for, whatever a CI slice)
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        if not report.exists():
            raise SystemExit(f"{side}: pytest wrote no report (exit {proc.returncode}):\n{proc.stdout[-3000:]}")
        for case in ET.parse(report).iter("testcase"):
            file = module_file(case.get("classname", ""))
            counts.setdefault(file, collections.Counter())[outcome(case)] += 1
    return counts


def commit() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    return head.stdout.strip() + ("+changes" if dirty else "")


def write_atomically(path: pathlib.Path, text: str) -> None:
    temporary = path.with_name(path.name + ".partial")
    temporary.write_text(text)
    os.replace(temporary, path)


def table(state: dict) -> tuple[str, dict]:
    lines = ["| file | wrapped: passed / xfailed / failed / skipped | plain: passed / xfailed / failed / skipped "
             "| commit, date |", "|---|---|---|---|"]
    totals = {side: collections.Counter() for side in SIDES}
    clean = {side: 0 for side in SIDES}
    for file in sorted(state):
        row = state[file]
        cells = []
        for side in SIDES:
            c = row.get(side)
            if c is None:
                cells.append("not run")
                continue
            totals[side].update(c)
            totals[side]["files"] += 1
            clean[side] += c.get("failed", 0) == 0
            cells.append(" / ".join(str(c.get(o, 0)) for o in OUTCOMES))
        lines.append(f"| {file.removeprefix('tests/diffusers/')} | " + " | ".join(cells)
                     + f" | {row['commit']}, {row['date']} |")
    summary = {side: {"files": totals[side].pop("files", 0), "files_without_failures": clean[side],
                      **{o: totals[side].get(o, 0) for o in OUTCOMES}} for side in SIDES}
    for side, s in summary.items():
        lines.append(f"\n{side}: {s['files']} files, {s['files_without_failures']} without a failure; "
                     f"{s['passed']} passed, {s['xfailed']} expected failures, {s['failed']} failed, "
                     f"{s['skipped']} skipped")
    return "\n".join(lines), summary


def readme_sentence(summary: dict, total: int) -> str:
    """The counts, from the table: the sentence docs/results/diffusers_both_ways.md opens with (tests/test_scripts.py checks
    that it does)."""
    wrapped, plain = summary["wrapped"], summary["plain"]
    clean = min(wrapped["files_without_failures"], plain["files_without_failures"] + wrapped["files"] - plain["files"])
    ran = f"All {total}" if wrapped["files"] == total else f"{wrapped['files']} of the {total}"
    wrapped_only = wrapped["files"] - plain["files"]  # the remote files (the module docstring)
    return (f"{ran} vendored test files have run with the VAE wrapped and on plain diffusers"
            + (f" ({wrapped_only} remote-VAE files wrapped only)" if wrapped_only else "")
            + f", {clean} of them without a failure on either side (wrapped {wrapped['passed']} passed, "
            f"{wrapped['xfailed']} expected failures; plain {plain['passed']} passed, {plain['xfailed']} expected "
            "failures)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help="test files or folders (default: every vendored one)")
    parser.add_argument("--chunk", type=int, default=8, help="files per pytest run (default 8)")
    parser.add_argument("--state", type=pathlib.Path, default=STATE, help=f"the counts so far (default {STATE})")
    parser.add_argument("--markdown", type=pathlib.Path, default=MARKDOWN, help=f"the table (default {MARKDOWN})")
    parser.add_argument("--again", action="store_true", help="run the files the state file holds already too")
    parser.add_argument("--table-only", action="store_true", help="write the table of the state file, run nothing")
    args = parser.parse_args()
    state = json.loads(args.state.read_text()) if args.state.exists() else {}
    todo = [] if args.table_only else [f for f in test_files(args.paths) if args.again or f not in state]
    for start in range(0, len(todo), args.chunk):
        chunk = todo[start:start + args.chunk]
        began, at = time.monotonic(), commit()
        sides = {side: run_side(side, chunk) for side in SIDES}
        minutes = round((time.monotonic() - began) / 60, 1)
        stamp = {"commit": at, "date": datetime.date.today().isoformat(), "chunk_minutes": minutes}
        for file in chunk:
            state[file] = {**stamp, **{side: dict(sides[side][file]) for side in SIDES if file in sides[side]}}
        write_atomically(args.state, json.dumps(state, indent=1, sort_keys=True) + "\n")
        print(f"{start + len(chunk)}/{len(todo)} files ({minutes} min for the last {len(chunk)})", flush=True)
    text, summary = table(state)
    write_atomically(args.markdown, page(text, summary))
    print("\n".join(line for line in text.splitlines()[-3:] if line))
    print(f"{readme_sentence(summary, len(test_files([])))}.")


def page(text: str, summary: dict) -> str:
    """docs/results/diffusers_both_ways.md: the counts first (tests/test_scripts.py holds the page to the table), then the
    table of every file."""
    return (f"# diffusers' own tests, both ways\n\n{readme_sentence(summary, len(test_files([])))}.\n"
            f"Written by `scripts/diffusers_both_ways.py` (hours on 2 cores; `--table-only` rewrites this page).\n\n"
            f"{text}\n")


if __name__ == "__main__":
    main()
