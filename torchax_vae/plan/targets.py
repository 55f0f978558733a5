"""Accelerators to plan for without having one: a target name -> abstract JAX devices and the chip's facts.

`target("v6e-8")` gives eight abstract TPU v6e chips from libtpu's topology
descriptions, `target("h100x2")` two abstract H100s from JAX's CUDA plugin and a
`GpuTargetConfigProto` kept in the package (assets/gpu/). Programs compiled for
their devices are what a real run on that slice would compile; nothing runs.

Names (docs/guide/plan.md):
- TPU as Google Cloud names slices: `v5e-N` and `v6e-N` count chips (1, 4, 8,
  16, ...); `v4-N` and `v5p-N` count TensorCores, two per chip (`v5p-8` is 4
  chips). A libtpu topology name works too: `v6e:2x4`, `v5p:2x2x2`.
- GPU: `h100`, `h200`, or `h100xN` for N of them in one host.

The chip facts are the vendors' published figures (docs/guide/plan.md cites them);
for TPU v4 libtpu's abstract topology has one device per TensorCore, so a
device gets half a chip's memory, FLOP/s and bandwidth.
"""

import dataclasses
import importlib.resources
import importlib.util
import os
import re

__all__ = ["Chip", "Target", "TargetError", "target", "NAMES"]


class TargetError(ValueError):
    """A target name that is not known, or a compiler that is not installed (the message names the fix)."""


@dataclasses.dataclass(frozen=True)
class Chip:
    """One JAX device of a target: its memory, peak dense bf16 FLOP/s and memory bandwidth."""

    name: str
    platform: str  # "tpu" or "cuda"
    memory_bytes: int
    peak_flops: float  # bf16, dense
    bandwidth: float  # bytes/s
    devices_per_chip: int = 1


GIB = 2**30
CHIPS = {
    # cloud.google.com/tpu/docs/v4, v5e, v5p, v6e ("system architecture"): HBM per chip, bf16 peak, HBM bandwidth
    "v4": Chip("TPU v4", "tpu", 32 * GIB // 2, 275e12 / 2, 1200e9 / 2, devices_per_chip=2),
    "v5e": Chip("TPU v5e", "tpu", 16 * GIB, 197e12, 819e9),
    "v5p": Chip("TPU v5p", "tpu", 95 * GIB, 459e12, 2765e9),
    "v6e": Chip("TPU v6e", "tpu", 32 * GIB, 918e12, 1640e9),
    # NVIDIA's H100 SXM5 and H200 SXM data sheets (dense bf16 Tensor Core); memory as the target config says
    "h100": Chip("NVIDIA H100 80GB HBM3", "cuda", 84929347584, 989.4e12, 3.35e12),
    "h200": Chip("NVIDIA H200", "cuda", 150754820096, 989.4e12, 4.8e12),
}
NAMES = ("v4-8", "v5e-1", "v5e-4", "v5e-8", "v5p-8", "v6e-1", "v6e-4", "v6e-8", "h100", "h100x2", "h100x8", "h200")
# libtpu's chip grid of a slice of N chips, 2-D for v5e and v6e, 3-D for v4 and v5p
_GRID_2D = {1: (1, 1), 4: (2, 2), 8: (2, 4), 16: (4, 4), 32: (4, 8), 64: (8, 8), 128: (8, 16), 256: (16, 16)}
_GRID_3D = {1: (1, 1, 1), 4: (2, 2, 1), 8: (2, 2, 2), 16: (2, 2, 4), 32: (2, 4, 4), 64: (4, 4, 4)}
_HOST_CHIPS = 8  # a single-host slice (v5e-8, v6e-8): every chip on host 0


@dataclasses.dataclass(frozen=True)
class Target:
    """What to compile for: `count` devices of `chip`, as libtpu's topology or JAX's CUDA plugin describes them."""

    name: str
    chip: Chip
    topology: str  # libtpu's name ("v6e:2x4") or the CUDA plugin's ("1x1x2")
    host_bounds: tuple | None = None  # libtpu's chips_per_host_bounds

    @property
    def platform(self) -> str:
        return self.chip.platform

    def devices(self) -> list:
        """The target's abstract devices (compile with them; they run nothing). TargetError if the compiler is missing."""
        from jax.experimental import topologies

        from torchax_vae.engine import process  # (the engine: when devices are asked for, not at the command's checks)

        process.start()  # JAX's platforms first: on a machine without the chip, its plugin stays quiet
        if self.platform == "tpu":
            _require("libtpu", "planning for a TPU needs libtpu: pip install 'torchax-vae[tpu]'")
            # libtpu's lockfile (/tmp/libtpu_lockfile) keeps two processes off the same real chips; abstract
            # topologies claim none, so two plans (or a plan beside a test run) may load it at once
            os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
            process.quiet_libtpu()
            kwargs = {} if self.host_bounds is None else {"chips_per_host_bounds": self.host_bounds}
            try:
                return list(topologies.get_topology_desc(platform="tpu", topology_name=self.topology, **kwargs).devices)
            except Exception as error:  # libtpu's own words: an unknown or malformed topology
                raise TargetError(f"libtpu refused topology {self.topology!r} for target {self.name!r}: "
                                  f"{str(error).splitlines()[0]}") from None
        _require("jax_plugins.xla_cuda13", "planning for a GPU needs JAX's CUDA compiler: pip install 'torchax-vae[plan-gpu]'")
        import jax

        if tuple(int(n) for n in jax.__version__.split(".")[:2]) < (0, 10):
            # jax 0.8's CUDA plugin wants cuDNN to start, autotuning results to compile GEMM fusions without a
            # GPU, and returns no output shardings from a compile-only client (tried 2026-11-24)
            raise TargetError(f"planning for a GPU needs jax >= 0.10 (this is {jax.__version__}); TPU targets work")
        config = importlib.resources.files("torchax_vae").joinpath(f"assets/gpu/{self.chip_key}.txtpb").read_text()
        return list(topologies.get_topology_desc(platform="cuda", topology=self.topology, target_config=config).devices)

    @property
    def chip_key(self) -> str:
        return next(key for key, chip in CHIPS.items() if chip == self.chip)


def _require(module: str, fix: str) -> None:
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        raise TargetError(fix)


def target(name: str) -> Target:
    """The Target a name says (module docstring); TargetError for anything else, listing what works."""
    if not isinstance(name, str):
        raise TargetError(f"a target is a name such as 'v6e-8' or 'h100', got {name!r}")
    text = name.strip().lower()
    if m := re.fullmatch(r"(h100|h200)(?:x(\d+))?", text):
        count = int(m[2] or 1)
        if count < 1:
            raise TargetError(f"target {name!r}: at least one GPU")
        return Target(text, CHIPS[m[1]], f"1x1x{count}")
    if m := re.fullmatch(r"(v4|v5e|v5p|v6e)-(\d+)", text):
        generation, count = m[1], int(m[2])
        per_chip = CHIPS[generation].devices_per_chip if generation != "v5p" else 2  # v5p-N counts TensorCores too
        chips, rest = divmod(count, per_chip)
        grids = _GRID_2D if generation in ("v5e", "v6e") else _GRID_3D
        if rest or chips not in grids:
            sizes = ", ".join(f"{generation}-{c * per_chip}" for c in grids)
            raise TargetError(f"target {name!r}: {generation} slices are {sizes}")
        grid = grids[chips]
        return Target(text, CHIPS[generation], f"{generation}:{'x'.join(map(str, grid))}", _host_bounds(grid, chips))
    if m := re.fullmatch(r"(v4|v5e|v5p|v6e):(\d+(?:x\d+){1,2})", text):
        grid = tuple(int(n) for n in m[2].split("x"))
        chips = 1
        for n in grid:
            chips *= n
        return Target(text, CHIPS[m[1]], text, _host_bounds(grid, chips))
    raise TargetError(f"unknown target {name!r}: expected a TPU slice (v6e-8, v5e-4, v5p-8, v4-8, or a libtpu "
                      f"topology such as v6e:2x4) or GPUs (h100, h100x8, h200); e.g. {', '.join(NAMES)}")


def _host_bounds(grid: tuple, chips: int) -> tuple | None:
    """Single-host slices put every chip on one host (libtpu's default bounds would split a v6e-8 over two)."""
    if chips > _HOST_CHIPS:
        return None
    return tuple(grid) + (1,) * (3 - len(grid))
