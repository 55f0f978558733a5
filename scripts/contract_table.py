"""Runs the family contract (tests/contract) with each comparison's max |Δ| recorded, and writes the table that
docs/results/parity.md opens with: one row per served class, its newest measurement, the date and the machine.

A benchmark-style script, never a test (the contract itself runs in CI and fails on any row beyond its tolerance).

    python scripts/contract_table.py                # run the contract (about 3 minutes on 2 cores), then the table
    python scripts/contract_table.py --table-only   # the table of what docs/results/data/contract.json holds
"""

import argparse
import datetime
import importlib.metadata
import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "results" / "data" / "contract.json"
PAGE = ROOT / "docs" / "results" / "parity.md"
BEGIN, END = "<!-- contract table: scripts/contract_table.py -->", "<!-- end of the contract table -->"
CHECKS = ("encode", "decode", "stream", "session", "served")  # the contract's checks, in the table's order


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor()) if os.path.exists("/proc/cpuinfo") else platform.processor()
    return f"{os.cpu_count()}-core {cpu}"


def versions() -> str:
    return ", ".join(f"{p} {importlib.metadata.version(p)}" for p in ("torch", "torchax", "jax", "diffusers"))


def run() -> dict:
    """The contract, recorded: {class: {check: [max |Δ|, peak, chunks or None]}} (the worst comparison of each)."""
    with tempfile.TemporaryDirectory() as folder:
        record = pathlib.Path(folder) / "record.jsonl"
        env = {**os.environ, "TORCHAX_VAE_CONTRACT_RECORD": str(record), "TORCHAX_VAE_ROTATION": ""}  # every row
        subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadfile", "-q", "-p", "no:cacheprovider",
                        "-m", "not slow", "tests/contract"], cwd=ROOT, env=env, check=True)  # (not the 8-device rows)
        rows: dict = {}
        for line in record.read_text().splitlines():
            entry = json.loads(line)
            name, what = entry["check"].split(" ", 1)
            check = next(c for c in CHECKS if what.startswith(c) or (c == "decode" and what.startswith("forward")))
            worst = rows.setdefault(name, {}).get(check)
            if worst is None or entry["max_abs_diff"] > worst["max_abs_diff"]:
                rows[name][check] = {"max_abs_diff": entry["max_abs_diff"], "peak": entry["peak"], "what": what}
    return rows


def table(state: dict) -> str:
    from torchax_vae import registry

    lines = [f"Measured {state['date']} on the {state['machine']} ({state['versions']}), fp32, seeded random weights "
             "of each class's tiny config (tests/contract/cases.py). Each cell: max |Δ| against the same diffusers "
             "model in PyTorch, and the reference's peak; the tolerance is min(1e-4, 5e-5 x peak).", "",
             "| class | encode | decode | stream | session | served |", "|---|---|---|---|---|---|"]
    for row in registry.ROWS:
        cells = state["rows"].get(row.diffusers_class)
        if cells is None:
            lines.append(f"| `{row.diffusers_class}` | not built here | | | | |")
            continue

        def cell(check):
            if check not in cells:
                return "-"
            c = cells[check]
            return f"{c['max_abs_diff']:.2g} of {c['peak']:.3g}"
        lines.append(f"| `{row.diffusers_class}` | " + " | ".join(cell(c) for c in CHECKS) + " |")
    lines += ["", "\"-\": the class has no such call (a decoder alone has no encode, a vocoder no stream; a family "
              "without causal state no session; a class the service serves only in its pipeline's folder no served "
              "cell: tests/contract/cases.py says where that is checked). A stream of several chunks for every family "
              "whose decode is a loop of chunks; the stream and the session, against diffusers' whole decode; served: "
              "the service's raw float answer to a POST of the latents, against the decode its pipelines call."]
    return "\n".join(lines)


def write_page(state: dict) -> None:
    page = PAGE.read_text()
    block = f"{BEGIN}\n{table(state)}\n{END}"
    if BEGIN in page:
        start, end = page.index(BEGIN), page.index(END) + len(END)
        page = page[:start] + block + page[end:]
    else:
        title, rest = page.split("\n", 1)
        page = f"{title}\n\n## Today's figures: every served class\n\n{block}\n{rest}"
    PAGE.write_text(page)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table-only", action="store_true", help="rewrite the page from the data file alone")
    args = parser.parse_args()
    if args.table_only:
        state = json.loads(DATA.read_text())
    else:
        state = {"date": datetime.date.today().isoformat(), "machine": machine(), "versions": versions(),
                 "rows": run()}
        tmp = DATA.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1) + "\n")
        tmp.replace(DATA)  # atomically
    write_page(state)
    print(f"wrote {PAGE.relative_to(ROOT)} ({len(state['rows'])} classes)")


if __name__ == "__main__":
    main()
