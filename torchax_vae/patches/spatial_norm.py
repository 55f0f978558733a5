"""CogVideoXSpatialNorm3D with its two 1x1x1 convolutions applied to the latents before upsampling.

Upstream: diffusers' `CogVideoXSpatialNorm3D.forward` upsamples the latents zq
(nearest, to the activation's frames, height and width; an odd first frame
apart) and then runs `conv_y` and `conv_b`, two pointwise convolutions of
zq_channels -> f_channels, on the upsampled latents. In the decoder's last
block that is two f32[1, 128, 9, 480, 720] convolution outputs per norm
(1.48 GiB each) that XLA must materialize before the normalize can read them,
and 2 x 12.7 GFLOP that recompute the same values for every copy of a latent.

Here: `conv_y` and `conv_b` run on zq at its own resolution (60x90 there) and
their outputs are upsampled the way upstream upsamples zq. A pointwise
convolution and a nearest upsampling commute (each output voxel is the same
dot product of the same latent voxel), so the result is upstream's up to the
summation order of that dot product. The upsampled values are a gather that
XLA fuses into the normalize, so nothing activation-sized is written for them.
Applies only where both convolutions are pointwise without a carried cache
(torchax_vae/patches/pointwise_conv_cache.py), as in every CogVideoX config.

Still needed while upstream convolves the upsampled zq
(tests/test_patches.py::test_spatial_norm_still_convolves_upsampled_latents).
"""

import torch
import torch.nn.functional as F
from diffusers.models.autoencoders.autoencoder_kl_cogvideox import CogVideoXSpatialNorm3D
from torch import nn

from torchax_vae.patches.pointwise_conv_cache import PointwiseCausalConv3d


def _nearest(x: torch.Tensor, size) -> torch.Tensor:
    """F.interpolate(x, size) (nearest) over T, H, W: a broadcast, which XLA fuses into every reader, for whole factors."""
    factors = [out // n for n, out in zip(x.shape[2:], size)]
    if any(n * f != out for n, f, out in zip(x.shape[2:], factors, size)):
        return F.interpolate(x, size=size)
    n, c, t, h, w = x.shape
    ft, fh, fw = factors
    x = x[:, :, :, None, :, None, :, None].expand(n, c, t, ft, h, fh, w, fw)
    return x.reshape(n, c, *size)


def upsample_like(x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """x interpolated (nearest) to f's frames, height and width, as upstream interpolates zq.

    Nearest interpolation is separable, so the frames are done first, at x's
    own (small) size, where upstream's odd-first-frame concatenation is cheap;
    the spatial upsampling after it is a pure broadcast.
    """
    frames, height, width = f.shape[-3:]
    if frames > 1 and frames % 2 == 1:
        first = _nearest(x[:, :, :1], (1, *x.shape[-2:]))
        rest = _nearest(x[:, :, 1:], (frames - 1, *x.shape[-2:]))
        x = torch.cat([first, rest], dim=2)
    else:
        x = _nearest(x, (frames, *x.shape[-2:]))
    return _nearest(x, (frames, height, width))


class LowResSpatialNorm3D(CogVideoXSpatialNorm3D):
    """CogVideoXSpatialNorm3D whose conv_y and conv_b run before the upsampling."""

    def forward(self, f, zq, conv_cache=None):
        conv_y, _ = self.conv_y(zq)
        conv_b, _ = self.conv_b(zq)
        norm_f = self.norm_layer(f)
        new_f = norm_f * upsample_like(conv_y, f) + upsample_like(conv_b, f)
        return new_f, {"conv_y": None, "conv_b": None}  # the pointwise convs carry no cache


def _pointwise(conv) -> bool:
    return isinstance(conv, PointwiseCausalConv3d) and tuple(conv.conv.kernel_size) == (1, 1, 1) and tuple(conv.conv.stride) == (1, 1, 1)


def patch(model: nn.Module) -> int:
    """Makes every CogVideoXSpatialNorm3D with pointwise conv_y and conv_b a LowResSpatialNorm3D; returns how many."""
    count = 0
    for module in model.modules():
        if type(module) is CogVideoXSpatialNorm3D and _pointwise(module.conv_y) and _pointwise(module.conv_b):
            module.__class__ = LowResSpatialNorm3D
            count += 1
    return count
