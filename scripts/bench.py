"""Compile-only measurements: programs, compile seconds and XLA's memory figures for a call, without running it.

Each case runs in its own subprocess (`python scripts/bench.py --worker`),
so that XLA flags such as the CPU scheduler can differ between runs and no
compiled program is shared between cases. Two XLA:CPU schedulers are reported:
the default, and `--xla_cpu_enable_concurrency_optimized_scheduler=false`
("concurrency_off"), which is said to schedule for memory as accelerators do;
with jaxlib 0.10.2 and this package's graph it reports more temp memory, not
less (docs/design/tiling.md).
With `--devices 1,2,4,8` the cases are one call compiled for a ('dp', 'tp')
mesh of that many devices (virtual CPU devices,
--xla_force_host_platform_device_count, in the worker): per-device memory as
XLA plans it. Virtual devices share this machine's cores, so their compile
and run times say nothing about real accelerators.

    python scripts/bench.py                      # official config, 49x480x720, both XLA:CPU schedulers
    python scripts/bench.py --config tiny --frames 9 --size 64x96 --tile 32x48
    python scripts/bench.py --memory --config wan2.1          # Wan's decoder chunk programs at 480x832
    python scripts/bench.py --speed                           # timed against diffusers' PyTorch VAE (speed.py)
"""

import argparse
import dataclasses
import json
import os
import platform
import subprocess
import sys
import time

from vaes import CONFIGS, MODELS, configure, input_shape, random_vae

SCHEDULERS = {
    "default": "",
    "concurrency_off": "--xla_cpu_enable_concurrency_optimized_scheduler=false",
}


@dataclasses.dataclass(frozen=True)
class Case:
    """A decode or encode of one video size, compiled only."""

    config: str  # a name in scripts/vaes.py: CONFIGS (CogVideoX) or WAN_CONFIGS
    kind: str  # "decode" or "encode"
    frames: int  # video frames (decode: of the output)
    height: int  # video height and width in pixels
    width: int
    tiling: str = "off"  # CogVideoX: TorchaxVAE.tiling_mode; Wan: "on" or "off"
    tile: tuple[int, int] | None = None  # tile_sample_min_height/width; None: diffusers' defaults
    dtype: str = "fp32"
    devices: int = 1  # > 1: a (1, devices) mesh of virtual devices
    split: str = "auto"  # TorchaxVAE.program_split

    @property
    def label(self) -> str:
        tile = f" tiles {self.tile[0]}x{self.tile[1]}" if self.tile else ""
        mesh = f" on {self.devices} devices" if self.devices > 1 else ""
        split = "" if self.split == "auto" else f" {self.split} programs"
        return f"{self.config} {self.kind} {self.frames}x{self.height}x{self.width} tiling {self.tiling}{tile} {self.dtype}{mesh}{split}"


def compile_only(case: Case) -> dict:
    """Compiles (in this process) every program the case's call needs; what XLA says about them."""
    import jax

    from torchax_vae import cache
    from torchax_vae.engine import process
    from torchax_vae import make_mesh
    from torchax_vae.facade.vae import TorchaxVAE

    process.start()  # before the device count below: quiet where no accelerator is visible
    cache.enable(cache.resolve())  # run_case sets the folder: a new one (--cache-start), else off
    if len(jax.devices()) != case.devices:
        raise RuntimeError(f"case wants {case.devices} devices, JAX has {len(jax.devices())}")
    mesh = make_mesh() if case.devices > 1 else None
    vae = TorchaxVAE(random_vae(case.config), dtype=case.dtype, mesh=mesh)
    configure(vae, case)
    shape = input_shape(case, vae)
    start = time.perf_counter()
    programs = vae.precompile(case.kind, shape)
    return {
        "case": dataclasses.asdict(case),
        "label": case.label,
        "input_shape": shape,
        "wall_seconds": time.perf_counter() - start,
        "programs": programs,
        "compile_seconds": sum(p["compile_seconds"] for p in programs),
        "lower_seconds": sum(p["lower_seconds"] for p in programs),
        "max_temp_bytes": max(p["temp_bytes"] for p in programs),  # per device
        "max_argument_bytes": max(p["argument_bytes"] for p in programs),
        # the largest program with its inputs and outputs (for "layer" programs: the hand-over between them)
        "max_live_bytes": max(p["temp_bytes"] + p["argument_bytes"] + p["output_bytes"] for p in programs),
        "flops": sum(p["flops"] for p in programs),
    }


def run_case(case: Case, scheduler: str = "default", timeout: float = 1800, cache_dir=None) -> dict:
    """compile_only(case) in a fresh subprocess with the given XLA:CPU scheduler (and compilation cache)."""
    env = dict(os.environ)
    env["TORCHAX_VAE_CACHE_DIR"] = str(cache_dir) if cache_dir is not None else "off"  # never the user's own
    devices = f"--xla_force_host_platform_device_count={case.devices}" if case.devices > 1 else ""
    env["XLA_FLAGS"] = " ".join(filter(None, [env.get("XLA_FLAGS", ""), SCHEDULERS[scheduler], devices]))
    result = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(dataclasses.asdict(case))],
        capture_output=True, text=True, env=env, timeout=timeout,
    )
    if result.returncode != 0:
        raise RuntimeError(f"bench worker for {case.label} failed:\n{result.stderr[-4000:]}")
    row = json.loads(result.stdout.strip().splitlines()[-1])
    row["scheduler"] = scheduler
    return row


def tiling_cases(config: str = "official", frames: int = 49, size=(480, 720), tile=None) -> list[Case]:
    """What tiling buys: the tiled video, the same untiled, one tile's worth untiled, and a shorter video."""
    height, width = size
    tile_size = tile or (height // 2, width // 2)  # diffusers' default tiles are half the default video
    return [
        Case(config, "decode", frames, *tile_size, tiling="off", tile=tile),
        Case(config, "decode", frames, height, width, tiling="on", tile=tile),
        Case(config, "decode", 13, height, width, tiling="on", tile=tile),
        Case(config, "decode", frames, height, width, tiling="off", tile=tile),
    ]


def memory_cases(config: str = "official", size=None, frames=None) -> list[Case]:
    """CogVideoX: one untiled decoder frame batch (3 latent frames -> 9 frames, default 480x720) as one program,
    and as one program per layer. The others: the decode of 2 latent frames -> 5 frames (`frames`; 1 for an
    image), default 480x832 (Wan's 480p): Wan's and Qwen-Image's two chunk programs, HunyuanVideo's one call."""
    if is_wan(config):
        return [Case(config, "decode", frames or 5, *(size or (480, 832)))]
    return [Case(config, "decode", 9, *(size or (480, 720)), tiling="off", split=split) for split in ("batch", "layer")]


def is_wan(config: str) -> bool:
    """Whether the config is another family's than CogVideoX's (Wan, Qwen-Image, HunyuanVideo): no program split."""
    return config in MODELS and config not in CONFIGS


def device_cases(config: str, frames: int, size, devices=(1, 2, 4, 8)) -> list[Case]:
    """One decode and one encode of a video, on each device count (1: no mesh)."""
    return [Case(config, kind, frames, *size, devices=n) for kind in ("decode", "encode") for n in devices]


def environment() -> dict:
    import diffusers
    import jax
    import torch

    from torchax_vae import patches
    from torchax_vae.engine import process

    process.start()  # JAX's platforms first: a machine without an accelerator stays quiet whatever is installed
    torchax = patches.import_torchax()
    return {
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "device": str(jax.devices()[0].device_kind),
        "jax": jax.__version__,
        "torch": torch.__version__,
        "torchax": getattr(torchax, "__version__", "?"),
        "diffusers": diffusers.__version__,
        **({"XLA_FLAGS": os.environ["XLA_FLAGS"]} if os.environ.get("XLA_FLAGS") else {}),  # a row's compiler flags
    }


def markdown(rows: list[dict]) -> str:
    lines = [
        "| case | scheduler | programs | compile s (sum) | lower s (sum) | max temp GB per program and device "
        "| max temp + arguments + outputs GB |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['label']} | {r['scheduler']} | {len(r['programs'])} | {r['compile_seconds']:.2f} | "
            f"{r['lower_seconds']:.2f} | {r['max_temp_bytes'] / 1e9:.3f} | {r['max_live_bytes'] / 1e9:.3f} |"
        )
    return "\n".join(lines)


def cache_start(case: Case, json_path=None) -> int:
    """The same call compiled in two fresh processes sharing a new persistent cache: cold, then cached."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="torchax-vae-cache-") as cache_dir:
        rows = [run_case(case, cache_dir=cache_dir) for _ in range(2)]
    for row, start in zip(rows, ("cold", "cached")):
        row["start"] = start
        print(json.dumps({k: v for k, v in row.items() if k != "programs"}), flush=True)
    if json_path:
        env = environment()
        with open(json_path, "w") as f:
            for row in rows:
                f.write(json.dumps({**row, "environment": env}) + "\n")
    cold, cached = rows
    print(
        f"{case.label}: {len(cold['programs'])} programs; XLA compile {cold['compile_seconds']:.2f} s cold, "
        f"{cached['compile_seconds']:.2f} s from the cache; lowering through torchax {cold['lower_seconds']:.2f} s "
        f"and {cached['lower_seconds']:.2f} s (not cached); whole precompile {cold['wall_seconds']:.2f} s -> "
        f"{cached['wall_seconds']:.2f} s"
    )
    return 0


def first_call_line(row: dict) -> str:
    """TorchaxVAE's first call in a new process, cold and warm, against the target of issue 19."""
    cold, warm = row["torchax"], row["torchax_warm"]
    wf = warm["first_call"]
    met = "met" if row["warm_target_met"] else "NOT met"
    return (
        f"{row['label']}: first call {cold['cold_seconds']:.2f} s cold, {warm['cold_seconds']:.2f} s warm "
        f"({wf['from_store']} of {wf['programs']} programs from the store; trace/load {wf['trace_lower_seconds']:.2f} s, "
        f"compile {wf['compile_seconds']:.2f} s, run {wf['run_seconds']:.2f} s); steady {cold['median_seconds']:.2f} s; "
        f"target 1.5 x steady + 1 s = {row['warm_target_seconds']:.2f} s: {met}"
    )


def speed_main(args) -> int:
    """--speed: both sides of each case, a markdown table, and optionally the convolution profile."""
    import speed

    if args.frames or args.size or args.config != "official":
        size = tuple(int(n) for n in (args.size or "64x96").split("x"))
        cases = [speed.SpeedCase(args.config, kind, args.frames or 9, *size) for kind in ("decode", "encode")]
    else:
        cases = speed.MAIN_CASES if args.main else speed.default_cases(long=args.long)
    env = environment()
    rows = []
    for case in cases:
        row = speed.compare(case, args.repeats, torch_compile=args.torch_compile)
        rows.append(row)
        print(json.dumps(row), flush=True)
    profiles = [speed.conv_profile(case, args.repeats) for case in cases[:2]] if args.profile else []
    op_profiles = [speed.run_op_profile(case) for case in cases[:2]] if args.profile else []
    if args.json:
        with open(args.json, "w") as f:
            for record in rows + profiles + op_profiles:
                f.write(json.dumps({**record, "environment": env}) + "\n")
    print()
    print(speed.markdown(rows))
    print()
    for row in rows:
        print(f"{row['label']}: TorchaxVAE runs at {row['ratio']:.2f}x PyTorch's speed (median of {args.repeats})")
        print(first_call_line(row))
    for profile, row in zip(profiles, rows):
        print(
            f"{profile['case']}: its {sum(c['count'] for c in profile['convs'])} convolutions timed alone take "
            f"{profile['torch_seconds']:.2f} s in PyTorch, {profile['xla_seconds']:.2f} s in XLA as torchax lowers "
            f"them, {profile['xla_by_frames_seconds']:.2f} s by frames (torchax_vae/patches/frame_conv.py); the whole call "
            f"{row['torch']['median_seconds']:.2f} s and {row['torchax']['median_seconds']:.2f} s"
        )
        for c in sorted(profile["convs"], key=lambda c: -c["count"] * c["xla_seconds"]):
            rates = "/".join(f"{c['gflop'] / c[k]:.0f}" for k in ("torch_seconds", "xla_seconds", "xla_by_frames_seconds"))
            print(
                f"  {c['count']:3d} x conv {c['input']} * {c['weight']}: {c['gflop']:.2f} GFLOP; ms PyTorch "
                f"{c['torch_seconds'] * 1e3:.1f}, XLA {c['xla_seconds'] * 1e3:.1f}, by frames "
                f"{c['xla_by_frames_seconds'] * 1e3:.1f}; GFLOP/s {rates}"
            )
    for profile in op_profiles:
        top = ", ".join(f"{o['op']} {o['seconds']:.2f} s ({o['count']})" for o in profile["ops"][:6])
        print(f"{profile['case']}: one traced call {profile['seconds']:.2f} s; XLA ops by kind: {top}")
    print("environment:", json.dumps(env))
    return 0 if all(row["numerics_ok"] for row in rows) else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bench", description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="official", help="model config (scripts/vaes.py: MODELS)")
    parser.add_argument("--frames", type=int, default=None, help="video frames (default 49; --speed: its case list)")
    parser.add_argument("--size", default=None, help="video HEIGHTxWIDTH (default 480x720; --speed: its case list)")
    parser.add_argument("--tile", default=None, help="tile HEIGHTxWIDTH (default: half the size)")
    parser.add_argument("--schedulers", default="default,concurrency_off", help=f"comma list of {sorted(SCHEDULERS)}")
    parser.add_argument("--devices", default=None, help="comma list of device counts: memory scaling over a mesh instead")
    parser.add_argument("--memory", action="store_true",
                        help="instead: CogVideoX: one untiled decoder frame batch (9 frames at --size, default 480x720), "
                             "one program vs one per layer; Wan: the decoder's chunk programs (default 480x832)")
    parser.add_argument("--cache-start", action="store_true",
                        help="instead: the untiled decode twice in fresh processes, cold and from a new compilation cache")
    parser.add_argument("--speed", action="store_true",
                        help="instead: time diffusers' PyTorch VAE and TorchaxVAE side by side (scripts/speed.py)")
    parser.add_argument("--main", action="store_true", help="--speed: only the main case (official, 9x64x96 fp32)")
    parser.add_argument("--long", action="store_true", help="--speed: also 49 frames and 240x360 (an hour on 2 cores)")
    parser.add_argument("--profile", action="store_true", help="--speed: also time each convolution alone, both sides")
    parser.add_argument("--torch-compile", action="store_true",
                        help="--speed: also diffusers' model under torch.compile (its encoder and decoder)")
    parser.add_argument("--repeats", type=int, default=3, help="--speed: timed calls after the first (median)")
    parser.add_argument("--json", default=None, help="also write JSON lines here")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        fields = json.loads(args.worker)
        fields["tile"] = tuple(fields["tile"]) if fields["tile"] else None
        print(json.dumps(compile_only(Case(**fields))))
        return 0
    if args.speed:
        if args.repeats < 1:
            parser.error(f"--repeats must be at least 1 (a median of timed calls), got {args.repeats}")
        return speed_main(args)
    frames_given, args.frames = args.frames, args.frames or 49
    size = tuple(int(n) for n in args.size.split("x")) if args.size else None
    tile = tuple(int(n) for n in args.tile.split("x")) if args.tile else None
    if args.cache_start:
        return cache_start(Case(args.config, "decode", args.frames, *(size or (480, 720))), args.json)
    devices = [int(n) for n in args.devices.split(",")] if args.devices else None
    if devices:
        cases = device_cases(args.config, args.frames, size or (480, 720), devices)
    elif args.memory:
        cases = memory_cases(args.config, size, frames_given)
    else:
        cases = tiling_cases(args.config, args.frames, size or (480, 720), tile)
    schedulers = args.schedulers.split(",")
    by_scheduler = {}
    for scheduler in schedulers:
        by_scheduler[scheduler] = []
        for case in cases:
            row = run_case(case, scheduler)
            by_scheduler[scheduler].append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "programs"}), flush=True)
    rows = [row for scheduler in schedulers for row in by_scheduler[scheduler]]
    env = environment()
    if args.json:
        with open(args.json, "w") as f:
            for row in rows:
                f.write(json.dumps({**row, "environment": env}) + "\n")
    print()
    print(markdown(rows))
    print()
    for scheduler in schedulers:
        if args.memory and is_wan(args.config):
            for r in by_scheduler[scheduler]:
                for p in r["programs"]:
                    print(f"{scheduler} scheduler: {r['label']}: program {p['name']} (input {p['input_shapes'][0]}): "
                          f"temp {p['temp_bytes'] / 1e6:.1f} MB, compile {p['compile_seconds']:.2f} s")
            continue
        if args.memory:
            batch, layer = by_scheduler[scheduler]
            print(
                f"{scheduler} scheduler: {layer['label']}: max temp per program {layer['max_temp_bytes'] / 1e9:.3f} GB = "
                f"{layer['max_temp_bytes'] / batch['max_temp_bytes']:.3f}x one program per batch "
                f"({batch['max_temp_bytes'] / 1e9:.3f} GB)"
            )
            continue
        if devices:
            for r in by_scheduler[scheduler]:
                base = next(b for b in by_scheduler[scheduler] if b["case"]["kind"] == r["case"]["kind"])
                print(
                    f"{scheduler} scheduler: {r['label']}: temp per device {r['max_temp_bytes'] / 1e9:.3f} GB = "
                    f"{r['max_temp_bytes'] / base['max_temp_bytes']:.3f}x {base['case']['devices']} device(s)"
                )
            continue
        one, tiled = by_scheduler[scheduler][:2]  # tiling_cases: one tile's worth untiled, then the tiled video
        print(
            f"{scheduler} scheduler: tiled {tiled['label']} compiles {len(tiled['programs'])} programs in "
            f"{tiled['compile_seconds']:.2f} s = {tiled['compile_seconds'] / one['compile_seconds']:.2f}x the untiled "
            f"call at tile size ({len(one['programs'])} programs, {one['compile_seconds']:.2f} s)"
        )
    print("environment:", json.dumps(env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
