"""Long attention in blocks of queries, so that its scores never exist whole.

Upstream: torchax lowers `F.scaled_dot_product_attention` as softmax(q k^T) v
(`torchax/ops/jtorch.py::_sdpa_reference`), which materializes the whole
[B, heads, queries, keys] score matrix. AutoencoderKL's mid-block attention is
one head over every latent position: a 2048 x 2048 SDXL or Flux image has
256 x 256 latents, 65,536 tokens, so 8 GiB of bf16 scores (16 GiB in fp32),
past a v5e chip's 16 GiB with the rest of the decoder.

Here, while tracing a program whose attention's scores would pass the backend
table's `attention_score_limit` (torchax_vae/placement/backends.py), the queries run in
blocks under `jax.lax.map`: each block's scores, softmax and product with v,
one block after another, so at most one block's scores are live. On a mesh
(`attention_split`) the blocks are the same as on one device and each block's
queries are split over the devices, so each holds 1/n of a block. Each softmax
row needs only its own scores, so the result is the stock one up to the order
of its sums (tests/test_patches.py compares them). Queries pad to a whole
number of blocks with zero rows, whose outputs are dropped.

Left to the stock lowering: masks, dropout, causal attention and grouped
heads (no family here meets a long one).

No fused kernel: cuDNN's flash attention takes head dimensions up to 256 and
AutoencoderKL's head is 512 wide (its mid block's channels); a TPU kernel is
unverified without a TPU. The blocks are plain XLA on every backend.
"""

import functools
import math

import jax
import jax.numpy as jnp

from torchax_vae.patches.options import current
from torchax_vae.patches.torchax_torch213 import import_torchax


def block_rows(shape_q, keys: int, itemsize: int, limit: int | None) -> int | None:
    """Queries per block so that one block's scores stay within `limit` bytes; None: the whole attention fits."""
    batch, heads, queries, _ = shape_q
    per_query = batch * heads * keys * itemsize
    if limit is None or per_query * queries <= limit:
        return None
    return max(1, min(queries, limit // per_query))


@functools.partial(jax.jit, static_argnames=("scale", "rows", "sharding"))
def blocked_attention(q, k, v, *, scale: float, rows: int, sharding=None):
    """softmax(q k^T x scale) v over [B, heads, tokens, dim] arrays, `rows` queries at a time; with `sharding` (of a
    [B, heads, rows, dim] block: attention_split's query split), each block's rows are split over the devices too."""
    batch, heads, queries, dim = q.shape
    count = -(-queries // rows)
    q = jnp.pad(q, ((0, 0), (0, 0), (0, count * rows - queries), (0, 0)))
    blocks = q.reshape(batch, heads, count, rows, dim).transpose(2, 0, 1, 3, 4)

    def split(x):
        return x if sharding is None else jax.lax.with_sharding_constraint(x, sharding)

    def one(block):
        block = split(block)
        weights = jax.nn.softmax(jnp.einsum("bhqd,bhkd->bhqk", block, k) * jnp.asarray(scale, q.dtype), axis=-1)
        return split(jnp.einsum("bhqk,bhkd->bhqd", weights, v))

    out = jax.lax.map(one, blocks)  # [count, B, heads, rows, dim], one block live at a time
    return out.transpose(1, 2, 0, 3, 4).reshape(batch, heads, count * rows, dim)[:, :, :queries]


def in_blocks(stock_func):
    """`stock_func` (torchax's lowering), with long unmasked attention computed in query blocks."""

    def lowering(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False,
                 **extra):  # extra: what torchax passes its lowerings (env)
        rows = blockable_rows(query, key, attn_mask, dropout_p, is_causal, enable_gqa)
        if rows is None:
            return stock_func(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, **extra)
        return run_blocked(query, key, value, scale, rows)

    return lowering


def blockable_rows(query, key, attn_mask=None, dropout_p=0.0, is_causal=False, enable_gqa=False, shards: int = 1):
    """Queries per block for a torch SDPA call this module computes in blocks (over `shards` devices, a multiple of
    them: the same blocks as on one device, each split), or None: the stock lowering."""
    simple = attn_mask is None and not dropout_p and not is_causal and not enable_gqa and query.ndim == 4
    if not simple:
        return None
    rows = block_rows(tuple(query.shape), key.shape[-2], query.element_size(), current().attention_score_limit)
    return None if rows is None else max(shards, rows // shards * shards)


def run_blocked(query, key, value, scale, rows: int, sharding=None):
    """blocked_attention on torch tensors (a torchax trace's)."""
    scale = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    run = import_torchax().interop.torch_view(functools.partial(blocked_attention, scale=scale, rows=rows,
                                                                sharding=sharding))
    return run(query, key, value)
