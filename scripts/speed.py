"""Timed side by side: diffusers' PyTorch VAE and TorchaxVAE on the same calls, in one invocation.

For each case, each side runs in its own fresh subprocess (`python
scripts/speed.py --worker ...`), so its peak RSS is its own. A side builds the
same seeded model and input, times a first call (TorchaxVAE: tracing and XLA
compilation included; PyTorch: its first-call overhead), then the median of
`repeats` further calls (each returns a CPU torch tensor, so it has finished),
and writes its output for the numerics check, which comes first: a case whose
outputs disagree is marked FAIL and makes the command exit 1.

Also reported: XLA's FLOPs of the programs a steady call executed and its temp
memory (`compile_stats()`), and the analytic FLOPs of the model's convolutions
(2 x output elements x input channels x kernel volume, counted with forward
hooks on the PyTorch model), so achieved GFLOP/s and graph overhead show.

Any JAX backend: the PyTorch side runs on CUDA where torch has it (else CPU),
and waits with `torch.cuda.synchronize()`; TorchaxVAE gets the same torch
input (a CUDA tensor reaches JAX's GPU through DLPack) and its results have
been waited for (`block_until_ready`) before they are handed back. On an
accelerator each side also reports its peak device memory, and MFU: the
model's convolution FLOPs per second over the device's peak (`PEAK_TFLOPS`:
bf16 dense; fp32 against TF32, which both frameworks use for fp32
convolutions on NVIDIA GPUs by default).

`conv_profile` times every convolution of a call on its own, once per distinct
shape, in both frameworks: where the time of a call goes.
`scripts/bench.py --speed` is the command line.
"""

import dataclasses
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from vaes import configure, decode_args, input_shape, meta_vae, random_vae

# Dense peak TFLOP/s per device by dtype, from the vendors' data sheets; matched against jax's device_kind.
PEAK_TFLOPS = {
    "H100": {"bf16": 989.0, "fp32": 494.0},  # SXM; fp32 as TF32
    "H200": {"bf16": 989.0, "fp32": 494.0},  # the H100's compute with more, faster memory
    "A100": {"bf16": 312.0, "fp32": 156.0},
    "TPU v4": {"bf16": 275.0, "fp32": 275.0},  # TPUs run fp32 convolutions in bf16 passes by default
    "TPU v5 lite": {"bf16": 197.0, "fp32": 197.0},
    "TPU v5": {"bf16": 459.0, "fp32": 459.0},
    "TPU v6": {"bf16": 918.0, "fp32": 918.0},
}


def peak_flops(device_kind: str, dtype: str) -> float | None:
    """The device's peak FLOP/s for `dtype`, or None where it is not in PEAK_TFLOPS (CPUs)."""
    for name in sorted(PEAK_TFLOPS, key=len, reverse=True):  # "TPU v5 lite" before "TPU v5"
        if name in device_kind:
            return PEAK_TFLOPS[name][dtype] * 1e12
    return None


def torch_device() -> str:
    """Where the PyTorch side runs: CUDA if torch has it."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


# bf16 outputs must stay within this multiple of PyTorch bf16's own error against PyTorch fp32 (tests/test_parity.py).
BF16_ERROR_RATIO = 2.0
FP32_TOLERANCE = 1e-4


@dataclasses.dataclass(frozen=True)
class SpeedCase:
    """One encode or decode call of a video size, timed on both sides."""

    config: str  # a name in scripts/vaes.py: CONFIGS (CogVideoX) or WAN_CONFIGS
    kind: str  # "decode" or "encode"
    frames: int  # video frames (decode: of the output)
    height: int
    width: int
    dtype: str = "fp32"
    tile: tuple[int, int] | None = None  # tiling on, with these tile_sample_min_height/width (both sides)
    split: str = "auto"  # CogVideoX's TorchaxVAE.program_split ("auto": one program per layer on CPU)

    @property
    def label(self) -> str:
        tile = f" tiled {self.tile[0]}x{self.tile[1]}" if self.tile else ""
        split = "" if self.split == "auto" else f" {self.split} programs"
        return f"{self.config} {self.kind} {self.frames}x{self.height}x{self.width}{tile} {self.dtype}{split}"


MAIN_CASES = [SpeedCase("official", "decode", 9, 64, 96), SpeedCase("official", "encode", 9, 64, 96)]


def default_cases(long: bool = False) -> list[SpeedCase]:
    """The main case, a longer video, a tiled larger frame, bf16, the main case as one program per frame batch;
    `long` adds 49 frames and 240x360 (slow on CPU)."""
    both = ("decode", "encode")
    cases = list(MAIN_CASES)
    cases += [SpeedCase("official", kind, 17, 64, 96) for kind in both]
    cases += [SpeedCase("official", kind, 9, 96, 144, tile=(64, 96)) for kind in both]  # 2x2 tiles
    cases += [SpeedCase("official", kind, 9, 64, 96, dtype="bf16") for kind in both]
    cases += [SpeedCase("official", kind, 9, 64, 96, split="batch") for kind in both]
    cases += [SpeedCase("wan2.1", kind, 9, 64, 96) for kind in both]  # Wan 2.1's architecture, same video
    if long:
        cases += [SpeedCase("official", kind, 49, 64, 96) for kind in both]
        cases += [SpeedCase("official", kind, 9, 240, 360) for kind in both]
    return cases


def make_input(case: SpeedCase, vae):
    """The seeded encode video or decode latents of the case for diffusers' `vae`, fp32 [1, C, F, H, W]."""
    import torch

    shape = input_shape(case, vae)
    return torch.randn(shape, generator=torch.Generator().manual_seed(case.frames))


class ConvCounter:
    """Forward hooks counting the FLOPs of every nn.Conv2d/Conv3d call, and their signatures."""

    def __init__(self, model):
        from torch import nn

        self.flops = 0
        self.calls: dict[tuple, int] = {}  # (input shape, weight shape, stride, padding, dtype) -> count
        self._handles = [
            m.register_forward_hook(self._hook) for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Conv3d))
        ]

    def _hook(self, module, args, output):
        x = args[0]
        kernel = int(np.prod(module.kernel_size))
        self.flops += 2 * output.numel() * (module.in_channels // module.groups) * kernel
        key = (tuple(x.shape), tuple(module.weight.shape), tuple(module.stride), tuple(module.padding), str(x.dtype))
        self.calls[key] = self.calls.get(key, 0) + 1

    def remove(self):
        for handle in self._handles:
            handle.remove()


def _peak_rss_bytes() -> int:
    """This process's peak resident memory since it started.

    VmHWM of /proc/self/status (Linux) belongs to the address space exec
    created; getrusage's ru_maxrss would carry over the parent's peak from fork.
    """
    from torchax_vae.engine.memory import proc_bytes

    peak = proc_bytes("/proc/self/status", "VmHWM")
    if peak is not None:
        return peak
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


SIDES = ("torch", "torch.compile", "torchax")  # "torchax" runs twice: cold (new cache), then warm (that cache)


def _side(side: str, case: SpeedCase):
    """(the seeded PyTorch model, the side's model, a call of the case returning a tensor)."""
    import torch

    from torchax_vae import TorchaxVAE

    vae = random_vae(case.config)
    device = torch_device()
    x = make_input(case, vae).to(device)  # the pipeline's latents are where its transformer ran
    dtype = torch.bfloat16 if case.dtype == "bf16" else torch.float32
    x = x.to(dtype)  # both sides take the model's dtype, as pipelines cast latents to vae.dtype
    if side in ("torch", "torch.compile"):
        model = vae.to(device=device, dtype=dtype)
        if side == "torch.compile":  # what a GPU user would try instead: the encoder and decoder compiled in place
            model.encoder.compile()
            model.decoder.compile()
    else:
        model = TorchaxVAE(vae, dtype=dtype)
    configure(model, case)  # tiling only where the case tiles, on both sides

    def call():
        if case.kind == "decode":
            out = model.decode(x, *decode_args(vae, x.shape[0], x.dtype)).sample
        else:
            out = encoded(model, x)
        if out.is_cuda:
            torch.cuda.synchronize()  # TorchaxVAE's results were ready before the hand-over
        return out

    return vae, model, call


def _profiled(call, profile_dir: str):
    """call() under JAX's profiler (device kernels and XLA's host work) and cProfile (the Python side), both into
    profile_dir: where a first call's seconds go when they are neither tracing nor compiling."""
    import cProfile

    import jax

    os.makedirs(profile_dir, exist_ok=True)
    profile = cProfile.Profile()
    with jax.profiler.trace(profile_dir):
        profile.enable()
        try:
            return call()
        finally:
            profile.disable()
            profile.dump_stats(os.path.join(profile_dir, "first_call.prof"))


def measure(side: str, case: SpeedCase, repeats: int, out_path: str, profile_dir: str | None = None) -> dict:
    """In this process: one side's cold and steady seconds for the case; its output goes to out_path (.npy).
    profile_dir: the first call runs profiled (_profiled), its seconds then include the profilers' cost."""
    import torch

    start = time.perf_counter()
    vae, model, call = _side(side, case)
    row = {"side": side, "build_seconds": time.perf_counter() - start}
    with torch.no_grad():
        counter = ConvCounter(vae) if side == "torch" else None
        start = time.perf_counter()
        out = _profiled(call, profile_dir) if profile_dir else call()
        row["cold_seconds"] = time.perf_counter() - start
        row["profiled"] = bool(profile_dir)
        if counter is not None:
            row["conv_flops"] = counter.flops
            counter.remove()
        if side == "torchax":  # the first call's seconds by kind: trace and lower (or load), XLA compile, the rest
            first = model.compile_stats()
            row["first_call"] = {
                "trace_lower_seconds": sum(s["lower_seconds"] for s in first),
                "compile_seconds": sum(s["compile_seconds"] for s in first),
                "programs": len(first),
                "from_store": sum(s["from_store"] for s in first),
            }
            row["first_call"]["run_seconds"] = (
                row["cold_seconds"] - row["first_call"]["trace_lower_seconds"] - row["first_call"]["compile_seconds"]
            )
        seconds = []
        for i in range(repeats):
            if side == "torchax" and i == 0:
                with model._engine.programs.executions() as runs:
                    start = time.perf_counter()
                    call()
                    seconds.append(time.perf_counter() - start)
                row["xla_flops"] = sum(s.flops for s in runs)
                row["programs_run"] = len(runs)
                continue
            start = time.perf_counter()
            call()
            seconds.append(time.perf_counter() - start)
    row["seconds"] = seconds
    row["median_seconds"] = statistics.median(seconds)
    row["peak_rss_bytes"] = _peak_rss_bytes()
    row["peak_device_bytes"] = _peak_device_bytes(side)
    if side == "torchax":
        stats = model.compile_stats()
        row["compile_seconds"] = sum(s["compile_seconds"] + s["lower_seconds"] for s in stats)
        row["max_temp_bytes"] = max(s["temp_bytes"] for s in stats)
        row["programs"] = len(stats)
    np.save(out_path, out.float().cpu().numpy())
    return row


def _peak_device_bytes(side: str) -> int | None:
    """The side's peak accelerator memory, or None on CPU."""
    import jax
    import torch

    if side in ("torch", "torch.compile"):  # (JAX's statistics read 0 there: it allocated nothing)
        return torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None
    stats = jax.devices()[0].memory_stats() if jax.default_backend() != "cpu" else None
    return (stats or {}).get("peak_bytes_in_use")


def _distinct_lines(text: str, limit: int = 6000) -> str:
    """A worker's stderr with repeated lines dropped, its Python traceback first: a CUDA error is logged once per
    buffer, module and stream freed after it (hundreds of lines), which would push the traceback that names the
    failing call out of any tail."""
    lines = text.splitlines()
    start = max((i for i, line in enumerate(lines) if line.startswith("Traceback")), default=len(lines))
    end = next((i + 1 for i in range(start + 1, len(lines)) if lines[i] and not lines[i][0].isspace()), len(lines))
    seen, kept = set(), []
    for line in lines[:start] + lines[end:]:
        key = re.sub(r"0x[0-9a-f]+|^[EWI]\d{4} [\d:.]+ +\d+ ", "", line)  # glog time stamps, thread ids, addresses
        if key not in seen:
            seen.add(key)
            kept.append(line)
    return ("\n".join(lines[start:end]) + "\n" + "\n".join(kept)[-limit:]).strip()


def run_side(side: str, case: SpeedCase, repeats: int, out_path: str, timeout: float = 3600, cache_dir=None,
             profile_dir=None) -> dict:
    """measure() in a fresh subprocess; TorchaxVAE's caches in cache_dir (None: off, never the user's own);
    profile_dir: its first call profiled there."""
    env = dict(os.environ)
    env["TORCHAX_VAE_CACHE_DIR"] = str(cache_dir) if cache_dir else "off"
    result = subprocess.run(
        [sys.executable, __file__, "--worker", side, json.dumps(dataclasses.asdict(case)),
         str(repeats), out_path, *([profile_dir] if profile_dir else [])],
        capture_output=True, text=True, timeout=timeout, env=env,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{side} worker for {case.label} failed (exit {result.returncode}):\n{_distinct_lines(result.stderr)}")
    return json.loads(result.stdout.strip().splitlines()[-1])


# The clip on which PyTorch bf16's own error is measured: at most 9 frames of at most 480x720 (an fp32
# decode of the released 768x1360 size would not fit an 80 GB GPU; the error depends little on the size).
REFERENCE_LIMITS = (9, 480, 720)


def reference_case(case: SpeedCase) -> SpeedCase:
    """case cut to REFERENCE_LIMITS, its height and width rounded down to whole latents of its family (720 is not a
    multiple of HunyuanImage's or the DC-AE's 32: their encoders refuse it)."""
    from torchax_vae.models import wrapper_for

    vae = meta_vae(case.config)
    ratio = wrapper_for(vae).family(vae).spatial_compression_ratio
    frames, height, width = (min(a, b) for a, b in zip((case.frames, case.height, case.width), REFERENCE_LIMITS))
    height, width = (max(ratio, size - size % ratio) for size in (height, width))
    return dataclasses.replace(case, frames=frames, height=height, width=width)


def _bf16_reference_error(case: SpeedCase) -> float:
    """PyTorch bf16's own max |Δ| against PyTorch fp32, on the torch device, on the case's clip cut to REFERENCE_LIMITS."""
    import torch

    ref = reference_case(case)
    device = torch_device()
    vae = random_vae(ref.config).to(device)
    x = make_input(ref, vae).to(device)
    with torch.no_grad():
        if ref.kind == "decode":
            fp32 = vae.decode(x, *decode_args(vae, x.shape[0])).sample
            bf16 = vae.to(torch.bfloat16).decode(x.bfloat16(), *decode_args(vae, x.shape[0])).sample
        else:
            fp32 = encoded(vae, x)
            bf16 = encoded(vae.to(torch.bfloat16), x.bfloat16())
    return (fp32 - bf16.float()).abs().max().item()


def encoded(model, x):
    """The latents `model.encode` gives: the posterior's mode, or the latents of the classes without a posterior
    (AutoencoderDC's `latent`, AutoencoderTiny's `latents`)."""
    out = model.encode(x)
    if hasattr(out, "latent_dist"):
        return out.latent_dist.mode()
    return out.latent if hasattr(out, "latent") else out.latents


def compare(case: SpeedCase, repeats: int = 3, torch_compile: bool = False, profile_dir: str | None = None,
            compile_timeout: float | None = None) -> dict:
    """Both sides of one case, numerics checked; one row.

    TorchaxVAE runs twice, each in a fresh process: with a new, empty cache folder
    ("cold": tracing and compiling everything), then with that folder ("warm": what
    a new process finds after one earlier run). torch_compile adds diffusers' model
    under `torch.compile` as a further side; compile_timeout: seconds that side may
    take in all (its process, the compile, the timed calls), past which the row
    records {"timed_out_seconds": compile_timeout} for it and goes on with the
    others. profile_dir: the warm process's first call runs under JAX's profiler
    and cProfile, into that folder.
    """
    names = ("torch", "torch.compile", "torchax", "torchax_warm") if torch_compile else ("torch", "torchax", "torchax_warm")
    with tempfile.TemporaryDirectory(prefix="torchax-vae-speed-") as tmp:
        paths = {name: os.path.join(tmp, f"{name}.npy") for name in names}
        cache_dir = os.path.join(tmp, "cache")
        sides = {}
        for name in names:
            side = name.removesuffix("_warm")
            limit = {"timeout": compile_timeout} if name == "torch.compile" and compile_timeout else {}
            try:
                sides[name] = run_side(side, case, repeats, paths[name], cache_dir=cache_dir if side == "torchax" else None,
                                       profile_dir=profile_dir if name == "torchax_warm" else None, **limit)
            except subprocess.TimeoutExpired:  # (run() has killed the process, and with it its device memory)
                sides[name] = {"timed_out_seconds": compile_timeout}
        outputs = {name: np.load(path) for name, path in paths.items() if "timed_out_seconds" not in sides[name]}
    torch_out, ours = outputs["torch"], outputs["torchax"]
    row = {"case": dataclasses.asdict(case), "label": case.label, **sides}
    row["max_abs_diff"] = float(np.abs(torch_out - ours).max())
    diff, norm = np.linalg.norm((torch_out - ours).ravel()), np.linalg.norm(torch_out.ravel())
    row["rel_l2"] = float(diff / norm) if norm else (0.0 if diff == 0 else float("inf"))
    row["warm_max_abs_diff"] = float(np.abs(outputs["torchax_warm"] - ours).max())  # stored programs: expect 0
    if "torch.compile" in outputs:
        row["torch_compile_max_abs_diff"] = float(np.abs(outputs["torch.compile"] - torch_out).max())
    if case.dtype == "fp32":
        row["tolerance"] = FP32_TOLERANCE
    else:  # both sides are bf16: each within its rounding of fp32, so of each other within twice PyTorch's own error
        row["tolerance"] = 2 * BF16_ERROR_RATIO * _bf16_reference_error(case)
    row["numerics_ok"] = row["max_abs_diff"] <= row["tolerance"] and row["warm_max_abs_diff"] <= row["tolerance"]
    steady, warm = sides["torchax"]["median_seconds"], sides["torchax_warm"]["cold_seconds"]
    row["warm_target_seconds"] = 1.5 * steady + 1.0  # issue 19: a warm first call within 1.5x steady + 1 s
    row["warm_target_met"] = warm <= row["warm_target_seconds"]
    row["ratio"] = sides["torch"]["median_seconds"] / sides["torchax"]["median_seconds"]
    flops = sides["torch"]["conv_flops"]
    row["conv_flops"] = flops
    timed = {name: r for name, r in sides.items() if name != "torchax_warm" and "timed_out_seconds" not in r}
    row["gflops_per_s"] = {side: flops / r["median_seconds"] / 1e9 for side, r in timed.items()}
    peak = peak_flops(device_kind(), case.dtype)
    row["mfu"] = {side: flops / r["median_seconds"] / peak for side, r in timed.items()} if peak else None
    return row


def device_kind() -> str:
    import jax

    from torchax_vae.engine import process

    process.start()  # JAX's platforms first: a machine without a GPU stays quiet with .[plan-gpu] installed
    return jax.devices()[0].device_kind


def markdown(rows: list[dict]) -> str:
    """The rows as a markdown table; TorchaxVAE's first call cold (new cache) and warm (a later process)."""
    compiled = any("torch.compile" in r for r in rows)
    lines = [
        "| case | max \\|Δ\\| / rel. L2 | PyTorch s | TorchaxVAE s | ratio "
        + ("| torch.compile s: first / steady " if compiled else "")
        + "| first call s: PyTorch / TorchaxVAE cold (trace, compile) / warm (trace or load, compile) "
        "| conv GFLOP | XLA GFLOP | conv GFLOP/s: PyTorch / TorchaxVAE | MFU: PyTorch / TorchaxVAE | XLA temp GB "
        "| peak RSS GB: PyTorch / TorchaxVAE | peak device GB: PyTorch / TorchaxVAE |",
        "|---|---|---|---|---|" + ("---|" if compiled else "") + "---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        t, j, w = r["torch"], r["torchax"], r["torchax_warm"]
        check = f"{r['max_abs_diff']:.1e} / {r['rel_l2']:.1e}" + ("" if r["numerics_ok"] else f" FAIL (> {r['tolerance']:.1e})")
        mfu = f"{r['mfu']['torch']:.1%} / {r['mfu']['torchax']:.1%}" if r.get("mfu") else "n/a"
        peaks = [s.get("peak_device_bytes") for s in (t, j)]
        device = " / ".join(f"{b / 1e9:.2f}" for b in peaks) if all(peaks) else "n/a"
        tc = r.get("torch.compile")
        if tc and "timed_out_seconds" in tc:
            compile_cell = f"| not done in {tc['timed_out_seconds']:.0f} s "
        else:
            compile_cell = f"| {tc['cold_seconds']:.2f} / {tc['median_seconds']:.2f} " if tc else ("| n/a " if compiled else "")
        jf, wf = j["first_call"], w["first_call"]
        lines.append(
            f"| {r['label']} | {check} | {t['median_seconds']:.2f} | {j['median_seconds']:.2f} | **{r['ratio']:.2f}** "
            + compile_cell
            + f"| {t['cold_seconds']:.2f} / {j['cold_seconds']:.2f} ({jf['trace_lower_seconds']:.1f}, "
            f"{jf['compile_seconds']:.1f}) / {w['cold_seconds']:.2f} ({wf['trace_lower_seconds']:.2f}, "
            f"{wf['compile_seconds']:.2f}) "
            f"| {r['conv_flops'] / 1e9:.4g} | {j['xla_flops'] / 1e9:.4g} "
            f"| {r['gflops_per_s']['torch']:.3g} / {r['gflops_per_s']['torchax']:.3g} | {mfu} "
            f"| {j['max_temp_bytes'] / 1e9:.2f} | {t['peak_rss_bytes'] / 1e9:.2f} / {j['peak_rss_bytes'] / 1e9:.2f} "
            f"| {device} |"
        )
    return "\n".join(lines)


def _median_time(fn, repeats: int) -> float:
    fn()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def conv_profile(case: SpeedCase, repeats: int = 3) -> dict:
    """Every convolution of the case's call timed alone, per distinct shape, in PyTorch and in XLA.

    XLA runs each as torchax lowers it (one `lax.conv_general_dilated`) and, for
    3-D ones, as TorchaxVAE does on CPU (`patches.frame_conv.conv3d_by_frames`).
    Returns per-shape rows and the sums (count x median seconds).
    """
    import jax
    import torch
    import torch.nn.functional as F

    from torchax_vae.patches.frame_conv import conv3d_by_frames

    vae = random_vae(case.config)
    x = make_input(case, vae)
    counter = ConvCounter(vae)
    with torch.no_grad():
        vae.decode(x, *decode_args(vae, x.shape[0])) if case.kind == "decode" else vae.encode(x)
    counter.remove()
    rows = []
    generator = torch.Generator().manual_seed(0)
    for (shape, wshape, stride, padding, _), count in counter.calls.items():
        xs = torch.randn(shape, generator=generator)
        ws = torch.randn(wshape, generator=generator) * 0.01
        conv = F.conv3d if len(shape) == 5 else F.conv2d
        with torch.no_grad():
            torch_s = _median_time(lambda: conv(xs, ws, stride=stride, padding=padding), repeats)
        dims = ("NCDHW", "OIDHW", "NCDHW") if len(shape) == 5 else ("NCHW", "OIHW", "NCHW")
        fn = jax.jit(lambda a, b: jax.lax.conv_general_dilated(
            a, b, stride, [(p, p) for p in padding], dimension_numbers=dims))
        xj, wj = jax.numpy.asarray(xs.numpy()), jax.numpy.asarray(ws.numpy())
        xla_s = _median_time(lambda: fn(xj, wj).block_until_ready(), repeats)
        if len(shape) == 5:
            frames_fn = jax.jit(lambda a, b: conv3d_by_frames(a, b, stride=stride, padding=padding))
            frames_s = _median_time(lambda: frames_fn(xj, wj).block_until_ready(), repeats)
        else:
            frames_s = xla_s
        flops = _conv_flops(shape, wshape, stride, padding)
        rows.append({"input": shape, "weight": wshape, "count": count, "gflop": flops / 1e9,
                     "torch_seconds": torch_s, "xla_seconds": xla_s, "xla_by_frames_seconds": frames_s})
    return {
        "case": case.label,
        "convs": rows,
        "torch_seconds": sum(r["count"] * r["torch_seconds"] for r in rows),
        "xla_seconds": sum(r["count"] * r["xla_seconds"] for r in rows),
        "xla_by_frames_seconds": sum(r["count"] * r["xla_by_frames_seconds"] for r in rows),
        "conv_flops": counter.flops,
    }


TRACE_FLAG = "--xla_cpu_enable_xprof_traceme=true"  # XLA:CPU thunks emit profiler events


def op_profile(case: SpeedCase) -> dict:
    """In this process (XLA_FLAGS with TRACE_FLAG): seconds per XLA op kind in one steady TorchaxVAE call.

    Runs the call once to compile, then once under `jax.profiler.trace` and sums
    the thunk events of the trace by name without its numeric suffix
    ("transpose_copy_fusion.12" -> "transpose_copy_fusion"). On XLA:CPU the 2-D
    convolutions and dots run as "ynn_fusion" (YNNPACK); 3-D convolutions run in
    Eigen's pool and show only partly.
    """
    import collections
    import glob
    import gzip
    import re

    import jax

    _, _, call = _side("torchax", case)
    call()
    with tempfile.TemporaryDirectory(prefix="torchax-vae-trace-") as tmp:
        with jax.profiler.trace(tmp, create_perfetto_trace=True):
            start = time.perf_counter()
            call()
            seconds = time.perf_counter() - start
        (path,) = glob.glob(os.path.join(tmp, "**", "*.trace.json.gz"), recursive=True)
        with gzip.open(path) as f:
            events = json.load(f)["traceEvents"]
    totals, counts = collections.Counter(), collections.Counter()
    for e in events:
        name = e.get("name", "")
        if e.get("ph") != "X" or name.startswith(("ThunkExecutor", "$", "end: ")) or "::" in name or "(" in name \
                or name[:1].isupper():  # runtime and Python events: keep XLA's own ops
            continue
        kind = re.sub(r"\.\d+$", "", name)
        totals[kind] += e["dur"] / 1e6
        counts[kind] += 1
    ops = [{"op": k, "seconds": v, "count": counts[k]} for k, v in totals.most_common()]
    return {"case": case.label, "seconds": seconds, "ops": ops}


def run_op_profile(case: SpeedCase, timeout: float = 3600) -> dict:
    """op_profile() in a fresh subprocess with XLA:CPU's thunk events on."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = " ".join(filter(None, [env.get("XLA_FLAGS", ""), TRACE_FLAG]))
    result = subprocess.run(
        [sys.executable, __file__, "--op-profile", json.dumps(dataclasses.asdict(case))],
        capture_output=True, text=True, timeout=timeout, env=env,
    )
    if result.returncode != 0:
        raise RuntimeError(f"op profile of {case.label} failed:\n{result.stderr[-4000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _conv_flops(shape, wshape, stride, padding) -> int:
    spatial = [(n + 2 * p - k) // s + 1 for n, k, s, p in zip(shape[2:], wshape[2:], stride, padding)]
    return 2 * shape[0] * wshape[0] * int(np.prod(spatial)) * wshape[1] * int(np.prod(wshape[2:]))


def _case(fields: str) -> SpeedCase:
    fields = json.loads(fields)
    fields["tile"] = tuple(fields["tile"]) if fields["tile"] else None
    return SpeedCase(**fields)


def main_worker(argv) -> int:
    side, fields, repeats, out_path, *profile_dir = argv
    print(json.dumps(measure(side, _case(fields), int(repeats), out_path, *profile_dir)))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        sys.exit(main_worker(sys.argv[2:]))
    if sys.argv[1:2] == ["--op-profile"]:
        print(json.dumps(op_profile(_case(sys.argv[2]))))
        sys.exit(0)
    sys.exit("usage: scripts/bench.py --speed (this module's command line is internal)")
