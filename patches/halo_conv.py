"""On GPU meshes: a convolution of a spatially split activation as each device's own convolution plus its
neighbours' edge terms, with no halo-padded copy.

Upstream: torchax lowers a convolution to one `conv_general_dilated`, and XLA's
SPMD partitioner splits it by exchanging halos: each device builds a copy of
its shard padded with its neighbours' edge columns, and a `pred` mask of the
same extent that zeroes the padding on the edge devices, then convolves that
copy without padding. On one GPU cuDNN pads inside the kernel, so neither
buffer exists. The copy and the mask are live beside the shard, which is why
two H100s kept more than half of one H100's memory (docs/plan.md): a Wan
residual block at 704x1280 (two 3x3x3 convolutions of 512 and 256 channels
with their cached frames) needed 1.72 GiB of temp per GPU on two H100s
against 1.29 GiB on one; this way 0.65 GiB.

Here, while tracing for a GPU mesh (`TraceOptions.halo_conv`), a stride-1
convolution with "same" padding (2p = k - 1) along each split axis of its
input (height, width or both: `torchax_vae.mesh.sharding_for`) runs in a
`shard_map`. Convolution is linear, so with the shard's true surroundings
written as the shard padded with zeros plus a frame of neighbours' values:

    y = conv(shard, zero padding)              # cuDNN pads, as on one GPU
        + conv(top band) + conv(bottom band)   # p rows from the devices above and below
        + conv(left band) + conv(right band)   # p columns (with the corners) from the left and right

Each band is p rows (columns) of neighbour values next to p of zeros, a few
pixels thin, and its convolution touches only the p output rows (columns)
at that edge, where it is added in place. Edge devices receive zeros from
`ppermute`, which is the zero padding. The result equals the unsplit
convolution up to the summation order at the edges (tests/test_halo_conv.py
against `stock` on the 8-device CPU mesh).

HunyuanVideo's and HunyuanVideo 1.5's causal convolutions pad all three axes by
replication (`F.pad(mode="replicate")`) and convolve without padding; on a
GPU mesh their forward pads only time and hands height and width to the same
split with replicated edges (the first and last devices' halo is their own
edge row or column repeated; `replicate_conv`).

Other convolutions (strided, dilated, one-sided padding along a split axis)
keep XLA's partitioner. TPUs keep it too: their compiler pads without a copy
of this size (sharding efficiency 0.92-0.99 on v6e-8, docs/tpu.md).
"""

import functools

import jax
import jax.numpy as jnp
from diffusers.models.autoencoders.autoencoder_kl_hunyuan_video import HunyuanVideoCausalConv3d
from diffusers.models.autoencoders.autoencoder_kl_hunyuanvideo15 import HunyuanVideo15CausalConv3d
from jax.sharding import PartitionSpec
from torch import nn
from torch.nn import functional as F

from ..mesh import sharding_for
from .options import current
from .torchax_torch213 import import_torchax

REPLICATE = (HunyuanVideoCausalConv3d, HunyuanVideo15CausalConv3d)  # replicate padding, then a Conv3d


def _spec(mesh, grid, shape):
    """The fine mesh and PartitionSpec the activation marks give an input of `shape` (4-D: frames in the batch)."""
    if len(shape) == 5:
        sharding = sharding_for(mesh, shape, grid)
        return sharding.mesh, tuple(sharding.spec) + (None,) * (5 - len(sharding.spec))
    if len(shape) == 4:
        sharding = sharding_for(mesh, (shape[0], shape[1], 1, shape[2], shape[3]), grid)
        spec = tuple(sharding.spec) + (None,) * (5 - len(sharding.spec))
        return sharding.mesh, (spec[0], spec[1], spec[3], spec[4])
    return None, None


def _names(entry) -> tuple:
    return () if entry is None else entry if isinstance(entry, tuple) else (entry,)


def _count(mesh, names) -> int:
    n = 1
    for name in names:
        n *= mesh.shape[name]
    return n


def plan(mesh, grid, x_shape, w_shape, stride, padding, dilation):
    """(fine mesh, spec, {axis: (mesh axis names, shards, p)}) for a convolution this patch splits, else None."""
    fine, spec = _spec(mesh, grid, x_shape)
    if spec is None:
        return None
    splits = {}
    for axis in (x_shape.__len__() - 2, x_shape.__len__() - 1):
        names = _names(spec[axis])
        shards = _count(fine, names)
        if shards == 1:
            continue
        i = axis - 2
        k, p = w_shape[2 + i], padding[i]
        if stride[i] != 1 or dilation[i] != 1 or 2 * p != k - 1 or x_shape[axis] // shards < p:
            return None
        if p:
            splits[axis] = (names, shards, p)
    if not splits:
        return None
    return fine, PartitionSpec(*spec), splits


def _shift(x, names, shards, forward):
    """Each device's x, received by its next (forward) or previous device along `names`; zeros at the end."""
    pairs = [(i, i + 1) for i in range(shards - 1)] if forward else [(i + 1, i) for i in range(shards - 1)]
    return jax.lax.ppermute(x, names, pairs)


def _take(x, axis, start, size):
    return jax.lax.slice_in_dim(x, start, start + size, axis=axis)


def _band(halo, axis, p, before):
    """p halo rows (columns) beside p zeros: the halo on the far side of the shard's edge."""
    zeros = jnp.zeros_like(halo)
    return jnp.concatenate([halo, zeros] if before else [zeros, halo], axis=axis)


def _edge(x, axis, p, first):
    """x's first (last) row or column along `axis`, repeated p times: replicate padding's halo."""
    return jnp.repeat(_take(x, axis, 0 if first else x.shape[axis] - 1, 1), p, axis=axis)


def _at_ends(halo, replacement, names, shards, first):
    """`halo`, replaced by `replacement` on the first (last) device along `names`."""
    index = jax.lax.axis_index(names)
    return jnp.where(index == (0 if first else shards - 1), replacement, halo)


def sharded(conv, x, w, b, stride, padding, dilation, groups, mesh, grid, mode="zeros"):
    """`conv(x, w, b, stride, padding, dilation, groups)` of a split x (module docstring), or None where this
    patch does not apply (the caller then lets XLA partition `conv`).

    mode: the padding of height and width, "zeros" (the convolution's own) or "edge" (replicate: the halo of
    the first and last devices is their edge repeated; `conv` itself still pads with zeros).
    """
    planned = plan(mesh, grid, x.shape, w.shape, stride, padding, dilation)
    if planned is None:
        return None
    fine, spec, splits = planned
    ndim = x.ndim
    h_axis, w_axis = ndim - 2, ndim - 1

    # Replicate padding of an axis that is not split: its halo is the shard's own edge (a band, like a split
    # axis's), or, where the convolution is not "same" along it, explicit `jnp.pad` before the convolution.
    own_edges, edged = [], []
    for axis in (h_axis, w_axis):
        i = axis - 2
        if mode != "edge" or axis in splits or not padding[i]:
            continue
        same = stride[i] == 1 and dilation[i] == 1 and 2 * padding[i] == w.shape[axis] - 1
        (own_edges if same else edged).append(axis)
    own = tuple(0 if 2 + i in edged else p for i, p in enumerate(padding))

    def padded(axis_pads):
        """The convolution's padding with some axes' replaced (axis -> (lo, hi))."""
        return [axis_pads.get(2 + i, (p, p)) for i, p in enumerate(own)]

    def band_conv(band, w, axis_pads):
        return jax.lax.conv_general_dilated(
            band, w, (1,) * (ndim - 2), padded(axis_pads), feature_group_count=groups,
            dimension_numbers=("NCDHW", "OIDHW", "NCDHW") if ndim == 5 else ("NCHW", "OIHW", "NCHW"),
        ).astype(x.dtype)

    def halos(x, axis, before_edge, after_edge):
        """The p rows (columns) beyond each side of x's edges along `axis`: the neighbours', or the edge's."""
        if axis in splits:
            names, shards, p = splits[axis]
            before = _shift(_take(before_edge, axis, before_edge.shape[axis] - p, p), names, shards, forward=True)
            after = _shift(_take(after_edge, axis, 0, p), names, shards, forward=False)
            if mode == "edge":
                before = _at_ends(before, _edge(after_edge, axis, p, first=True), names, shards, first=True)
                after = _at_ends(after, _edge(before_edge, axis, p, first=False), names, shards, first=False)
            return before, after, p
        p = padding[axis - 2]
        return _edge(after_edge, axis, p, first=True), _edge(before_edge, axis, p, first=False), p

    def body(x, w, b):
        for axis in edged:
            x = jnp.pad(x, [(0, 0)] * axis + [(padding[axis - 2],) * 2] + [(0, 0)] * (ndim - 1 - axis), mode="edge")
        y = conv(x, w, b, stride, own, dilation, groups)
        bands = {}
        if h_axis in splits or h_axis in own_edges:
            bands[h_axis] = halos(x, h_axis, x, x)
        if w_axis in splits or w_axis in own_edges:
            p = splits[w_axis][2] if w_axis in splits else padding[w_axis - 2]
            last, first = _take(x, w_axis, x.shape[w_axis] - p, p), _take(x, w_axis, 0, p)
            if h_axis in bands:  # the corners: the columns carry the rows above and below
                top, bottom, _ = bands[h_axis]
                last = jnp.concatenate([_take(top, w_axis, top.shape[w_axis] - p, p), last,
                                        _take(bottom, w_axis, bottom.shape[w_axis] - p, p)], axis=h_axis)
                first = jnp.concatenate([_take(top, w_axis, 0, p), first, _take(bottom, w_axis, 0, p)], axis=h_axis)
            bands[w_axis] = halos(x, w_axis, last, first)
        for axis, (before, after, p) in bands.items():
            # across the band: valid; along the other banded axis: the columns with corners are already there
            other = {a: (0, 0) for a in bands if a != axis and axis == w_axis}
            lo = band_conv(_band(before, axis, p, before=True), w, {axis: (0, p), **other})
            hi = band_conv(_band(after, axis, p, before=False), w, {axis: (p, 0), **other})
            start = [0] * ndim
            y = jax.lax.dynamic_update_slice(y, _take(y, axis, 0, p) + lo, start)
            start[axis] = y.shape[axis] - p
            y = jax.lax.dynamic_update_slice(y, _take(y, axis, y.shape[axis] - p, p) + hi, start)
        return y

    if b is None:
        return jax.shard_map(lambda x, w: body(x, w, None), mesh=fine, in_specs=(spec, PartitionSpec()),
                             out_specs=spec, check_vma=False)(x, w)
    return jax.shard_map(body, mesh=fine, in_specs=(spec, PartitionSpec(), PartitionSpec()), out_specs=spec,
                         check_vma=False)(x, w, b)


def replicate_conv(x, w, b, stride, padding, dilation, groups):
    """A convolution of x replicate-padded by padding[-2:] in height and width (zeros by padding[:-2] before
    them), split as `sharded` on the trace's mesh where it can be, else padded with `jnp.pad` first."""
    from . import gpu_conv  # gpu_conv routes torchax's convolutions here: imported when first used

    options = current()
    local = functools.partial(gpu_conv.gpu_conv, limit=options.gpu_conv_limit)
    if options.mesh is not None:
        split = sharded(local, x, w, b, stride, padding, dilation, groups, options.mesh, options.grid, mode="edge")
        if split is not None:
            return split
    edges = [(0, 0)] * (x.ndim - 2) + [(p, p) for p in padding[-2:]]
    x = jnp.pad(x, edges, mode="edge")
    return local(x, w, b, stride, tuple(padding[:-2]) + (0, 0), dilation, groups)


@functools.cache
def _torch_replicate_conv():
    return import_torchax().interop.torch_view(replicate_conv)


def _replicate_forward(self, hidden_states):
    """HunyuanVideo's causal convolution; on a GPU mesh its height and width padding goes to `replicate_conv`."""
    options, pads, conv = current(), self.time_causal_padding, self.conv
    if (not options.halo_conv or options.mesh is None or self.pad_mode != "replicate" or pads[0] != pads[1]
            or pads[2] != pads[3] or isinstance(conv.padding, str) or any(conv.padding)):
        return super(_Replicated, self).forward(hidden_states)
    x = F.pad(hidden_states, (0, 0, 0, 0, pads[4], pads[5]), mode="replicate")  # time alone
    return _torch_replicate_conv()(x, conv.weight, conv.bias, tuple(conv.stride), (0, pads[2], pads[0]),
                                   tuple(conv.dilation), conv.groups)


class _Replicated:
    """Marks the classes `patch` makes (and finds diffusers' forward after it in the MRO)."""


@functools.cache
def _replicated(cls: type) -> type:
    return type(f"Halo{cls.__name__}", (_Replicated, cls), {"forward": _replicate_forward, "__module__": __name__})


def patch(model: nn.Module) -> int:
    """Gives HunyuanVideo's (and 1.5's) causal convolutions of `model` the forward above; returns how many.

    Outside GPU mesh traces that forward is diffusers'. (Every other convolution reaches `sharded` through
    patches/gpu_conv.py's lowering hook.)
    """
    count = 0
    for module in model.modules():
        if isinstance(module, REPLICATE) and not isinstance(module, _Replicated):
            module.__class__ = _replicated(type(module))
            count += 1
    return count
