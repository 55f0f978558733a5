"""One row of the accelerator table (docs/results/performance.md): a released size, timed against diffusers' PyTorch VAE.

Each case is one invocation, well inside the device tool's 10 minutes on an
H100, and runs every side in a fresh process (scripts/speed.py): diffusers'
PyTorch VAE eager, under `torch.compile`, and TorchaxVAE twice, with a new
cache folder (cold) and then with that folder (warm: a later process). The row
has the first call cold and warm (split into trace or load, compile, run), the
steady call (median), peak device memory of each side, max |Δ| and relative L2
against PyTorch, and MFU. The numerics are checked first (fp32: 1e-4 max |Δ|;
bf16: within 2x PyTorch bf16's own error each, so 4x between them, that error
measured on at most 9 frames of at most 480x720: speed.REFERENCE_LIMITS); a
failing row exits 1.

    python scripts/gpu_table.py --list
    python scripts/gpu_table.py cogvideox1.5-decode                 # on the GPU box (../shared/gpu/README.md)
    python scripts/gpu_table.py wan2.1-480p-decode --small          # the same sides at a small size and width (CPU)
    python scripts/gpu_table.py sana-decode --profile-first prof    # where a warm first call's seconds go
"""

import argparse
import dataclasses
import json
import sys

import speed
from bench import environment, first_call_line
from vaes import RELEASED

# The released sizes (vaes.RELEASED), bf16, decode and encode; CogVideoX also in fp32 at 9 frames.
CASES = {
    f"{name}-{kind}": speed.SpeedCase(config, kind, frames, height, width, dtype="bf16")
    for name, (config, frames, height, width) in RELEASED.items()
    for kind in ("decode", "encode")
}
CASES["cogvideox-480p-decode-fp32"] = speed.SpeedCase("official", "decode", 9, 480, 720, dtype="fp32")

# --small: the same family and path with a tiny model of its family, at a size a CPU runs in seconds (9x32x64, or
# what the family's tiny model takes: Mochi's 6x time, Allegro's one 24x128x128 tile, Qwen-Image's single images)
SMALL_CONFIGS = {
    "official": "tiny", "wan2.1": "wan-tiny", "wan2.2": "wan2.2-tiny", "qwenimage": "qwenimage-tiny",
    "hunyuanvideo": "hunyuan-tiny", "ltx091": "ltx091-tiny", "ltx2": "ltx2ts-tiny", "hunyuanvideo15": "hunyuan15-tiny",
    "mochi": "mochi-tiny", "cosmos": "cosmos-tiny", "magvit": "magvit-tiny", "allegro": "allegro-tiny",
    "qwenimage21": "qwenimage21-tiny", "minimaxh3": "minimaxh3-tiny", "kandinsky6-sr": "kandinsky6-sr-tiny",
    "sd1.5": "sd-tiny", "sdxl": "sd-tiny", "sd3": "flux-tiny", "flux": "flux-tiny",  # AutoencoderKL's images
    "flux2": "flux2-tiny", "sana": "dc-tiny", "hunyuanimage": "hunyuanimage-tiny",
    "taesd": "tiny-tiny", "taef1": "tiny-tiny", "svd": "svd-tiny",
    "asym-kl-x1.5": "asym-kl-tiny", "movq": "movq-tiny", "hunyuanimage-refiner": "hunyuanimage-refiner-tiny",
    "consistency": "consistency-tiny", "kvae": "kvae-tiny", "kvae-video": "kvae-video-tiny", "rae": "rae-tiny",
    "vidtok": "vidtok-tiny",
}
SMALL_SIZES = {"mochi-tiny": (7, 32, 64), "allegro-tiny": (24, 128, 128),
               "minimaxh3-tiny": (22, 32, 64)}  # (MiniMax H3 decodes 3 latent frames or more: 22 frames make 7)


def small(case: speed.SpeedCase) -> speed.SpeedCase:
    config = SMALL_CONFIGS[case.config]
    frames, height, width = SMALL_SIZES.get(config, (9 if case.frames > 1 else 1, 32, 64))
    return dataclasses.replace(case, config=config, frames=frames, height=height, width=width)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="gpu_table", description=__doc__.splitlines()[0])
    parser.add_argument("case", nargs="?", choices=sorted(CASES), help="which row (--list shows them)")
    parser.add_argument("--list", action="store_true", help="print the cases and exit")
    parser.add_argument("--small", action="store_true", help="the case at 9x32x64 with a small model of its family")
    parser.add_argument("--repeats", type=int, default=2, help="timed calls after the first (median)")
    parser.add_argument("--no-torch-compile", action="store_true", help="leave out the torch.compile side")
    parser.add_argument("--compile-timeout", type=float, default=None, metavar="S",
                        help="seconds the torch.compile side may take; past them its cell says so and the row goes on")
    parser.add_argument("--json", default=None, help="also append the row as a JSON line here")
    parser.add_argument("--profile-first", default=None, metavar="DIR",
                        help="the warm TorchaxVAE process's first call under JAX's profiler and cProfile, into DIR")
    args = parser.parse_args(argv)
    if args.list or not args.case:
        for name, case in CASES.items():
            print(f"{name}: {case.label}")
        return 0 if args.list else 2
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1 (a median of timed calls), got {args.repeats}")
    case = small(CASES[args.case]) if args.small else CASES[args.case]
    row = speed.compare(case, args.repeats, torch_compile=not args.no_torch_compile, profile_dir=args.profile_first,
                        compile_timeout=args.compile_timeout)
    env = environment()
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps({**row, "name": args.case, "environment": env}) + "\n")
    print(speed.markdown([row]))
    print(first_call_line(row))
    print(f"{row['label']}: TorchaxVAE at {row['ratio']:.2f}x PyTorch eager's steady speed; "
          f"max |Δ| {row['max_abs_diff']:.2e}, relative L2 {row['rel_l2']:.2e}"
          + ("" if row["numerics_ok"] else f": FAIL (tolerance {row['tolerance']:.2e})"))
    print("environment:", json.dumps(env))
    return 0 if row["numerics_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
