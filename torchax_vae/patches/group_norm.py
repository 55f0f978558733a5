"""GroupNorm as one vectorized JAX reduction, swapped into the model copy's nn.GroupNorm layers.

Upstream: torch's `nn.GroupNorm` lowers through torchax's `native_group_norm`
(`torchax/ops/jaten.py`), which reshapes to (1, N*G, -1) and runs the statistics
inside `jax.lax.map`: a while loop that XLA cannot fuse with the SiLU and the
convolution around it, and that flattens the width axis away so a width
sharding cannot pass through. In bf16 it also takes the statistics in bf16.

Here: `group_norm` reshapes NC... to (N, G, C/G, ...) and takes `jnp.mean` and
`jnp.var` over (C/G, T, H, W) at once, in float32 whatever the input dtype (as
PyTorch's CPU and CUDA kernels accumulate in float32), then applies the affine
transform and casts back. `group_norm_reference` is the plain per-group loop it
must equal.

diffusers' `MochiChunkedGroupNorm3D` normalizes each frame on its own (it folds frames into the batch and runs
nn.GroupNorm on chunks of 8 of them, a loop of concatenations); `TorchaxFrameGroupNorm` takes the same
statistics per frame (`group_norm(..., per_frame=True)`: over C/G, H, W) on NCTHW as it is, so the width split
passes through. Traced for TPUs where the family asks (Mochi, EasyAnimate), every GroupNorm's sums are dot
products with ones, which libtpu lays out where it failed on the reductions (`_dot_group_norm`).

Still needed while torchax's lowering of nn.GroupNorm contains a while loop
(tests/test_patches.py::test_stock_group_norm_still_loops).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import torch
from diffusers.models.autoencoders.autoencoder_kl_mochi import MochiChunkedGroupNorm3D
from torch import nn

from torchax_vae.patches import options, tile_mask
from torchax_vae.patches.torchax_torch213 import import_torchax


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, mask=None, per_frame=False):
    """GroupNorm of an (N, C, *spatial) array: statistics over (C/G, *spatial) per group.

    per_frame: of an (N, C, T, H, W) array, statistics per frame, over (C/G, H, W) (each frame as its own sample).

    With `mask` (booleans broadcastable to the trailing spatial dims), the
    statistics cover only the True positions; the others get unspecified values.
    """
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    if mask is None and options.current().dot_statistics:
        return _dot_group_norm(x, num_groups, weight, bias, eps, per_frame)
    stats_dtype = jnp.promote_types(x.dtype, jnp.float32)
    xg = x.astype(stats_dtype).reshape(n, num_groups, c // num_groups, *spatial)
    where = None if mask is None else jnp.broadcast_to(mask, xg.shape)
    axes = (2, 4, 5) if per_frame else tuple(range(2, xg.ndim))
    mean = jnp.mean(xg, axis=axes, keepdims=True, where=where)
    var = jnp.var(xg, axis=axes, keepdims=True, where=where)
    y = ((xg - mean) * jax.lax.rsqrt(var + eps)).reshape(x.shape)
    affine_shape = (1, c) + (1,) * len(spatial)
    if weight is not None:
        y = y * weight.astype(stats_dtype).reshape(affine_shape)
    if bias is not None:
        y = y + bias.astype(stats_dtype).reshape(affine_shape)
    return y.astype(x.dtype)


def _dot_group_norm(x, num_groups, weight, bias, eps, per_frame=False):
    """`group_norm` (unmasked) with each group's sums as dot products with ones (float32 sums), as traced where the
    family asks for it on TPUs (TraceOptions.dot_statistics: Mochi, EasyAnimate). libtpu 0.0.42 could not lay out
    the reductions XLA made of them otherwise (in bf16 and float32, as one reduction or two, frames folded into the
    batch or not: "Expected instruction to have shape equal to f32[28,768], actual shape is f32[768,28]", Mochi's
    released decoder on v6e-8; "f32[2,256] ... f32[256,2]", EasyAnimate's, whose norms see frames folded into the
    batch). Not elsewhere: the squared deviations it hands the dot are a float32 copy of x, which XLA:GPU fuses
    into a reduction (Mochi's whole-clip decode on two H100s: 32.6 GiB per GPU with the dots, 26.9 without)."""
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    per_group = c // num_groups
    stats_dtype = jnp.promote_types(x.dtype, jnp.float32)
    xg = x.reshape(n, num_groups, per_group, *spatial)  # a split of the channels only: a width split stays
    # the contracted axes: the group's channels and every spatial axis, or all but time (per_frame)
    kept = (3,) if per_frame else ()
    letters = "abcdefgh"[:xg.ndim]
    contracted = "".join(letters[i] for i in range(2, xg.ndim) if i not in kept)
    out = "ab" + "".join(letters[i] for i in kept)
    # ones made from x (x * 0 + 1: XLA does not fold it to a constant), so that XLA's simplifier cannot turn the
    # dots with them back into reductions, and so that they are split as x is: each device contracts its share
    # of a split axis, then the partial sums are summed across devices
    ones = xg[(0, 0, slice(None), *(0 if i in kept else slice(None) for i in range(3, xg.ndim)))] * 0 + 1
    count = ones.size
    spec = f"{letters},{contracted}->{out}"
    mean = jnp.einsum(spec, xg, ones, preferred_element_type=stats_dtype) / count
    expand = (slice(None), slice(None), None, *(slice(None) if i in kept else None for i in range(3, xg.ndim)))
    centered = xg.astype(stats_dtype) - mean[expand]
    var = jnp.einsum(spec, centered * centered, ones.astype(stats_dtype), preferred_element_type=stats_dtype) / count
    y = (centered * jax.lax.rsqrt(var + eps)[expand]).reshape(x.shape)
    affine_shape = (1, c) + (1,) * len(spatial)
    if weight is not None:
        y = y * weight.astype(stats_dtype).reshape(affine_shape)
    if bias is not None:
        y = y + bias.astype(stats_dtype).reshape(affine_shape)
    return y.astype(x.dtype)


def group_norm_reference(x, num_groups, weight=None, bias=None, eps=1e-5):
    """The definition, one group at a time, in float64 NumPy (unmasked: crop the input instead)."""
    x = np.asarray(x, dtype=np.float64)
    c = x.shape[1]
    per_group = c // num_groups
    y = np.empty_like(x)
    for g in range(num_groups):
        block = x[:, g * per_group : (g + 1) * per_group]
        axes = tuple(range(1, block.ndim))
        mean = block.mean(axis=axes, keepdims=True)
        var = ((block - mean) ** 2).mean(axis=axes, keepdims=True)
        y[:, g * per_group : (g + 1) * per_group] = (block - mean) / np.sqrt(var + eps)
    affine_shape = (1, c) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * np.asarray(weight, dtype=np.float64).reshape(affine_shape)
    if bias is not None:
        y = y + np.asarray(bias, dtype=np.float64).reshape(affine_shape)
    return y


def _group_norm_of_tile(x, num_groups, weight, bias, eps, per_frame=False):
    """`group_norm` over the valid region when traced with a tile extent (TraceOptions.tile_extent), else over all."""
    return group_norm(x, num_groups, weight, bias, eps, mask=tile_mask.spatial_mask(*x.shape[-2:]),
                      per_frame=per_frame)


@functools.cache
def _torch_group_norm():
    return import_torchax().interop.torch_view(_group_norm_of_tile)


class TorchaxGroupNorm(nn.GroupNorm):
    """nn.GroupNorm whose forward runs `group_norm` on torchax tensors."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return _torch_group_norm()(input, self.num_groups, self.weight, self.bias, self.eps)


class TorchaxFrameGroupNorm(MochiChunkedGroupNorm3D):
    """MochiChunkedGroupNorm3D (per-frame GroupNorm of NCTHW, by chunks of frames) as one per-frame reduction."""

    def forward(self, x: torch.Tensor = None) -> torch.Tensor:
        norm = self.norm_layer
        return _torch_group_norm()(x, norm.num_groups, norm.weight, norm.bias, norm.eps, per_frame=True)


def patch(model: nn.Module) -> int:
    """Makes every plain nn.GroupNorm in `model` a TorchaxGroupNorm, every MochiChunkedGroupNorm3D a
    TorchaxFrameGroupNorm; returns how many."""
    count = 0
    for module in model.modules():
        if type(module) is nn.GroupNorm:
            module.__class__ = TorchaxGroupNorm
            count += 1
        elif type(module) is MochiChunkedGroupNorm3D:
            module.__class__ = TorchaxFrameGroupNorm
            count += 1
    return count
