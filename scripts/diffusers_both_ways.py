"""Runs diffusers' vendored test files both ways, wrapped (the VAE in a TorchaxVAE) and on plain diffusers, and writes
the table that tests/diffusers/SOURCE.md's and README's counts come from: a benchmark-style script, never a test.

Each side is one pytest run (`-m slow`, heavy files included, two processes) with a JUnit report; the table gives
each file's passed / expected failures / failed / skipped on both sides, and the totals. diffusers' remote tests run
wrapped only (on plain diffusers they would call Hugging Face's endpoints).

    python scripts/diffusers_both_ways.py                                    # every vendored file (hours on 2 cores)
    python scripts/diffusers_both_ways.py tests/diffusers/tests/pipelines/wan --markdown docs/diffusers_table.md
"""

import argparse
import collections
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parent.parent
VENDORED = ROOT / "tests" / "diffusers"
SIDES = {"wrapped": {}, "plain": {"TORCHAX_VAE_PLAIN_DIFFUSERS": "1"}}


def test_files(paths: list[str]) -> list[pathlib.Path]:
    """The vendored test files under `paths` (every one by default), plus the harness's own test files."""
    roots = [ROOT / p for p in paths] or [VENDORED / "tests" / "models" / "autoencoders", VENDORED / "tests" / "pipelines",
                                            VENDORED / "tests" / "remote", VENDORED / "test_qwenimage_as_wan.py"]
    files = []
    for root in roots:
        if not root.exists():
            raise SystemExit(f"{root}: no such file or folder")
        files += [root] if root.is_file() else sorted(root.rglob("test_*.py"))
    return files


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


def run_side(side: str, files: list[pathlib.Path]) -> dict:
    """{file: Counter of outcomes} of one pytest run."""
    if side == "plain":
        files = [f for f in files if "remote" not in f.parts]
    with tempfile.TemporaryDirectory() as folder:
        report = pathlib.Path(folder) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-m", "slow", "-n", "2", "--dist", "loadfile", "-q",
                   "-p", "no:cacheprovider", f"--junitxml={report}", *map(str, files)]
        proc = subprocess.run(command, cwd=ROOT, env={**os.environ, **SIDES[side]}, capture_output=True, text=True)
        if not report.exists():
            raise SystemExit(f"{side}: pytest wrote no report (exit {proc.returncode}):\n{proc.stdout[-3000:]}")
        counts = collections.defaultdict(collections.Counter)
        for case in ET.parse(report).iter("testcase"):
            file = module_file(case.get("classname", ""))
            counts[file][outcome(case)] += 1
    return counts


def table(results: dict) -> tuple[str, dict]:
    files = sorted(set().union(*(set(r) for r in results.values())))
    lines = ["| file | wrapped: passed / xfailed / failed / skipped | plain: passed / xfailed / failed / skipped |",
             "|---|---|---|"]
    totals = {side: collections.Counter() for side in results}
    clean = {side: 0 for side in results}
    for file in files:
        cells = []
        for side in results:
            c = results[side].get(file)
            if c is None:
                cells.append("not run")
                continue
            totals[side].update(c)
            clean[side] += c["failed"] == 0
            cells.append(f"{c['passed']} / {c['xfailed']} / {c['failed']} / {c['skipped']}")
        lines.append(f"| {file.removeprefix('tests/diffusers/')} | " + " | ".join(cells) + " |")
    summary = {side: {"files": len(results[side]), "files_without_failures": clean[side], **totals[side]}
               for side in results}
    for side, s in summary.items():
        lines.append(f"\n{side}: {s['files']} files, {s['files_without_failures']} without a failure; "
                     f"{s.get('passed', 0)} passed, {s.get('xfailed', 0)} expected failures, {s.get('failed', 0)} "
                     f"failed, {s.get('skipped', 0)} skipped")
    return "\n".join(lines), summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help="test files or folders (default: every vendored one)")
    parser.add_argument("--markdown", type=pathlib.Path, help="write the table here")
    parser.add_argument("--json", type=pathlib.Path, help="write the counts here")
    args = parser.parse_args()
    files = test_files(args.paths)
    results = {side: run_side(side, files) for side in SIDES}
    text, summary = table(results)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "files": {s: {f: dict(c) for f, c in r.items()}
                                                                        for s, r in results.items()}}, indent=1))


if __name__ == "__main__":
    main()
