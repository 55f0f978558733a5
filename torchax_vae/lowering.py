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
import torch
from torch import nn

from . import convert, patches


def private_copy(model: nn.Module) -> nn.Module:
    """A deep copy of `model` whose parameters and buffers are storage-less meta tensors."""
    memo = {}
    for t in itertools.chain(model.parameters(), model.buffers()):
        meta = torch.empty_like(t, device="meta")
        memo[id(t)] = nn.Parameter(meta, requires_grad=False) if isinstance(t, nn.Parameter) else meta
    clone = copy.deepcopy(model, memo)
    clone.eval()
    return clone


def jax_weights(model: nn.Module, dtype, device=None) -> dict[str, dict[str, jax.Array]]:
    """Copies of the model's parameters and buffers as JAX arrays, grouped by top-level child.

    A model on the meta device (any of its tensors) gives their shapes only (jax.ShapeDtypeStruct): enough to
    lower and compile.
    """
    grouped: dict[str, dict[str, jax.Array]] = {}
    tensors = list(itertools.chain(model.named_parameters(), model.named_buffers()))
    # A model built under torch.device("meta") may keep constants made outside it (Cosmos's wavelets, cloned
    # from a module-level tensor) on the CPU: shapes only for those too, as the model is for planning.
    planning = any(t.is_meta for _, t in tensors)
    for name, t in tensors:
        child, _, rest = name.partition(".")
        cast = dtype if t.is_floating_point() else None
        if planning:
            # an integer buffer (Cosmos's wavelet `_arange`) as a real one arrives: int64 as JAX's int32
            kind = convert.jax_dtype(t.dtype) if t.is_floating_point() else jax.dtypes.canonicalize_dtype(
                torch.empty((), dtype=t.dtype).numpy().dtype)
            shape_only = jax.ShapeDtypeStruct(tuple(t.shape), cast or kind, sharding=device)
            grouped.setdefault(child, {})[rest] = shape_only
            continue
        grouped.setdefault(child, {})[rest] = convert.to_jax(t, cast, device)
    return grouped


def grid_for(mesh, shape, ratio: int):
    """The height x width split (`torchax_vae.mesh.program_grid`) of a program whose input has `shape`
    (N, C, [T,] H, W); ratio: what divides that input's height and width down to the program's smallest
    level, the latents (the encoder's spatial compression; 1 for a decoder, whose input is the latents)."""
    from .mesh import program_grid

    return program_grid(mesh, shape[0], shape[-2] // ratio, shape[-1] // ratio)


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
