"""What a trace is for: the one frozen set of options the patched layers read while torchax traces a program.

The patched layers sit deep inside diffusers' forward, which passes them no
extra arguments, so the lowering sets one `TraceOptions` around a trace
(`tracing(options)`) and the layers read `current()`:

- `cpu_kernels` (frame_conv): 3-D convolutions as sums of per-frame 2-D ones.
  The backend table's `cpu_kernels` (torchax_vae/placement/backends.py: XLA:CPU) allows it, and
  each family's lowering says in which dtypes it takes it (`torchax_vae.engine.lowering.Lowered`,
  with the measurements); CogVideoX's `program_split="auto"` follows the same row.
- `gpu_conv_limit` (gpu_conv): on GPUs, pointwise convolutions as matmuls and
  every other convolution in pieces whose operands stay below this many bytes;
  None (CPU, TPU): torchax's own lowering; the backend table's `conv_operand_limit`.
- `cpu_conv_matmul` (cpu_conv, through gpu_conv's lowering hook): on CPU,
  weight-bound convolutions as one matmul over gathered patches.
  `TraceOptions.for_platform(platform, ...)` sets both convolution rules from the platform.
- `halo_conv` (halo_conv, through gpu_conv's lowering hook): on a mesh, "same" convolutions of split
  activations as each device's own convolution plus its neighbours' edge terms (GPUs: `for_platform`).
- `mesh` (sharding_marks): mark activations for this ('dp', 'tp') mesh; None: no marks.
- `grid` (sharding_marks): the (height, width) split every activation of the program takes where it
  divides, chosen at the program's smallest level (`torchax_vae.placement.mesh.program_grid`); None: per shape.
- `attention_score_limit` (attention_blocks): attention whose scores would pass this many bytes runs in
  blocks of queries (the backend table's; None: whole).
- `tile_extent` (tile_mask): ((valid height, valid width), (tile height, tile width))
  of a zero-padded edge tile; None: the whole input is real.

Outside `tracing` every layer behaves as diffusers' (the defaults).
"""

import contextlib
import contextvars
import dataclasses
from typing import Any

from torchax_vae.placement.backends import backend  # the per-platform choices: one table (torchax_vae/placement/backends.py)



@dataclasses.dataclass(frozen=True)
class TraceOptions:
    cpu_kernels: bool = False
    gpu_conv_limit: int | None = None
    cpu_conv_matmul: bool = False
    halo_conv: bool = False
    mesh: Any = None  # jax.sharding.Mesh
    grid: tuple | None = None
    tile_extent: tuple | None = None
    dot_statistics: bool = False  # GroupNorm sums as dots (Mochi's and EasyAnimate's TPU traces: torchax_vae/patches/group_norm.py)
    rank: int = 5  # the family's activations (sharding_marks marks arrays of this rank): 5 video, 4 images
    attention_score_limit: int | None = None  # bytes of one attention's scores past which its queries run in blocks

    @classmethod
    def for_platform(cls, platform: str, **options) -> "TraceOptions":
        """The options of a trace for JAX `platform`, its convolution rules (GPU bound and halos, CPU matmul) set
        from it."""
        row = backend(platform)
        return cls(gpu_conv_limit=row.conv_operand_limit, cpu_conv_matmul=row.conv_as_matmul,
                   halo_conv=row.halo_conv, attention_score_limit=row.attention_score_limit, **options)


# A context variable, not an argument: the patched layers read the trace's options inside diffusers' own forward,
# which takes no argument of ours; set only while a program traces (`tracing`).
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
