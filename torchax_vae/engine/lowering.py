"""What every family's lowering shares: a private meta copy of the module, its weights as JAX arrays, the trace context.

The user's module is never changed: a structural copy of it whose tensors live
on torch's "meta" device (no memory) gets the patches, and its weights are
JAX arrays passed in at call time through `torch.func.functional_call`. The
diffusers forward code itself runs unmodified on torchax tensors. Each
adapter (torchax_vae/models/) turns one encoder or decoder call of its family
into a pure JAX function of (weights, input, cache) with these.
"""

import contextlib
import copy
import itertools
import warnings

import jax
import jax.numpy as jnp
import torch
from torch import nn

from torchax_vae import patches
from torchax_vae.engine import convert
from torchax_vae.engine.weights import compute_dtype
from torchax_vae.placement.backends import backend
from torchax_vae.placement.mesh import program_grid


def private_copy(model: nn.Module) -> nn.Module:
    """A deep copy of `model` whose parameters and buffers are storage-less meta tensors."""
    memo = {}
    for t in itertools.chain(model.parameters(), model.buffers()):
        meta = torch.empty_like(t, device="meta")
        memo[id(t)] = nn.Parameter(meta, requires_grad=False) if isinstance(t, nn.Parameter) else meta
    # tensors a module keeps as plain attributes: torch.nn.utils.weight_norm's `weight`, recomputed from weight_g and
    # weight_v before each forward (the MiniMax H3 audio VAE's, Oobleck's), which deepcopy refuses (not a leaf)
    for module in model.modules():
        for t in vars(module).values():
            if isinstance(t, torch.Tensor) and id(t) not in memo:
                memo[id(t)] = torch.empty_like(t, device="meta")
    clone = copy.deepcopy(model, memo)
    clone.eval()
    return clone


def jax_weights(model: nn.Module, dtype, device=None) -> dict[str, dict[str, jax.Array]]:
    """Copies of the model's parameters and buffers as JAX arrays, grouped by top-level child.

    A model on the meta device (any of its tensors) gives their shapes only (jax.ShapeDtypeStruct): enough to
    lower and compile. Floating-point tensors take `dtype`, except where the model's class keeps them in float32
    under any `torch_dtype` (`_keep_in_fp32_modules`: weights.compute_dtype).
    """

    keep = tuple(getattr(model, "_keep_in_fp32_modules", None) or ())
    grouped: dict[str, dict[str, jax.Array]] = {}
    tensors = list(itertools.chain(model.named_parameters(), model.named_buffers()))
    # A model built under torch.device("meta") may keep constants made outside it (Cosmos's wavelets, cloned
    # from a module-level tensor) on the CPU: shapes only for those too, as the model is for planning.
    planning = any(t.is_meta for _, t in tensors)
    for name, t in tensors:
        child, _, rest = name.partition(".")
        cast = compute_dtype(name, dtype, keep) if t.is_floating_point() else None
        if planning:
            # an integer buffer (Cosmos's wavelet `_arange`) as a real one arrives: int64 as JAX's int32
            kind = convert.jax_dtype(t.dtype) if t.is_floating_point() else jax.dtypes.canonicalize_dtype(
                torch.empty((), dtype=t.dtype).numpy().dtype)
            shape_only = jax.ShapeDtypeStruct(tuple(t.shape), cast or kind, sharding=device)
            grouped.setdefault(child, {})[rest] = shape_only
            continue
        grouped.setdefault(child, {})[rest] = convert.to_jax(t, cast, device)
    return grouped


def grid_for(mesh, shape, ratio: int, rows_only: bool = False):
    """The height x width split (`torchax_vae.placement.mesh.program_grid`) of a program whose input has `shape`
    (N, C, [T,] H, W); ratio: what divides that input's height and width down to the program's smallest
    level, the latents (the encoder's spatial compression; 1 for a decoder, whose input is the latents);
    rows_only: the family's programs split the height alone."""

    return program_grid(mesh, shape[0], shape[-2] // ratio, shape[-1] // ratio, rows_only)


@contextlib.contextmanager
def tracing(env, options):
    """The context a program of a patched model is traced in: torchax's `env`, the patches' `options`."""
    with patches.options.tracing(options), env, torch.no_grad(), warnings.catch_warnings():
        # torchax asks for torch's int64 index dtype; without jax_enable_x64 JAX makes it int32
        # (enough for any index here) and warns once per call site.
        warnings.filterwarnings("ignore", message="Explicitly requested dtype int64", category=UserWarning)
        # torchax's integer power (Cosmos's wavelets: (-1) ** arange) asks for float64; the signs are exact in float32
        warnings.filterwarnings("ignore", message="Explicitly requested dtype float64 requested in astype",
                                category=UserWarning)
        yield


class Lowered:
    """A private, patched copy of a family's model, and what its programs are traced with.

    Each family's lowering (windows.WindowLowered, feat_cache.FeatCacheLowered, cogvideox.LoweredVAE) derives
    from this one and adds only its step functions: pure functions of JAX arrays (weights, input, cache) that
    run one encoder or decoder call of diffusers' own forward on torchax tensors.

    Args:
        vae: the user's model (left untouched; `private_copy` is what gets the patches).
        mesh: the ('dp', 'tp') mesh whose activations are marked inside the programs (torchax_vae/patches/sharding_marks.py).
        platform: the JAX platform the programs are for (default: JAX's default backend): its row of
            torchax_vae/placement/backends.py decides the trace options.
        marked: the family's layers whose activations get sharding marks.
        spatial_ratio: the encoder's spatial compression (a program's sharding grid).
        rank: of the family's activations: 5 video, 4 images (what the sharding marks mark).
        rows_only: the programs split the height alone (`torchax_vae.placement.mesh.program_grid`).
    """

    # Per-frame convolutions (torchax_vae/patches/frame_conv.py, the CPU backend's `cpu_kernels`) in fp32 programs too. They
    # accumulate in fp32, so every family takes them on CPU in bf16 (the tiny Wan's bf16 encode: 2.21x PyTorch
    # bf16's error stock, 1.61x by frames). In fp32 XLA:CPU's stock 3-D convolution is the faster one for whole
    # chunks and clips (Wan 2.1's 9x64x96 decode: 3.28 s against 6.21 s by frames; HunyuanVideo's 3 latent frames at
    # 8x12: 16.1 s against 63.8 s), so only CogVideoX's layer programs, faster by frames, take them in fp32.
    frame_conv_in_fp32 = False
    # GroupNorm sums as dots where the backend asks for it (torchax_vae/patches/group_norm.py: a libtpu layout bug that Mochi's
    # and EasyAnimate's norms met)
    dot_statistics = False

    def __init__(self, vae: nn.Module, mesh=None, platform: str | None = None, marked: tuple = (),
                 spatial_ratio: int = 1, rank: int = 5, rows_only: bool = False):
        self.model = private_copy(vae)
        self.patch_counts = patches.apply(self.model, marked)
        self.env = patches.import_torchax().default_env()
        self.mesh = mesh
        self.platform = platform or jax.default_backend()
        self.spatial_ratio = spatial_ratio
        self.rank = rank
        self.rows_only = rows_only

    def _tracing(self, dtype, shape, ratio: int, **options):
        """The trace context of a program whose input (a JAX dtype, a shape) is divided by `ratio` down to the
        latents; options: the family's own (a tile's extent)."""
        row = backend(self.platform)
        frame_conv = row.cpu_kernels and (self.frame_conv_in_fp32 or dtype == jnp.bfloat16)
        return tracing(self.env, patches.options.TraceOptions.for_platform(
            self.platform,
            cpu_kernels=frame_conv,
            mesh=self.mesh,
            grid=grid_for(self.mesh, shape, ratio, self.rows_only),
            dot_statistics=self.dot_statistics and row.groupnorm_as_dots,
            rank=self.rank,
            **options,
        ))

    def _call(self, child: str, weights, *args, **kwargs):
        """One top-level child of the model (the encoder, quant_conv, ...) on torchax tensors, with `weights`."""
        return torch.func.functional_call(getattr(self.model, child), weights[child], args, kwargs)


class OneChildLowered(Lowered):
    """A family whose encode and decode are each one call of one top-level child (its `encoder`, its `decoder`) on
    the whole input: each program is that child, pure in JAX arrays."""

    def encode_step(self, weights, x):
        return self._child_step("encoder", weights, x, self.spatial_ratio)

    def decode_step(self, weights, latents):
        return self._child_step("decoder", weights, latents, 1)

    def _child_step(self, child: str, weights, x, ratio: int):
        """`child` on `x`, whose spatial size is `ratio` x the latents' (a mesh's grid)."""
        dtype = x.dtype
        weights, x = self.env.j2t_iso((weights, x))
        with self._tracing(dtype, x.shape, ratio):
            out = self._call(child, weights, x)
        return self.env.t2j_iso(out)
