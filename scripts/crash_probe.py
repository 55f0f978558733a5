"""Which variant of one TorchaxVAE decode fails on an accelerator, each variant in a fresh process.

A CUDA fault (CUDA_ERROR_ILLEGAL_INSTRUCTION, an illegal address) ends the process that hit it and poisons its
context for everything after, so a probe of its cause runs each hypothesis in a process of its own and records
whether it finished, how long it took, the last error line, and its output against PyTorch's (bf16 on both sides,
relative L2), one JSON line per variant. Made for Wan 2.1's decode, which died so on an H200 on 2026-11-29
(docs/limits.md):

    python3 scripts/crash_probe.py wan2.1=9x480x832 --variants head,no-triton-softmax,blocking --json $OUT/probe.jsonl
    git archive 8c9c9a2 | (mkdir -p .old && tar -x -C .old)    # for "old": the package as of an earlier commit
    python3 scripts/crash_probe.py wan-tiny=9x32x64 --variants head,old   # on a CPU: the variants run end to end
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Each hypothesis as what its process gets: environment variables, and "ROOT", where torchax_vae is imported from.
VARIANTS = {
    "head": {},  # this checkout: XLA's defaults plus backends.py's options
    # XLA's Triton normalization and softmax fusions off: Wan 2.1's 480p programs hold 35 of them (its RMS norms and
    # its attention's softmax; SDXL's one, CogVideoX's none), the one kind of Triton kernel left on after Triton
    # GEMMs died the same way on an H100 (backends.py)
    "no-triton-softmax": {"XLA_FLAGS": "--xla_disable_hlo_passes=triton-softmax-rewriter"},
    "blocking": {"CUDA_LAUNCH_BLOCKING": "1"},  # the failing kernel reported at its launch, not at a later sync
    "no-autotune": {"XLA_FLAGS": "--xla_gpu_autotune_level=0"},  # cuDNN's algorithm choice left to its heuristics
    "old": {"ROOT": ".old"},  # the package as of an earlier commit (the docstring's git archive)
}


def _worker(config: str, shape: list[int]) -> dict:
    """One decode with TorchaxVAE and with diffusers' model, bf16, on CUDA where torch has it."""
    import torch

    from torchax_vae import TorchaxVAE
    from vaes import decode_args, random_vae

    device = "cuda" if torch.cuda.is_available() else "cpu"
    vae = random_vae(config).to(device=device, dtype=torch.bfloat16)
    z = torch.randn(shape, generator=torch.Generator().manual_seed(0)).to(device=device, dtype=torch.bfloat16)
    model = TorchaxVAE(vae, dtype=torch.bfloat16)
    start = time.perf_counter()
    ours = model.decode(z, *decode_args(vae, z.shape[0], z.dtype)).sample
    if ours.is_cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    with torch.no_grad():
        theirs = vae.decode(z, *decode_args(vae, z.shape[0], z.dtype)).sample
    ours, theirs = ours.float().cpu(), theirs.float().cpu()
    rel = float((ours - theirs).norm() / theirs.norm())
    return {"first_call_seconds": round(seconds, 2), "rel_l2": rel, "finite": bool(torch.isfinite(ours).all()),
            "shape": list(ours.shape), "torchax_vae_from": str(Path(sys.modules["torchax_vae"].__file__).parent)}


def _environment(variant: dict) -> dict:
    env = dict(os.environ)
    root = ROOT / variant.get("ROOT", ".")
    env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH", "")])])
    env["TORCHAX_VAE_CACHE_DIR"] = "off"  # every variant compiles its own programs
    for key, value in variant.items():
        if key == "XLA_FLAGS":
            env[key] = " ".join(filter(None, [os.environ.get(key, ""), value]))
        elif key != "ROOT":
            env[key] = value
    return env


def probe(name: str, config: str, shape: list[int], timeout: float) -> dict:
    variant = VARIANTS[name]
    root = ROOT / variant.get("ROOT", ".")
    row = {"variant": name, "config": config, "latents": shape, "settings": variant}
    if not (root / "torchax_vae").is_dir():
        return {**row, "outcome": "not run", "error": f"no torchax_vae under {root}"}
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, __file__, "--worker", config, json.dumps(shape)],
                              capture_output=True, text=True, timeout=timeout, env=_environment(variant), cwd=root)
    except subprocess.TimeoutExpired:
        return {**row, "outcome": f"not done in {timeout:.0f} s", "seconds": round(time.perf_counter() - start, 1)}
    row["seconds"] = round(time.perf_counter() - start, 1)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode == 0 and lines:
        return {**row, "outcome": "finished", **json.loads(lines[-1])}
    errors = [line for line in done.stderr.splitlines() if "Error" in line or "error" in line]
    # the lines that can name the failing kernel (with CUDA_LAUNCH_BLOCKING, XLA reports it at its launch)
    named = list(dict.fromkeys(line.strip()[-300:] for line in done.stderr.splitlines()
                               if re.search(r"fusion|kernel|thunk|custom.call|cudnn|triton", line, re.I)))[:8]
    return {**row, "outcome": f"exit {done.returncode}", "error": (errors or done.stderr.splitlines() or [""])[-1][-400:],
            "first_error": (errors or [""])[0][-400:], "kernel_lines": named}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="crash_probe", description=__doc__.splitlines()[0])
    parser.add_argument("case", help="CONFIG=FRAMSxHEIGHTxWIDTH, a config of scripts/vaes.py (wan2.1=9x480x832)")
    parser.add_argument("--variants", default="head,no-triton-softmax", help=f"comma-separated, of {sorted(VARIANTS)}")
    parser.add_argument("--timeout", type=float, default=240, help="seconds per variant")
    parser.add_argument("--json", default=None, help="append each variant's row here as it finishes")
    args = parser.parse_args(argv)
    config, _, size = args.case.partition("=")
    try:
        frames, height, width = (int(n) for n in size.split("x"))
    except ValueError:
        parser.error(f"case must be CONFIG=FRAMESxHEIGHTxWIDTH, got {args.case!r}")
    names = args.variants.split(",")
    if unknown := [n for n in names if n not in VARIANTS]:
        parser.error(f"unknown variants {unknown}; known: {sorted(VARIANTS)}")
    from torchax_vae.models import input_shape
    from vaes import meta_vae

    shape = list(input_shape(meta_vae(config), "decode", frames, height, width))
    failed = 0
    for name in names:
        row = probe(name, config, shape, args.timeout)
        failed += row["outcome"] != "finished"
        print(json.dumps(row), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(row) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        print(json.dumps(_worker(sys.argv[2], json.loads(sys.argv[3]))))
        sys.exit(0)
    sys.exit(main())
