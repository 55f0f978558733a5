"""On GPU meshes: a convolution of a spatially split activation as each device's own convolution plus its
neighbours' edge terms, with no halo-padded copy.

Upstream: torchax lowers a convolution to one `conv_general_dilated`, and XLA's
SPMD partitioner splits it by exchanging halos: each device builds a copy of
its shard padded with its neighbours' edge columns, and a `pred` mask of the
same extent that zeroes the padding on the edge devices, then convolves that
copy without padding. On one GPU cuDNN pads inside the kernel, so neither
buffer exists. The copy and the mask are live beside the shard, which is why
two H100s kept more than half of one H100's memory (docs/guide/plan.md): a Wan
residual block at 704x1280 (two 3x3x3 convolutions of 512 and 256 channels
with their cached frames) needed 1.72 GiB of temp per GPU on two H100s
against 1.29 GiB on one; this way 0.65 GiB.

Here, while tracing for a GPU mesh (`TraceOptions.halo_conv`), a stride-1
convolution with "same" padding (2p = k - 1) along each split axis of its
input (height, width or both: `torchax_vae.placement.mesh.sharding_for`) runs in a
`shard_map`. Convolution is linear, so with the shard's true surroundings
written as the shard padded with zeros plus a frame of neighbours' values:

    y = conv(shard, zero padding)              # cuDNN pads, as on one GPU
        + conv(top band) + conv(bottom band)   # p rows from the devices above and below
        + conv(left band) + conv(right band)   # p columns (with the corners) from the left and right

Each band is p rows (columns) of neighbour values next to k - 1 zeros, a few
pixels thin, and its convolution touches only the p output rows (columns)
at that edge, where it is added in place (XLA fuses it as cuDNN's side
input). Edge devices receive zeros from `ppermute`, which is the zero
padding. The result equals the unsplit convolution up to the summation order
at the edges (tests/_sharded_worker.py `halo_convolutions` against `stock`
on the 8-device CPU mesh).

HunyuanVideo's, HunyuanVideo 1.5's and HunyuanImage 2.1's refiner's causal convolutions (and Mochi's, CogVideoX's class with
`pad_mode="replicate"`) pad all three axes by
replication (`F.pad(mode="replicate")`) and convolve without padding; on a
GPU mesh their forward pads only time and hands height and width to the same
split with replicated edges (`replicate_conv`): the first and last devices'
halo is their own edge row or column repeated, and an axis that is not split
gets its edge as a band on every device, so no padded copy of the shard is
made. (Time stays `jnp.pad`: a causal (2, 0) band would need the shard's own
convolution padded (2, 0), for which XLA:GPU pads the input explicitly.)

Other convolutions (strided, dilated, one-sided padding along a split axis)
keep XLA's partitioner. TPUs keep it too: their compiler pads without a copy
of this size (sharding efficiency 0.92-0.99 on v6e-8, docs/results/tpu.md).
"""

import functools

import diffusers
import jax
import jax.numpy as jnp
from diffusers.models.autoencoders.autoencoder_kl_cogvideox import CogVideoXCausalConv3d
from diffusers.models.autoencoders.autoencoder_kl_hunyuan_video import HunyuanVideoCausalConv3d
from diffusers.models.autoencoders.autoencoder_kl_hunyuanvideo15 import HunyuanVideo15CausalConv3d
from jax.sharding import PartitionSpec
from torch import nn

from torchax_vae.patches import conv_rules
from torchax_vae.placement.mesh import sharding_for
from torchax_vae.patches.options import current
from torchax_vae.patches.refine import refine
from torchax_vae.patches.torchax_torch213 import import_torchax

# replicate padding, then a Conv3d: HunyuanVideo's, and CogVideoX's class in Mochi (pad_mode "replicate"); and
# HunyuanImage 2.1's refiner's (diffusers >= 0.42), the same layer: its one frame, padded to three, was split by
# XLA's partitioner with a halo-padded copy and a mask beside each shard (docs/limits.md)
REPLICATE = (HunyuanVideoCausalConv3d, HunyuanVideo15CausalConv3d, CogVideoXCausalConv3d)
if hasattr(diffusers, "AutoencoderKLHunyuanImageRefiner"):
    from diffusers.models.autoencoders.autoencoder_kl_hunyuanimage_refiner import HunyuanImageRefinerCausalConv3d

    REPLICATE += (HunyuanImageRefinerCausalConv3d,)


def _spec(mesh, grid, shape):
    """The fine mesh and PartitionSpec the activation marks give an input of `shape` (4-D: frames in the batch);
    (None, None) where they split it unevenly (a shard_map takes even blocks only: XLA's partitioner does it)."""
    if len(shape) not in (4, 5):
        return None, None
    full = shape if len(shape) == 5 else (shape[0], shape[1], 1, shape[2], shape[3])
    sharding = sharding_for(mesh, full, grid)
    if sharding != sharding_for(mesh, full, grid, uneven=True):
        return None, None
    spec = tuple(sharding.spec) + (None,) * (5 - len(sharding.spec))
    return sharding.mesh, spec if len(shape) == 5 else (spec[0], spec[1], spec[3], spec[4])


def _names(entry) -> tuple:
    return () if entry is None else entry if isinstance(entry, tuple) else (entry,)


def _count(mesh, names) -> int:
    n = 1
    for name in names:
        n *= mesh.shape[name]
    return n


def _pairs(padding) -> tuple:
    """Padding per spatial axis as (before, after) pairs (an int p is (p, p))."""
    return tuple((p, p) if isinstance(p, int) else tuple(p) for p in padding)


def _same(k, pads, stride, dilation) -> bool:
    """Whether a kernel of k taps with these pads keeps the extent (stride 1): a shard's output is its own rows."""
    return stride == 1 and dilation == 1 and pads[0] + pads[1] == k - 1


def plan(mesh, grid, x_shape, w_shape, stride, padding, dilation):
    """(fine mesh, spec, {axis: (mesh axis names, shards)}) for a convolution this patch splits, else None."""
    fine, spec = _spec(mesh, grid, x_shape)
    if spec is None:
        return None
    pairs, splits = _pairs(padding), {}
    for axis in (len(x_shape) - 2, len(x_shape) - 1):
        names = _names(spec[axis])
        shards = _count(fine, names)
        if shards == 1:
            continue
        i = axis - 2
        if not _same(w_shape[axis], pairs[i], stride[i], dilation[i]) or x_shape[axis] // shards < max(pairs[i]):
            return None
        if any(pairs[i]):
            splits[axis] = (names, shards)
    if not splits:
        return None
    return fine, PartitionSpec(*spec), splits


def _shift(x, names, shards, forward):
    """Each device's x, received by its next (forward) or previous device along `names`; zeros at the end."""
    pairs = [(i, i + 1) for i in range(shards - 1)] if forward else [(i + 1, i) for i in range(shards - 1)]
    return jax.lax.ppermute(x, names, pairs)


def _take(x, axis, start, size):
    return jax.lax.slice_in_dim(x, start, start + size, axis=axis)


def _band(halo, axis, k, before):
    """A halo beside k - 1 zeros (on the shard's side): convolved without padding along `axis`, it gives the
    halo's terms of the outputs at that edge, one per halo row (column)."""
    zeros = jnp.zeros(halo.shape[:axis] + (k - 1,) + halo.shape[axis + 1:], halo.dtype)
    return jnp.concatenate([halo, zeros] if before else [zeros, halo], axis=axis)


def _at_ends(halo, replacement, names, shards, first):
    """`halo`, replaced by `replacement` on the first (last) device along `names`."""
    index = jax.lax.axis_index(names)
    return jnp.where(index == (0 if first else shards - 1), replacement, halo)


def sharded(conv, x, w, b, stride, padding, dilation, groups, mesh, grid, mode="zeros"):
    """`conv(x, w, b, stride, padding, dilation, groups)` of a split x (module docstring), or None where this
    patch does not apply (the caller then lets XLA partition `conv`).

    padding: per spatial axis, p or (before, after). mode: "zeros" (the convolution's own padding) or "edge"
    (replicate padding of every padded axis: a split axis's first and last devices take their own edge as
    halo; an axis that is not split takes it on every device, as a band too where the kernel keeps its
    extent, else by `jnp.pad` before the convolution). `conv` pads with zeros.
    """
    planned = plan(mesh, grid, x.shape, w.shape, stride, padding, dilation)
    if planned is None:
        return None
    fine, spec, splits = planned
    ndim, pairs = x.ndim, _pairs(padding)
    own_edges, edged = [], []  # replicate padding of axes that are not split: as bands, or explicit
    for axis in range(2, ndim):
        i = axis - 2
        if mode == "edge" and axis not in splits and any(pairs[i]):
            fits = _same(w.shape[axis], pairs[i], stride[i], dilation[i]) and x.shape[axis] >= max(pairs[i])
            (own_edges if fits else edged).append(axis)
    banded = [axis for axis in range(2, ndim) if axis in splits or axis in own_edges]  # in axis order
    own = tuple((0, 0) if 2 + i in edged else pads for i, pads in enumerate(pairs))
    if any(lo != hi for lo, hi in own):
        # (before, after) padding the shard's own convolution would need: XLA:GPU pads the input explicitly for
        # cuDNN there (a copy of the shard, seen for HunyuanVideo's causal time padding), so the caller pads first
        return None

    def band_conv(band, w, axis, before):
        """The band's terms: valid across `axis` and the banded axes before it (their halos are in the band)."""
        window = [(0, 0) if a == axis or (a in banded and a < axis) else own[a - 2] for a in range(2, ndim)]
        return jax.lax.conv_general_dilated(
            _band(band, axis, w.shape[axis], before), w, (1,) * (ndim - 2), window, feature_group_count=groups,
            dimension_numbers=("NCDHW", "OIDHW", "NCDHW") if ndim == 5 else ("NCHW", "OIHW", "NCHW"),
        ).astype(x.dtype)

    def body(x, w, b):
        for axis in edged:
            x = jnp.pad(x, [(0, 0)] * axis + [pairs[axis - 2]] + [(0, 0)] * (ndim - 1 - axis), mode="edge")
        y = conv(x, w, b, stride, tuple(lo for lo, _ in own), dilation, groups)
        halos = {}  # axis -> (before, after): extended along the banded axes before it (their corners)

        def extended(slab, axis, start):
            """slab (x's rows start.. along `axis`) with the halos of the banded axes before `axis` around it."""
            for a in banded:
                if a >= axis:
                    break
                before, after = halos[a]
                size = slab.shape[axis]
                slab = jnp.concatenate([_take(before, axis, start, size), slab, _take(after, axis, start, size)],
                                       axis=a)
            return slab

        for axis in banded:
            p, n = own[axis - 2][0], x.shape[axis]  # banded axes pad p rows (columns) on both sides (above)

            def edge(first):
                """Replicate padding's halo: the shard's first (last) row, extended, p times."""
                row = extended(_take(x, axis, 0 if first else n - 1, 1), axis, 0 if first else n - 1)
                return jnp.repeat(row, p, axis=axis)

            if axis not in splits:  # replicate padding of an axis that is not split
                before, after = edge(True), edge(False)
            else:
                names, shards = splits[axis]
                before = _shift(extended(_take(x, axis, n - p, p), axis, n - p), names, shards, forward=True)
                after = _shift(extended(_take(x, axis, 0, p), axis, 0), names, shards, forward=False)
                if mode == "edge":
                    before = _at_ends(before, edge(True), names, shards, first=True)
                    after = _at_ends(after, edge(False), names, shards, first=False)
            halos[axis] = (before, after)
            start = [0] * ndim
            y = jax.lax.dynamic_update_slice(y, _take(y, axis, 0, p) + band_conv(before, w, axis, True), start)
            start[axis] = n - p
            y = jax.lax.dynamic_update_slice(y, _take(y, axis, n - p, p) + band_conv(after, w, axis, False), start)
        return y

    if b is None:
        return jax.shard_map(lambda x, w: body(x, w, None), mesh=fine, in_specs=(spec, PartitionSpec()),
                             out_specs=spec, check_vma=False)(x, w)
    return jax.shard_map(body, mesh=fine, in_specs=(spec, PartitionSpec(), PartitionSpec()), out_specs=spec,
                         check_vma=False)(x, w, b)


def replicate_conv(x, w, b, stride, padding, dilation, groups):
    """A convolution of x replicate-padded by `padding` ((before, after) per spatial axis), split as `sharded`
    on the trace's mesh where it can be, else padded with `jnp.pad` first.

    A causal time padding ((p, 0): not split) is not padded onto x: the convolution runs twice, on x without
    it (all but the first p output frames) and on the 2p frames the first p outputs see (x's first frame p
    times, then its first p), and the two are joined. A padded copy of x would be p frames longer than every
    other activation of its level, and on two GPUs XLA's heap left holes between the two sizes (HunyuanVideo
    1.5's 131- and 129-frame buffers). As a band it would need (p, 0) padding in the shard's own
    convolution, for which XLA:GPU pads the whole input explicitly.
    """
    pairs = _pairs(padding)
    causal = [a for a, (lo, hi) in enumerate(pairs) if lo != hi]
    if len(causal) == 1 and pairs[causal[0]][1] == 0 and stride[causal[0]] == 1 and dilation[causal[0]] == 1:
        a, p = causal[0] + 2, pairs[causal[0]][0]
        if x.shape[a] > p:
            rest = tuple((0, 0) if i == a - 2 else pads for i, pads in enumerate(pairs))
            head = jnp.pad(jax.lax.slice_in_dim(x, 0, p, axis=a), [(p, 0) if i == a else (0, 0) for i in range(x.ndim)],
                           mode="edge")
            return jnp.concatenate([_replicate_spatial(head, w, b, stride, rest, dilation, groups),
                                    _replicate_spatial(x, w, b, stride, rest, dilation, groups)], axis=a)
    if causal:
        leading = [(0, 0), (0, 0)]
        x = jnp.pad(x, leading + [pairs[a] if a in causal else (0, 0) for a in range(len(pairs))], mode="edge")
        pairs = tuple((0, 0) if a in causal else pads for a, pads in enumerate(pairs))
    return _replicate_spatial(x, w, b, stride, pairs, dilation, groups)


def _replicate_spatial(x, w, b, stride, pairs, dilation, groups):
    """`replicate_conv` of symmetric padding `pairs`: split on the trace's mesh where it can be, else `jnp.pad`."""
    options = current()
    local = functools.partial(conv_rules.gpu_conv, limit=options.gpu_conv_limit)
    if options.mesh is not None:
        split = sharded(local, x, w, b, stride, pairs, dilation, groups, options.mesh, options.grid, mode="edge")
        if split is not None:
            return split
    x = jnp.pad(x, [(0, 0), (0, 0)] + list(pairs), mode="edge")
    return local(x, w, b, stride, (0,) * len(pairs), dilation, groups)


@functools.cache
def _torch_replicate_conv():
    return import_torchax().interop.torch_view(replicate_conv)


def _splits(self) -> bool:
    """Whether this trace hands the layer's replicate padding to `replicate_conv` (a GPU mesh, symmetric
    height and width padding, an unpadded Conv3d)."""
    options, pads, conv = current(), self.time_causal_padding, self.conv
    return (options.halo_conv and options.mesh is not None and self.pad_mode == "replicate" and pads[0] == pads[1]
            and pads[2] == pads[3] and not isinstance(conv.padding, str) and not any(conv.padding))


def _split_conv(self, hidden_states):
    pads, conv = self.time_causal_padding, self.conv
    return _torch_replicate_conv()(hidden_states, conv.weight, conv.bias, tuple(conv.stride),
                                   ((pads[4], pads[5]), (pads[2], pads[3]), (pads[0], pads[1])), tuple(conv.dilation),
                                   conv.groups)


def _replicate_forward(self, hidden_states):
    """HunyuanVideo's causal convolution; on a GPU mesh its padding goes to `replicate_conv`."""
    if not _splits(self):
        return super(_Replicated, self).forward(hidden_states)
    return _split_conv(self, hidden_states)


def _replicate_cached_forward(self, inputs, conv_cache=None):
    """CogVideoX's causal convolution (Mochi's, replicate-padded: no conv_cache); as HunyuanVideo's above."""
    if not _splits(self):
        return super(_Replicated, self).forward(inputs, conv_cache=conv_cache)
    return _split_conv(self, inputs), None


class _Replicated:
    """Marks the classes `patch` makes (and finds diffusers' forward after it in the MRO)."""


@functools.cache
def _replicated(cls: type) -> type:
    forward = _replicate_cached_forward if issubclass(cls, CogVideoXCausalConv3d) else _replicate_forward
    return type(f"Halo{cls.__name__}", (_Replicated, cls), {"forward": forward, "__module__": __name__})


def patch(model: nn.Module) -> int:
    """Gives HunyuanVideo's (and 1.5's) and CogVideoX's causal convolutions of `model` the forwards above (the
    latter split only where replicate-padded: Mochi's); returns how many.

    Outside GPU mesh traces that forward is diffusers'. (Every other convolution reaches `sharded` through
    torchax_vae/patches/gpu_conv.py's lowering hook.)
    """
    return refine(model, REPLICATE, _Replicated, _replicated,
                  where=lambda m: not isinstance(m, CogVideoXCausalConv3d) or m.pad_mode == "replicate")
