"""The GPU convolution rule itself (torchax_vae/patches/gpu_conv.py says why): a pointwise convolution as a matmul, any other in
pieces whose operands stay under 2^31 bytes, and torchax's own lowering (`stock`) as the plain reference.

Plain functions of JAX arrays, below both hooks that use them: torchax_vae/patches/gpu_conv.py (every convolution of a GPU
trace) and torchax_vae/patches/halo_conv.py (each device's shard of a split one).
"""

import math

import jax
import jax.numpy as jnp

from torchax_vae.placement.backends import GPU_CONV_LIMIT as LIMIT
from torchax_vae.patches.torchax_torch213 import import_torchax

__all__ = ["LIMIT", "bounded", "gpu_conv", "is_pointwise", "pointwise", "stock"]


def stock(x, w, b, stride, padding, dilation, groups):
    """torchax's lowering of a (non-transposed) F.conv2d / F.conv3d: one `conv_general_dilated`."""
    import_torchax()  # before torchax.ops: under torch 2.13 torchax 0.0.13 needs torchax_vae/patches/torchax_torch213.py
    from torchax.ops import jaten

    return jaten._aten_convolution(x, w, b, stride, padding, dilation, False, (0,) * len(stride), groups)


def _nbytes(shape, dtype) -> int:
    return math.prod(shape) * jnp.dtype(dtype).itemsize


def _out_extent(size, k, s, p, d) -> int:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def is_pointwise(w, stride, padding, groups) -> bool:
    return all(k == 1 for k in w.shape[2:]) and all(s == 1 for s in stride) and not any(padding) and groups == 1


def pointwise(x, w, b):
    """A 1x..x1 convolution of N C *S input as one matmul over channels (what XLA:GPU gives to cuBLAS)."""
    y = jax.lax.dot_general(w.reshape(w.shape[:2]), x, (((1,), (1,)), ((), ())))  # O, N, *S
    y = jnp.moveaxis(y, 0, 1)
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * (x.ndim - 2)).astype(y.dtype)
    return y


def bounded(x, w, b, stride, padding, dilation, groups, limit=LIMIT):
    """`stock`, in pieces whose input and output stay below `limit` bytes where it can (module docstring)."""
    spatial = x.shape[2:]
    out_spatial = tuple(map(_out_extent, spatial, w.shape[2:], stride, padding, dilation))
    out_shape = (x.shape[0], w.shape[0], *out_spatial)
    if _nbytes(x.shape, x.dtype) < limit and _nbytes(out_shape, x.dtype) < limit:
        return stock(x, w, b, stride, padding, dilation, groups)
    args = (w, b, stride, padding, dilation, groups, limit)
    if x.shape[0] > 1:  # batch pieces: independent
        per_item = max(_nbytes(x.shape[1:], x.dtype), _nbytes(out_shape[1:], x.dtype))
        size = max(1, (limit - 1) // per_item)
        pieces = [bounded(x[i : i + size], *args) for i in range(0, x.shape[0], size)]
        return jnp.concatenate(pieces, axis=0)
    if out_spatial[0] == 1:
        return stock(x, w, b, stride, padding, dilation, groups)  # one frame (or row) past the limit: nothing to split
    # pieces of one batch element along the first spatial axis (time; an image's rows: SDXL's 2048x2048 decoder has
    # 2 GiB operands): pad it once, then each piece reads its frames (rows) and the kernel's overlap
    (kt, st, pt, dt), t_out = (w.shape[2], stride[0], padding[0], dilation[0]), out_spatial[0]
    if pt:
        x = jnp.pad(x, ((0, 0), (0, 0), (pt, pt)) + ((0, 0),) * (x.ndim - 3))
    frame_in, frame_out = _nbytes(x.shape[3:], x.dtype) * x.shape[1], _nbytes(out_spatial[1:], x.dtype) * w.shape[0]
    span = lambda count: st * (count - 1) + dt * (kt - 1) + 1  # noqa: E731 (input frames of `count` output frames)
    count = max([c for c in range(1, t_out + 1) if span(c) * frame_in < limit and c * frame_out < limit] or [1])
    pieces = []
    for start in range(0, t_out, count):
        n = min(count, t_out - start)
        piece = jax.lax.slice_in_dim(x, start * st, start * st + span(n), axis=2)
        pieces.append(stock(piece, w, b, stride, (0, *padding[1:]), dilation, groups))
    return jnp.concatenate(pieces, axis=2)


def gpu_conv(x, w, b, stride, padding, dilation, groups, limit=LIMIT):
    """The GPU rule for one non-transposed convolution: a matmul if pointwise, else `bounded`."""
    if is_pointwise(w, stride, padding, groups):
        return pointwise(x, w, b)
    return bounded(x, w, b, stride, padding, dilation, groups, limit)
