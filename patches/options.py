"""What a trace is for: the one frozen set of options the patched layers read while torchax traces a program.

The patched layers sit deep inside diffusers' forward, which passes them no
extra arguments, so the lowering sets one `TraceOptions` around a trace
(`tracing(options)`) and the layers read `current()`:

- `cpu_kernels` (frame_conv): 3-D convolutions as sums of per-frame 2-D ones.
  This is the one switch for the CPU-only machinery: `cpu_kernels_for(platform)`
  turns it on for XLA:CPU devices (`CPU_PLATFORMS`), and CogVideoX's
  `program_split="auto"` (one program per layer) follows the same decision.
  Wan uses it in bf16 only (measured: torchax_vae/models/wan.py, `_tracing`).
- `mesh` (sharding_marks): mark activations for this ('dp', 'tp') mesh; None: no marks.
- `tile_extent` (tile_mask): ((valid height, valid width), (tile height, tile width))
  of a zero-padded edge tile; None: the whole input is real.

Outside `tracing` every layer behaves as diffusers' (the defaults).
"""

import contextlib
import contextvars
import dataclasses
from typing import Any

CPU_PLATFORMS = ("cpu",)  # JAX platforms whose programs get the CPU-only lowerings


def cpu_kernels_for(platform: str) -> bool:
    """Whether programs for a JAX `platform` use the CPU-only machinery (per-frame convolutions, layer programs)."""
    return platform in CPU_PLATFORMS


@dataclasses.dataclass(frozen=True)
class TraceOptions:
    cpu_kernels: bool = False
    mesh: Any = None  # jax.sharding.Mesh
    tile_extent: tuple | None = None


_CURRENT = contextvars.ContextVar("torchax_vae_trace_options", default=TraceOptions())


def current() -> TraceOptions:
    return _CURRENT.get()


@contextlib.contextmanager
def tracing(options: TraceOptions):
    """Inside: the patched layers trace as `options` say."""
    token = _CURRENT.set(options)
    try:
        yield options
    finally:
        _CURRENT.reset(token)
