"""Every tile at one shape: edge tiles run zero-padded, with their valid extent as data.

Upstream: diffusers' `tiled_encode`/`tiled_decode` cut the right, bottom and
corner tiles smaller than the interior ones. Compiled per shape, that is up to
nine programs for each frame-batch shape (each about as slow to compile as the
interior one), so compile time grows with the number of distinct edge sizes.

Here: a tile is always cut at the full tile size, zero-padded past the input's
edge, and its valid extent (height, width) at the program's input resolution is
a traced argument. Inside the trace (`TraceOptions.tile_extent`, torchax_vae/patches/options.py), every operation whose
output at a valid position depends on other positions is made to see exactly
what it sees on the smaller tile:
- the input of every convolution with a spatial kernel (the inner conv of each
  CogVideoXCausalConv3d, CogVideoXUpsample3D, CogVideoXDownsample3D) is zeroed
  outside the valid region, which is the zero padding at the smaller tile's
  border;
- GroupNorm takes its statistics over the valid region only
  (`torchax_vae/patches/group_norm.py` asks `spatial_mask`).
Pointwise layers, the time axis, and CogVideoXSpatialNorm3D's nearest-neighbour
resize of the latents (an integer factor) need nothing. Valid outputs equal the
smaller tile's (tests/test_patches.py::test_masked_tile_equals_smaller_tile_*);
the rest is cropped away. Without a tile extent the patched layers run as
before.

Not an upstream defect but a trade: fewer programs to compile for more work
(the padding is computed). It matters as long as XLA compiles one program per
shape; `TorchaxVAE.uniform_tiles = False` goes without it
(tests/test_tiling.py::test_exact_tile_shapes_match_diffusers_with_a_program_per_shape).
"""

import functools

import jax.numpy as jnp
import torch
from diffusers.models.upsampling import CogVideoXUpsample3D
from torch import nn

from torchax_vae.placement.tiling import extent_at
from torchax_vae.patches.frame_conv import FrameConv3d
from torchax_vae.patches.options import current
from torchax_vae.patches.safe_conv3d import PlainConv3d
from torchax_vae.patches.time_pool import TimePooledDownsample3D
from torchax_vae.patches.torchax_torch213 import import_torchax

def spatial_mask(height: int, width: int):
    """(height, width) booleans, True inside the valid region; None without a tile extent."""
    extent = current().tile_extent
    if extent is None:
        return None
    valid, (tile_h, tile_w) = extent
    rows = jnp.arange(height) < extent_at(valid[0], tile_h, height)
    cols = jnp.arange(width) < extent_at(valid[1], tile_w, width)
    return rows[:, None] & cols[None, :]


def zero_outside(x):
    """x (..., H, W) with zeros outside the valid region."""
    mask = spatial_mask(*x.shape[-2:])
    return x if mask is None else jnp.where(mask, x, jnp.zeros((), x.dtype))


@functools.cache
def _torch_zero_outside():
    return import_torchax().interop.torch_view(zero_outside)


def _masked(x: torch.Tensor) -> torch.Tensor:
    return x if current().tile_extent is None else _torch_zero_outside()(x)


class TileMaskedConv3d(FrameConv3d):
    """A spatial-kernel Conv3d whose input is zeroed outside the tile's valid region."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return super().forward(_masked(input))


class TileMaskedUpsample3D(CogVideoXUpsample3D):
    """CogVideoXUpsample3D on an input zeroed outside the valid region (nearest resize keeps the zeros)."""

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return super().forward(_masked(inputs))


class TileMaskedDownsample3D(TimePooledDownsample3D):
    """CogVideoXDownsample3D on an input zeroed outside the valid region, before its own one-pixel pad."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(_masked(x))


def patch(model: nn.Module) -> int:
    """Swaps in the masked layers (after `safe_conv3d`, `frame_conv` and `time_pool`); returns how many."""
    count = 0
    for module in model.modules():
        if type(module) in (PlainConv3d, FrameConv3d) and any(k > 1 for k in module.kernel_size[1:]):
            module.__class__ = TileMaskedConv3d
        elif type(module) is CogVideoXUpsample3D:
            module.__class__ = TileMaskedUpsample3D
        elif type(module) is TimePooledDownsample3D:
            module.__class__ = TileMaskedDownsample3D
        else:
            continue
        count += 1
    return count
