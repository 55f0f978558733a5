"""The docs a user reads first hold to what they say: README fits a screen and its class table is the registry's,
every relative link resolves, and the service examples ask diffusers' client for the MP4 it can return."""

import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "torchax_vae").rglob("*.md")),
         *sorted((ROOT / "tests" / "diffusers").glob("*.md"))]


def test_readme_fits_a_first_screen():
    text = README.read_text()
    before = text.split("```")[0]
    assert len(before) <= 900, f"{len(before)} characters before README's first code block (at most 900)"
    lines = text.splitlines()
    assert len(lines) <= 140, f"README has {len(lines)} lines (at most 140)"
    long = [(number, len(line)) for number, line in enumerate(lines, 1) if len(line) > 120]
    assert not long, f"README lines over 120 characters (line, length): {long}"


def test_readmes_class_table_is_the_registrys():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import class_table
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    assert class_table.table() in README.read_text(), "README's table differs: python scripts/class_table.py prints it"


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        for link in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", link) or link.startswith("#"):
                continue
            if not (page.parent / link.split("#")[0]).exists():
                broken.append(f"{page.relative_to(ROOT)}: {link}")
    assert not broken, f"links that resolve to nothing: {broken}"


def test_mp4_examples_ask_for_the_mp4():
    """diffusers 0.42.1's `remote_decode(..., output_type="mp4")` fails in its postprocessing unless
    `return_type="mp4"` comes with it: every example that asks for an MP4 says both."""
    calls = []
    for page in PAGES:
        text = page.read_text()
        for match in re.finditer(r"remote_decode\(", text):
            call = text[match.start():text.find(")", text.find("output_type", match.start())) + 1]
            if re.search(r"output_type=['\"]mp4['\"]", call) and not re.search(r"return_type=['\"]mp4['\"]", call):
                calls.append(f"{page.relative_to(ROOT)}: {call[:120]}")
    assert not calls, f"MP4 examples without return_type='mp4': {calls}"


def test_docs_are_in_their_parts():
    """docs/ holds pages at its top and in guide/, design/ and results/; data files only under results/data/; and
    limits.md is arranged by topic, not by issue."""
    docs = ROOT / "docs"
    for path in docs.rglob("*"):
        if path.is_dir():
            continue
        where = path.relative_to(docs)
        if path.suffix == ".md":
            assert len(where.parts) == 1 or where.parts[0] in ("guide", "design", "results") and len(where.parts) == 2, where
        else:
            assert where.parts[:2] == ("results", "data"), f"a data file outside docs/results/data/: {where}"
    headings = [line for line in (docs / "limits.md").read_text().splitlines() if line.startswith("#")]
    assert not [h for h in headings if re.search(r"issue \d", h)], headings


def _blocks(page: Path) -> list[tuple[str, str]]:
    """A page's unmarked top-level blocks (those it says run), in order."""
    return re.findall(r"^```(bash|python)\n(.*?)^```", page.read_text(), flags=re.S | re.M)


@pytest.mark.slow  # 78 s: docs/plan.md's blocks, compiled for TPUs and GPUs (CI: every sixth run)
def test_the_offline_page_runs_as_written(tmp_path):
    """docs/guide/offline.md's blocks, in order, in an empty folder: the command from this environment's scripts."""
    import os
    import subprocess

    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "TORCHAX_VAE_CACHE_DIR": str(tmp_path / "cache")}
    blocks = _blocks(ROOT / "docs" / "guide" / "offline.md")
    assert [kind for kind, _ in blocks] == ["bash", "bash", "python", "bash", "python"]
    for kind, code in blocks:
        command = ["bash", "-e", "-c", code] if kind == "bash" else [sys.executable, "-c", code]
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{kind} block failed:\n{code}\n{done.stderr[-2000:]}"
    assert (tmp_path / "video.mp4").stat().st_size > 0 and (tmp_path / "clip.mp4").stat().st_size > 0


def test_each_readme_code_block_runs_or_says_why_not():
    """README's blocks: those that can run offline run (here or in CI), and each of the others says why not in its
    fence (a model download, an install, an accelerator)."""
    fences = [line for line in README.read_text().splitlines() if line.startswith("```") and line.strip() != "```"]
    unmarked = [fence for fence in fences if "(not run here:" not in fence]
    assert not unmarked, f"README blocks neither run nor marked: {unmarked}"


RUN_BY_TESTS = {"docs/guide/offline.md": "test_the_offline_page_runs_as_written",
                "docs/guide/api.md": "test_the_api_pages_own_vae_example_runs",
                "docs/guide/accelerators.md": "test_the_accelerator_pages_mesh_example_runs"}


def test_each_guide_and_design_block_runs_or_says_why_not():
    """The guide's and the design's code blocks: a page whose blocks run here has its test (RUN_BY_TESTS); every
    other block says in its fence why it does not run here."""
    unmarked = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        name = str(page.relative_to(ROOT))
        if name in RUN_BY_TESTS:
            continue
        unmarked += [f"{name}: {line.strip()}" for line in page.read_text().splitlines()
                     if re.match(r"```\w", line.strip()) and "(not run here:" not in line]
    assert not unmarked, f"blocks neither run nor marked: {unmarked}"


def test_the_api_pages_own_vae_example_runs(tmp_path):
    """docs/guide/api.md's "Your own VAE" block, as written, in a fresh process."""
    import subprocess

    (block,) = [code for kind, code in _blocks(ROOT / "docs" / "guide" / "api.md") if kind == "python"]
    done = subprocess.run([sys.executable, "-c", block + "\nprint(type(vae).__name__, vae.decode(__import__('torch')"
                           ".randn(1, 4, 2, 8, 8)).sample.shape)"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "torch.Size([1, 3, 2, 16, 16])" in done.stdout, done.stdout


@pytest.mark.slow  # 22 s: 8 fake devices in a process (CI: every sixth run)
def test_the_accelerator_pages_mesh_example_runs(tmp_path):
    """docs/guide/accelerators.md's mesh block, as written, in a fresh process (its 8 virtual devices need one)."""
    import subprocess

    (block,) = [code for kind, code in _blocks(ROOT / "docs" / "guide" / "accelerators.md") if kind == "python"]
    done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "8 devices against PyTorch" in done.stdout, done.stdout


def test_the_patches_page_names_every_patch():
    """docs/design/patches.md lists each file of torchax_vae/patches (but the package's own plumbing)."""
    page = (ROOT / "docs" / "design" / "patches.md").read_text()
    files = {f.stem for f in (ROOT / "torchax_vae" / "patches").glob("*.py")} - {"__init__", "options", "conv_rules", "refine"}
    missing = sorted(name for name in files if f"`{name}`" not in page)
    assert not missing, f"patches not on docs/design/patches.md: {missing}"


def test_the_docs_index_links_every_page():
    """docs/README.md, the index README points to, links every page under docs/."""
    index = (ROOT / "docs" / "README.md").read_text()
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")} - {"README.md"}
    missing = sorted(page for page in pages if f"]({page})" not in index)
    assert not missing, f"pages docs/README.md does not link: {missing}"


def test_the_documented_rejection_reasons_are_the_services():
    """docs/guide/serve.md's list of `torchax_vae_rejected_requests_total` reasons is every reason the service counts."""
    code = "".join(path.read_text() for path in (ROOT / "torchax_vae" / "serve").glob("*.py"))
    counted = set(re.findall(r'reason="([a-z_]+)"', code)) | set(re.findall(r'rejected\.labels\("([a-z_]+)"\)', code))
    line = next(line for line in (ROOT / "docs" / "guide" / "serve.md").read_text().splitlines()
                if "torchax_vae_rejected_requests_total{reason}" in line)
    documented = set(re.findall(r"`([a-z_]+)`", line))
    assert counted <= documented, f"counted, not documented: {sorted(counted - documented)}"
    assert documented - {"torchax_vae_rejected_requests_total"} <= counted | {"reason"}, sorted(documented - counted)


@pytest.mark.slow  # 23 s: collects the whole suite (CI: every sixth run)
def test_the_heavy_list_is_the_suites():
    """parity.md's "By hand only" table names every file of the project's own by-hand tests (never in CI), with
    their count."""
    import fnmatch
    import subprocess

    page = (ROOT / "docs" / "results" / "parity.md").read_text()
    section = page[page.index("**By hand only**"):]
    section = section[:section.index("\n## ")]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| tests/")]
    listed = [([name.strip().removeprefix("tests/") for name in where.split(",")], int(count)) for where, count in rows]
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "--co", "-m", "by_hand", "--ignore=tests/diffusers",
                          "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "TORCHAX_VAE_ROTATION": ""}).stdout  # (all of them, whatever CI's slice)
    files = [line.split("::")[0].removeprefix("tests/") for line in out.splitlines() if "::" in line]
    assert files, out[-2000:]
    for names, count in listed:
        found = [f for f in files if any(fnmatch.fnmatch(f, name) for name in names)]
        assert len(found) == count, f"{names}: {len(found)} by-hand tests, the page says {count}"
    unlisted = sorted({f for f in files if not any(fnmatch.fnmatch(f, n) for names, _ in listed for n in names)})
    assert not unlisted, f"by-hand tests in files parity.md does not list: {unlisted}"
    assert f"{len(files)} of the project's own tests" in section, f"{len(files)} by-hand tests"
    assert len(files) <= 50, f"{len(files)} of the project's own tests never run in CI"
