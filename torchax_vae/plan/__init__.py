"""Plan a run for an accelerator without one: compile offline what a real run would, and read what XLA says.

`plan(vae, kind, shape, target)` builds a twin of `vae` (its diffusers config
on the meta device: no weights, no memory) on a mesh of the target's abstract
devices (torchax_vae.plan.targets), with the same settings (dtype, tiling, slicing,
program split, frame batches). The twin's `precompile` then traces, patches,
splits and compiles exactly the programs a run on that target would run, with
the target's compiler (libtpu's, or the CUDA plugin's down to sm_90a code);
nothing runs.

What comes back (`Plan`), per program and per call:
- per program: how often one call runs it, compile seconds, XLA's per-device
  temp, argument and output bytes, and per-device FLOPs;
- per call: the peak per device (the largest program's arguments, outputs
  and temp, plus the call's result held on the device) against the chip's
  memory, and what "auto" tiling decided there; FLOPs per device against an
  even split of the same call compiled for one chip (sharding efficiency, on
  TPU meshes: a second compile); a roofline lower bound (FLOPs / peak,
  bytes / bandwidth);
- on GPUs, the optimized HLO's kernels: cuDNN convolutions, GEMMs, the largest
  convolution operand.

Figures are compiled offline, not run on a TPU or GPU: memory, FLOPs and
compile seconds, never speed (the roofline bound is a bound, not a time).
"""

import collections
import dataclasses
import math
import warnings
import re

import jax
import numpy as np

from torchax_vae.engine.arrays import chunks_of, LOOKAHEAD
from torchax_vae.engine.programs import Programs
from torchax_vae.placement.mesh import _batch_and_group, make_mesh, program_grid
from torchax_vae.plan.targets import Target, target as parse_target, TargetError

__all__ = ["Plan", "ProgramPlan", "plan"]


@dataclasses.dataclass(frozen=True)
class ProgramPlan:
    name: str
    input_shapes: tuple
    runs: int  # per call
    compile_seconds: float
    lower_seconds: float
    temp_bytes: int  # per device
    argument_bytes: int
    output_bytes: int
    flops: float | None  # per device, XLA's count (None: the CUDA compiler counts none)
    unpartitioned_flops: float  # the whole program on one device (XLA's HLO cost analysis before partitioning)
    kernels: dict | None = None  # GPU: cuDNN convolutions, GEMMs, largest convolution operand


@dataclasses.dataclass(frozen=True)
class Plan:
    target: str
    platform: str
    devices: int
    mesh: dict
    kind: str
    input_shape: tuple
    output_shape: tuple
    dtype: str
    tiling: str  # the mode planned with ("auto": tiled only if the untiled call would not fit)
    tiled: bool  # whether the planned call tiles
    chip_memory_bytes: int
    peak_bytes_per_chip: int
    fits: bool
    flops_per_chip: float | None
    unpartitioned_flops: float  # XLA's count of the programs before partitioning and optimization (nominal)
    one_chip_flops: float | None  # the same call compiled for one chip of the target (TPU meshes)
    sharding_efficiency: float | None  # one chip's FLOPs / (devices x FLOPs per device)
    yardstick: str | None  # what "one chip's FLOPs" is: "one chip", or "unpartitioned" where one chip cannot hold it
    roofline_seconds: float  # max(compute, memory) lower bound
    compute_seconds: float
    memory_seconds: float
    compile_seconds: float
    programs: list[ProgramPlan]
    texts: dict | None = dataclasses.field(default=None, repr=False)  # name -> StableHLO, with keep_texts
    reference_compile_seconds: float = 0.0  # the one-chip compile the efficiency is measured against
    sharding: str = ""  # how the activations split over the mesh (describe_sharding)
    # a decode as `decode_stream` (and `torchax-vae decode`) runs it: the largest program and a few chunks, never
    # the whole video (peak_bytes_per_chip: `decode`, which holds it); None for an encode
    streamed_peak_bytes_per_chip: int | None = None

    @property
    def fits_streamed(self) -> bool | None:
        peak = self.streamed_peak_bytes_per_chip
        return None if peak is None else peak <= self.chip_memory_bytes

    def to_json(self) -> dict:
        """The plan as plain data for json.dumps (NaN, where a count is unknown, as None)."""
        def clean(value):
            if isinstance(value, float) and math.isnan(value):
                return None
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return [clean(v) for v in value]
            return value

        return clean({k: v for k, v in dataclasses.asdict(self).items() if k != "texts"})

    def summary(self, verbose: bool = False) -> str:
        """The verdict first (fits, peak per chip), then how it shards, its efficiency and roofline bound, what the
        compile cost; with `verbose`, one line per program."""
        gib = 2**30
        chip = "chip" if self.platform == "tpu" else "GPU"
        verdict = "fits" if self.fits else "does NOT fit"
        lines = [
            f"{verdict}: peak {self.peak_bytes_per_chip / gib:.2f} GiB per {chip} of {self.chip_memory_bytes / gib:.1f} GiB "
            f"on {self.target} ({self.devices} x {self.platform})"
            + (", tiled by 'auto'" if self.tiled and self.tiling == "auto" else ", tiled" if self.tiled else ""),
            f"{self.kind} {tuple(self.input_shape)} -> {tuple(self.output_shape)} in {self.dtype}; compiled offline, not run on a "
            f"{'TPU' if self.platform == 'tpu' else 'GPU'}",
            f"sharding: {self.sharding}",
        ]
        if self.streamed_peak_bytes_per_chip is not None and len(self.output_shape) == 5:  # (a video's)
            lines.insert(1, f"streamed (decode_stream, torchax-vae decode): {'fits' if self.fits_streamed else 'does NOT fit'}"
                            f": peak {self.streamed_peak_bytes_per_chip / gib:.2f} GiB per {chip}; the peak above is "
                            "decode()'s, which holds the whole video")
        if self.sharding_efficiency is not None:
            lines.append(f"sharding efficiency {self.sharding_efficiency:.2f}: {self.flops_per_chip / 1e12:.3f} TFLOP per "
                         f"device against {self.one_chip_flops / 1e12:.3f} TFLOP on {self.yardstick} / {self.devices}")
        lines.append(f"roofline lower bound {_time(self.roofline_seconds)} (compute {_time(self.compute_seconds)} at the "
                     f"chip's peak FLOP/s, memory {_time(self.memory_seconds)} at its bandwidth)")
        reference = (f" + {self.reference_compile_seconds:.1f} s for the one-chip reference"
                     if self.reference_compile_seconds else "")
        lines.append(f"compile {self.compile_seconds:.1f} s for {len(self.programs)} programs{reference}")
        if verbose:
            for p in self.programs:
                flops = "n/a" if p.flops is None else f"{p.flops / 1e12:.3f} TFLOP"
                lines.append(f"  {p.name}: x{p.runs}, compile {p.compile_seconds:.1f} s, temp {p.temp_bytes / gib:.2f} "
                             f"GiB, args {p.argument_bytes / gib:.2f} GiB, out {p.output_bytes / gib:.2f} GiB, {flops} "
                             "per device" + (f", kernels {p.kernels}" if p.kernels else ""))
        return "\n".join(lines)


def _time(seconds: float) -> str:
    return f"{seconds:.3f} s" if seconds >= 1 else f"{seconds * 1e3:.3f} ms"


def describe_sharding(mesh, kind: str, input_shape, output_shape, rows_only: bool = False) -> str:
    """How a call's activations split over the mesh, by the rule every program follows (torchax_vae/placement/mesh.py):
    the batch over 'dp' where it divides it, height x width in one grid over the rest, chosen at the latents."""

    devices = math.prod(mesh.shape.values())
    if devices == 1:
        return "one device, nothing to split"
    latents = input_shape if kind == "decode" else output_shape
    batch, height, width = latents[0], latents[-2], latents[-1]
    batch_axis, group, size = _batch_and_group(mesh, batch)
    grid = program_grid(mesh, batch, height, width, rows_only)
    parts = [f"batch {batch} over 'dp' ({mesh.shape['dp']} rows)"] if batch_axis else []
    axes = "'tp'" if group == "tp" else "'dp' x 'tp'"
    used = grid[0] * grid[1]
    parts.append(f"height x width in a {grid[0]} x {grid[1]} grid over {axes} ({used} of {size} devices"
                 + (", the rest hold copies)" if used < size else ")"))
    return "; ".join(parts) + f"; weights replicated; mesh {dict(mesh.shape)}"


def unpartitioned_flops(lowered) -> float:
    """FLOPs of a lowered program before SPMD partitioning (the whole computation), by XLA's HLO cost analysis.

    On the CPU client: the abstract TPU and GPU clients report none for unoptimized modules.
    NaN where this jax has no such entry point.
    """
    try:
        from jax._src.lib import xla_client

        module = lowered.compiler_ir("hlo").as_hlo_module()
        cost = xla_client._xla.hlo_module_cost_analysis(jax.devices("cpu")[0].client, module)
        return float(cost.get("flops", math.nan))
    except Exception:  # noqa: BLE001 (a private entry point: a jax without it gives no efficiency, not an error)
        return math.nan


_SHAPE = re.compile(r"\b(pred|s8|u8|s16|u16|s32|u32|s64|u64|f16|bf16|f32|f64)\[([\d,]*)\]")
_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4,
          "s64": 8, "u64": 8, "f64": 8}


def _largest_operand(line: str) -> int:
    return max((math.prod(int(d) for d in dims.split(",") if d) * _BYTES[dtype]
                for dtype, dims in _SHAPE.findall(line)), default=0)


def gpu_kernels(hlo_text: str) -> dict:
    """What an optimized GPU module hands to libraries and GEMM emitters: cuDNN convolutions and GEMMs (cuBLAS
    calls, and how many of them are Triton GEMM fusions), with the largest operand or result of each kind in bytes."""
    convs = gemms = triton = 0
    largest_conv = largest_gemm = 0
    for line in hlo_text.splitlines():
        target = re.search(r'custom_call_target="([^"]+)"', line) if "custom-call(" in line else None
        is_triton = " fusion(" in line and re.search(r'"kind":"__triton\w*gemm', line) is not None
        if target and "cudnn$conv" in target[1]:
            convs += 1
            largest_conv = max(largest_conv, _largest_operand(line))
        elif (target and ("gemm" in target[1] or "matmul" in target[1])) or is_triton:
            gemms += 1
            triton += is_triton
            largest_gemm = max(largest_gemm, _largest_operand(line))
    return {"cudnn_convolutions": convs, "gemms": gemms, "triton_gemms": triton,
            "largest_convolution_operand_bytes": largest_conv, "largest_gemm_operand_bytes": largest_gemm}


class PlannedPrograms(Programs):
    """`Programs` that count runs per compiled program and keep what the plan reports of each."""

    def __init__(self, platform: str, observer=None):
        super().__init__(store=None)
        self.platform = platform  # the target's: "cuda" programs get their kernel summary
        self.runs: collections.Counter = collections.Counter()  # id(stats) -> runs
        self.details: dict[int, dict] = {}  # id(stats) -> unpartitioned FLOPs, kernels
        self.observer = observer  # called (name, None) before and (name, stats) after each compile
        self._lowered = None
        self.texts: dict[str, str] = {}  # program name -> StableHLO, first lowering of each name

    def run(self, name, fn, weights, *args):
        if not self.probing:
            self.runs[id(self._entry(name, fn, weights, args).stats)] += 1
        return super().run(name, fn, weights, *args)

    def _lower(self, name, fn, args):
        lowered, from_store = super()._lower(name, fn, args)
        self._lowered = lowered
        self.texts.setdefault(name, lowered.as_text())
        return lowered, from_store

    def _compile(self, name, fn, weights, args):
        if self.observer:
            self.observer(name, None)
        with warnings.catch_warnings():  # JAX's persistent cache (if the user's process has it on) cannot hold
            # executables of abstract devices; each lookup warns and the compile goes on
            warnings.filterwarnings("ignore", message="Error (reading|writing) persistent compilation cache entry")
            entry = super()._compile(name, fn, weights, args)
        gpu = self.platform == "cuda"
        self.details[id(entry.stats)] = {
            "unpartitioned_flops": unpartitioned_flops(self._lowered),
            # jax < 0.10 gives no text for a compile-only client's executable: no kernel summary there
            "kernels": gpu_kernels(text) if gpu and (text := entry.compiled.as_text()) else None,
        }
        if self.observer:
            self.observer(name, entry.stats)
        return entry


def twin(vae, mesh, memory_budget: int | None = None, programs=None):
    """A TorchaxVAE of `vae`'s class and config on the meta device, on `mesh`, with `vae`'s settings
    (`TorchaxVAE._twin`), compiling into `programs` (default: a cache of its own)."""
    return vae._twin(mesh, programs=programs, memory_budget=memory_budget)


def _compile_call(vae, mesh, budget, kind, shape, platform, observer, tiling_mode=None):
    """Compiles (abstractly runs) one call of a twin of `vae` on `mesh`: (its output's shapes, the programs used,
    the PlannedPrograms they were compiled into)."""
    programs = PlannedPrograms(platform, observer)
    planned = twin(vae, mesh, memory_budget=budget, programs=programs)
    if tiling_mode is not None:
        planned.tiling_mode = tiling_mode
    source = planned._shape_source(kind, shape)
    with programs.recording() as used:  # a decode as its stream's chunks (a list)
        out = planned._planned_run(kind, source)
        out = list(chunks_of(out)) if kind == "decode" else out
    return out, used, programs


def plan(vae, kind: str, shape, target: str | Target = "v6e-8", *, dp: int = 1, observer=None,
         keep_texts: bool = False, reference: bool = True) -> Plan:
    """Compiles offline for `target` what `vae.encode`/`vae.decode` of an input of `shape` would run there.

    Args:
        vae: a TorchaxVAE (its weights are not needed: only its class, config and settings).
        kind: "encode" or "decode".
        shape: the input's [batch, channels, frames, height, width].
        target: a name (torchax_vae.plan.targets: "v6e-8", "v5e-4", "h100", "h100x2", ...) or a Target.
        dp: the mesh's 'dp' rows (a divisor of the device count); activations split their width over the rest.
        observer: called (program name, None) before each compile and (name, stats) after it: progress.
        keep_texts: also return each program's StableHLO (`Plan.texts`), as `TorchaxVAE.lower` gives it.
        reference: on a TPU mesh, also compile the call for one chip: the sharding efficiency's yardstick
            (twice the compile time; False: no efficiency).
    """
    if kind not in ("encode", "decode"):
        raise ValueError(f"kind must be 'encode' or 'decode', got {kind!r}")
    chosen = target if isinstance(target, Target) else parse_target(target)
    devices = chosen.devices()
    if not isinstance(dp, int) or dp < 1 or len(devices) % dp:
        raise TargetError(f"dp must divide the {len(devices)} devices of {chosen.name}, got {dp!r}")
    mesh = make_mesh(devices, dp=dp)
    budget = vae.memory_budget if vae.memory_budget is not None else chosen.chip.memory_bytes
    out, used, programs = _compile_call(vae, mesh, budget, kind, shape, chosen.platform, observer)
    ran = [stats for stats in used if programs.runs[id(stats)]]
    rows = [_row(stats, programs) for stats in ran]
    tiled = any("/tile" in stats.name for stats in ran)  # every family names its tile programs so
    one_chip, yardstick, reference_seconds = None, None, 0.0
    if reference and len(devices) > 1 and chosen.platform == "tpu":
        # the yardstick: the same call for one chip, tiled as here (XLA's count before optimization
        # overstates what it compiles: Qwen-Image 1328x1328, 20.2 TFLOP against 8.5 compiled for one chip)
        note = None if observer is None else (lambda name, stats: observer(f"{name} (one chip, for efficiency)", stats))
        try:
            _, single_used, single_programs = _compile_call(vae, make_mesh(devices[:1]), budget, kind, shape,
                                                            chosen.platform, note, "on" if tiled else "off")
            one_chip, yardstick = sum(stats.flops * single_programs.runs[id(stats)] for stats in single_used), "one chip"
            reference_seconds = sum(stats.compile_seconds for stats in single_used)
        except jax.errors.JaxRuntimeError as error:  # libtpu compiles nothing past one chip's HBM
            if "RESOURCE_EXHAUSTED" not in str(error):
                raise
            yardstick = None
    largest = max((r.argument_bytes + r.output_bytes + r.temp_bytes for r in rows), default=0)
    streamed_peak = None
    if kind == "decode":  # the whole video held (decode), or a few chunks of it (decode_stream, the command)
        chunks, axis = out, vae._family.frame_axis if len(out[0].shape) == 5 else 0
        whole = list(chunks[0].shape)
        whole[axis] = sum(chunk.shape[axis] for chunk in chunks)
        out = jax.ShapeDtypeStruct(tuple(whole), chunks[0].dtype)
        held = sum(_per_device_bytes(chunk) for chunk in chunks)
        # at most the chunk handed out, the one computed ahead, and what the loop keeps for the next (a window to
        # blend into): the largest such few (one chunk, a whole-clip decode: the same as decode's)
        sizes = sorted((_per_device_bytes(chunk) for chunk in chunks), reverse=True)
        streamed_peak = largest + sum(sizes[:LOOKAHEAD + 2])
    else:
        held = _per_device_bytes(out)
    peak = largest + held
    total = sum(r.unpartitioned_flops * r.runs for r in rows)
    known = all(r.flops is not None for r in rows)
    per_chip = sum(r.flops * r.runs for r in rows) if known else None
    n = len(devices)
    if n == 1:
        one_chip, yardstick = per_chip, "one chip"
    elif reference and one_chip is None and per_chip and not math.isnan(total):
        one_chip, yardstick = total, "unpartitioned"  # the call does not fit one chip: XLA's count before it
    efficiency = one_chip / (n * per_chip) if per_chip and one_chip else None
    chip = chosen.chip
    compute = (per_chip if per_chip is not None else total / n) / chip.peak_flops
    # bytes every run must move at least: its arguments in, its outputs out (weights, input, cache, result)
    moved = sum((r.argument_bytes + r.output_bytes) * r.runs for r in rows)
    memory = moved / chip.bandwidth
    return Plan(
        target=chosen.name, platform=chip.platform, devices=n, mesh=dict(mesh.shape), kind=kind,
        input_shape=tuple(shape), output_shape=tuple(out.shape), dtype=str(vae.dtype).removeprefix("torch."),
        tiling=vae.tiling_mode, tiled=tiled,
        chip_memory_bytes=chip.memory_bytes, peak_bytes_per_chip=peak, fits=peak <= chip.memory_bytes,
        flops_per_chip=per_chip, unpartitioned_flops=total, one_chip_flops=one_chip, sharding_efficiency=efficiency,
        yardstick=yardstick,
        roofline_seconds=max(compute, memory), compute_seconds=compute, memory_seconds=memory,
        compile_seconds=sum(stats.compile_seconds for stats in used), programs=rows,
        texts=dict(programs.texts) if keep_texts else None,
        reference_compile_seconds=reference_seconds,
        sharding=describe_sharding(mesh, kind, tuple(shape), tuple(out.shape), vae._engine.placement.rows_only),
        streamed_peak_bytes_per_chip=streamed_peak,
    )


def _row(stats, programs: PlannedPrograms) -> ProgramPlan:
    details = programs.details[id(stats)]
    # the CUDA compiler without a device counts no FLOPs
    flops = None if programs.platform == "cuda" or math.isnan(stats.flops) else stats.flops
    return ProgramPlan(
        name=stats.name, input_shapes=stats.input_shapes, runs=programs.runs[id(stats)],
        compile_seconds=stats.compile_seconds, lower_seconds=stats.lower_seconds, temp_bytes=stats.temp_bytes,
        argument_bytes=stats.argument_bytes, output_bytes=stats.output_bytes, flops=flops,
        unpartitioned_flops=details["unpartitioned_flops"], kernels=details["kernels"],
    )


def _per_device_bytes(info) -> int:
    """Bytes of one device's shard of a jax.ShapeDtypeStruct (the call's result, held on the devices)."""
    shape = info.sharding.shard_shape(info.shape) if info.sharding is not None else info.shape
    return int(np.prod(shape)) * info.dtype.itemsize
