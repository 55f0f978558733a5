"""Plans of the released sizes for TPUs and GPUs, compiled offline on this machine (docs/guide/plan.md's tables).

Each row is `TorchaxVAE.plan` of one released size (vaes.RELEASED and RELEASED_SOUND: the pipelines' defaults), bf16,
on a target: whether it fits, the peak per chip, sharding efficiency, FLOPs, the roofline lower bound, the
programs and their compile seconds. Figures are compiled offline, not run on a TPU or GPU. TPU compiles of
released sizes take minutes each on 2 cores, hence a script, not a test.

    python scripts/plan_table.py --targets v6e-8,v5e-8 cogvideox-480p --kinds decode --json plans.jsonl
    python scripts/plan_table.py --targets h100,h100x2            # every released size, decode and encode
    python scripts/plan_table.py --list
"""

import argparse
import datetime
import json
import os
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # planning starts no backend of this machine
os.environ.setdefault("TORCHAX_VAE_CACHE_DIR", "off")

import torch  # noqa: E402

from vaes import RELEASED, RELEASED_SOUND, meta_vae  # noqa: E402


def row(case: str, kind: str, target: str, dp: int = 1, split: str | None = None, progress: bool = True,
        tiling: str = "auto") -> dict:
    from torchax_vae import TorchaxVAE
    from torchax_vae.models import input_shape

    if case in RELEASED_SOUND:  # the encode input ([B, C, samples], LTX-2's spectrogram) or the decode input
        config, encode_input, decode_input = RELEASED_SOUND[case]
        vae = TorchaxVAE(meta_vae(config), dtype=torch.bfloat16)
        shape = encode_input if kind == "encode" else decode_input
        if shape is None:
            raise ValueError(f"{case} has no {kind} at its pipeline's size (vaes.RELEASED_SOUND)")
        size = list(shape)
    else:
        config, frames, height, width = RELEASED[case]
        vae = TorchaxVAE(meta_vae(config), dtype=torch.bfloat16)
        size = [frames, height, width]
        shape = input_shape(vae, kind, frames, height, width)
    if split and hasattr(vae, "program_split"):
        vae.program_split = split
    vae.tiling_mode = tiling

    def observer(name, stats):
        if progress and stats is not None:
            print(f"  {case} {kind} {target}: {name} {stats.compile_seconds:.1f} s", file=sys.stderr, flush=True)

    start = time.perf_counter()
    plan = vae.plan(kind, shape, target, dp=dp, observer=observer)
    result = plan.to_json()
    result.update(case=case, config=config, video=size, dp=dp, split=split, tiling_mode=tiling,
                  wall_seconds=time.perf_counter() - start)
    return result


def max_temp(r: dict) -> int:
    """The largest program's XLA temp bytes per chip (what the 2-GPU criterion compares: docs/guide/plan.md)."""
    return max(p["temp_bytes"] for p in r["programs"])


def markdown(rows: list[dict]) -> str:
    gib = 2**30
    lines = ["| case | kind | target | mesh | programs (runs) | fits | peak GiB per chip | max temp GiB per chip | "
             "sharding efficiency | roofline s | compile s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        eff = "n/a" if r["sharding_efficiency"] is None else f"{r['sharding_efficiency']:.2f}" + (
            "" if r["yardstick"] == "one chip" else f" ({r['yardstick']})")
        mesh = "x".join(str(v) for v in r["mesh"].values())
        lines.append(f"| {r['case']} | {r['kind']} | {r['target']} | {mesh} | {len(r['programs'])} "
                     f"({sum(p['runs'] for p in r['programs'])}) | {'yes' if r['fits'] else 'NO'} | "
                     f"{r['peak_bytes_per_chip'] / gib:.2f} | {max_temp(r) / gib:.2f} | {eff} | "
                     f"{r['roofline_seconds']:.3f} | "
                     f"{r['compile_seconds']:.0f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="plan_table", description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="released sizes (default: all; --list)")
    parser.add_argument("--targets", default="v6e-8", help="comma-separated targets (default: v6e-8)")
    parser.add_argument("--kinds", default="decode,encode")
    parser.add_argument("--dp", type=int, default=1)
    parser.add_argument("--program-split", default=None, choices=("batch", "layer", "auto"),
                        help="CogVideoX's program split (default: the adapter's, 'auto')")
    parser.add_argument("--tiling", default="auto", choices=("auto", "on", "off"),
                        help="tiling mode (default: auto, which tiles where the untiled programs would not fit)")
    parser.add_argument("--json", default=None, help="append each row as a JSON line here as it is done")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(f"{name}: {config} {frames}x{height}x{width}" for name, (config, frames, height, width)
                        in RELEASED.items()))
        print("\n".join(f"{name}: {config} " + ", ".join(f"{kind} {'x'.join(map(str, shape))}" for kind, shape
                                                       in (("encode", encode), ("decode", decode)) if shape)
                        for name, (config, encode, decode) in RELEASED_SOUND.items()))
        return 0
    known = {**RELEASED, **RELEASED_SOUND}
    unknown = [c for c in args.cases if c not in known]
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {sorted(known)}")
    from bench import environment

    env = environment() | {"date": datetime.date.today().isoformat(), "command": " ".join(sys.argv)}
    rows = []
    for case in args.cases or list(known):
        for kind in args.kinds.split(","):
            if case in RELEASED_SOUND and RELEASED_SOUND[case][1 if kind == "encode" else 2] is None:
                continue  # (a vocoder encodes nothing; Kandinsky 6's pipelines never encode sound)
            for target in args.targets.split(","):
                r = row(case, kind, target, args.dp, args.program_split, tiling=args.tiling)
                rows.append(r)
                if args.json:
                    with open(args.json, "a") as f:
                        f.write(json.dumps(r | {"environment": env}) + "\n")
                print(markdown([r]).splitlines()[-1], flush=True)
    print(markdown(rows))
    print("compiled offline, not run on a TPU/GPU;", json.dumps(env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
