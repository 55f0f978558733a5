"""Spatial attention on a mesh: each device takes a share of the queries, not the whole attention.

Upstream: torchax lowers `F.scaled_dot_product_attention` (Wan's and
Qwen-Image's `WanAttentionBlock`, HunyuanVideo's mid-block `Attention`) to
softmax(q k^T) v over [B, heads, tokens, dim] arrays. Our activations are split
over a height x width grid (torchax_vae/patches/sharding_marks.py), but the attention
flattens height and width into one token axis, which no grid sharding maps
onto, so XLA gathered q, k and v and ran the whole attention on every device:
the mid block's scores, tokens^2 per frame, computed n times. Compiled offline
for v6e-8, that capped the sharding efficiency at 0.86 (Wan 2.1 720p) and 0.75
(Qwen-Image 1328x1328, HunyuanVideo): issue 27.

Here: while tracing for a mesh (`TraceOptions.mesh`), the queries' token axis
is split over all the devices of the activations' spatial split, the keys and
values are whole on every device (one all-gather each), and the output keeps
the queries' split. Each device computes its rows of the scores and of the
softmax, which is exact: a softmax row needs only its own scores. Per device,
score memory and FLOPs fall n-fold. Tokens that do not divide by n are padded
with zero queries (and mask rows that mask nothing) to a multiple of n, and
the extra output rows dropped: Qwen-Image's 166 x 166 latents are 27556
tokens, which only 4 of 8 devices divide (0.79 split 4-way, 0.89 padded to
8, compiled for v6e-8). Traces without a mesh keep torchax's lowering.

Any attention with at least one query per device is split: even where the
scores are small beside q, k and v (Qwen-Image 2.1's 64 x 64 latents of 1152
channels), the replicated attention cost its decode's efficiency on v6e-8
(0.85 unsplit). Compiled for v6e-8 (offline, not run on a TPU): Wan 2.1 720p 0.86 ->
0.92, HunyuanVideo 0.75 -> 0.93, Qwen-Image 0.75 -> 0.89 (docs/results/tpu.md).
XLA:CPU note: on one CPU device the whole attention becomes one YNNPACK
fusion whose scores its memory analysis does not count, so CPU temp figures
understate one device's attention (the 8-device test compares TPU compiles).
Still needed while torchax's lowering has no sharding of its own
(tests/test_patches.py::test_attention_split_*).
"""

import dataclasses
import functools

import jax
import torch
from jax.sharding import NamedSharding, PartitionSpec

from torchax_vae.placement.mesh import attention_axes, fine_mesh
from torchax_vae.patches.attention_blocks import blockable_rows, in_blocks, run_blocked
from torchax_vae.patches.options import current
from torchax_vae.patches.torchax_torch213 import import_torchax

# the two registrations of torchax's lowering (torchax/ops/jtorch.py)
KEYS = (torch.nn.functional.scaled_dot_product_attention, torch.ops.aten.scaled_dot_product_attention)


def query_split(mesh, shape) -> tuple[PartitionSpec, int] | None:
    """(the split of a [B, heads, tokens, dim] query on `mesh`'s fine mesh, the padded token count), or None."""
    batch, _, tokens, _ = shape
    batch_axes, token_axes, shards = attention_axes(mesh, batch)
    if token_axes is None or tokens < shards:  # fewer queries than devices: nothing worth splitting
        return None
    return PartitionSpec(batch_axes, None, token_axes, None), -(-tokens // shards) * shards


def split_attention(stock_func, whole_func=None):
    """`stock_func` (torchax's lowering) with the queries split over the mesh while tracing for one; attention it
    does not split goes to `whole_func` (default `stock_func`: `attention_blocks.in_blocks` of it)."""
    whole_func = whole_func or stock_func

    def lowering(query, key, value, *args, **kwargs):
        options = current()
        if query.ndim == key.ndim == value.ndim == 3 and _sdpa_arguments(args, kwargs)["attn_mask"] is None:
            # one head without a heads axis (AutoencoderKLHunyuanImage's [B, tokens, C]): split and block it as
            # [B, 1, tokens, C]
            return lowering(query[:, None], key[:, None], value[:, None], *args, **kwargs)[:, 0]
        if options.mesh is None or query.ndim != 4 or key.ndim != 4:
            return whole_func(query, key, value, *args, **kwargs)
        split = query_split(options.mesh, tuple(query.shape))
        if split is None:
            return whole_func(query, key, value, *args, **kwargs)
        spec, padded = split
        fine = fine_mesh(options.mesh)
        rows = _constrain(NamedSharding(fine, spec))
        whole = _constrain(NamedSharding(fine, PartitionSpec(spec[0])))
        sdpa = _sdpa_arguments(args, kwargs)
        block = blockable_rows(query, key, sdpa["attn_mask"], sdpa["dropout_p"], sdpa["is_causal"], sdpa["enable_gqa"],
                               shards=_devices(fine, spec[2]))
        if block is not None:  # long: the same query blocks as on one device, each block's rows split over the devices
            return run_blocked(query, whole(key), whole(value), sdpa["scale"], block, NamedSharding(fine, spec))
        tokens = query.shape[2]
        if padded > tokens:  # extra query rows (zeros) make the split even; their outputs are dropped
            query = torch.nn.functional.pad(query, (0, 0, 0, padded - tokens))
            args, kwargs = _padded_mask(args, kwargs, tokens, padded)
        out = rows(stock_func(rows(query), whole(key), whole(value), *args, **kwargs))
        return out[:, :, :tokens] if padded > tokens else out

    lowering.torchax_vae_stock = stock_func
    return lowering


_SDPA_ARGUMENTS = (("attn_mask", None), ("dropout_p", 0.0), ("is_causal", False), ("scale", None), ("enable_gqa", False))


def _sdpa_arguments(args, kwargs) -> dict:
    """F.scaled_dot_product_attention's arguments after query, key and value, by name, given or default."""
    return {name: args[i] if i < len(args) else kwargs.get(name, default)
            for i, (name, default) in enumerate(_SDPA_ARGUMENTS)}


def _devices(mesh, axes) -> int:
    """How many devices a PartitionSpec entry (an axis name, a tuple of them, or None) splits over."""
    names = () if axes is None else (axes,) if isinstance(axes, str) else tuple(axes)
    count = 1
    for name in names:
        count *= mesh.shape[name]
    return count


def _padded_mask(args, kwargs, tokens: int, padded: int):
    """The call's arguments with an attention mask that has a row per query padded by rows that mask nothing."""
    in_args = bool(args)
    mask = args[0] if in_args else kwargs.get("attn_mask")
    if mask is None or mask.ndim < 2 or mask.shape[-2] != tokens:
        return args, kwargs  # none, or one row broadcast to every query
    pad = (0, 0, 0, padded - tokens)  # the last two axes: keys (none), queries (at the end)
    mask = torch.nn.functional.pad(mask, pad, value=True if mask.dtype == torch.bool else 0.0)
    if in_args:
        return (mask, *args[1:]), kwargs
    return args, {**kwargs, "attn_mask": mask}


@functools.lru_cache(maxsize=64)
def _constrain(sharding):
    return import_torchax().interop.torch_view(lambda x: jax.lax.with_sharding_constraint(x, sharding))


def patch_env(env) -> int:
    """Wraps torchax's lowering of F.scaled_dot_product_attention and aten.scaled_dot_product_attention in `env`;
    how many it wrapped (0 if done before)."""
    count = 0
    for key in KEYS:
        op = env._ops.get(key)
        if op is None or hasattr(op.func, "torchax_vae_stock"):
            continue
        # queries split over a mesh's devices; attention not split (one device), if long, in query blocks
        env._ops[key] = dataclasses.replace(op, func=split_attention(op.func, in_blocks(op.func)),
                                            is_user_defined=True)
        count += 1
    return count


def patch() -> int:
    """`patch_env` on torchax's default environment (the one every lowering here traces in)."""
    return patch_env(import_torchax().default_env())
