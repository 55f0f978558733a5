"""Wan's causal convolutions without their zero history: the time taps that would read zero frames dropped.

Upstream: diffusers' `WanCausalConv3d.forward` (and its copy `QwenImageCausalConv3d`) pads the time axis in
front with zeros where it has no cache (`F.pad`, 2 frames for a 3-tap kernel) and convolves the padded
input. On a first call (Wan's first latent frame, the first video frame in the encoder, and every layer of
a Qwen-Image image) the input is one frame, so the convolution reads two zero frames for every real one:
three times the input memory and three times the FLOPs, of which two thirds multiply zeros. XLA cannot know
the padded frames are zero (they are an operand), so it computes them (seen compiled for two H100s: a
bf16[1,96,3,1330,666] copy of a one-frame input in Qwen-Image's decode).

Here: where the convolution has exactly one output frame and its time padding is zeros (`p` frames in
front), the taps that read them are dropped: the real frames are convolved with `weight[:, :, p:]`, one
frame as a 2-D convolution. The sum is the same products of the same nonzero terms (a zero frame adds
exact zeros), so fp32 results match diffusers' within rounding order. Every other call (a cache in front,
several output frames) runs diffusers' forward. Every trace, every platform, with or without a mesh.
Still needed while diffusers pads with zeros (tests/test_patches.py::test_zero_history_*).

The same forward, on GPUs (`TraceOptions.halo_conv`), pads height and width inside the convolution rather
than with `F.pad` before it (diffusers pads all three axes up front): cuDNN pads without a copy, and on a
mesh torchax_vae/patches/halo_conv.py can split a "same" convolution, which a padded input (a 642-wide activation
convolved without padding) is not. Same products, same sums. Qwen-Image 2.1's `QwenImage21CausalConv3d`, the
one-frame 2-D specialization of Wan's (no time taps to drop), gets only this.
"""

import functools

import torch
from diffusers.models.autoencoders.autoencoder_kl_qwenimage import QwenImageCausalConv3d
from diffusers.models.autoencoders.autoencoder_kl_wan import WanCausalConv3d
from torch import nn
from torch.nn import functional as F

from torchax_vae.patches.options import current
from torchax_vae.patches.refine import refine

try:  # diffusers >= 0.42: Qwen-Image 2.1's one-frame specialization
    from diffusers.models.autoencoders.autoencoder_kl_qwenimage21 import QwenImage21CausalConv3d
except ImportError:
    QwenImage21CausalConv3d = None
CLASSES = (WanCausalConv3d, QwenImageCausalConv3d) + ((QwenImage21CausalConv3d,) if QwenImage21CausalConv3d else ())


def _forward(self, x, cache_x=None):
    padding = list(self._padding)  # (w, w, h, h, t, 0): diffusers pads both sides of height and width alike
    cached = cache_x is not None and padding[4] > 0
    zeros = padding[4] - (cache_x.shape[2] if cached else 0)
    frames = x.shape[2] + (cache_x.shape[2] if cached else 0)
    # one output frame whose first `zeros` taps read the zeros: the padded frames fill the kernel exactly.
    drop = zeros > 0 and not padding[5] and frames + zeros == self.kernel_size[0] and self.dilation[0] == 1
    inside = current().halo_conv  # GPUs: height and width padded inside the convolution (module docstring)
    if not drop and not inside:
        return super(_Dropped, self).forward(x, cache_x)
    if cached:
        x = torch.cat([cache_x.to(x.device), x], dim=2)
    spatial = (padding[2], padding[0])
    weight = self.weight
    if drop:
        weight = weight[:, :, zeros:]
    elif zeros > 0 or padding[5]:
        x = F.pad(x, [0, 0, 0, 0, zeros, padding[5]])  # the time padding alone
    if drop and frames == 1:  # one frame: a 2-D convolution
        out = F.conv2d(x[:, :, 0], weight[:, :, 0], self.bias, self.stride[1:], spatial, self.dilation[1:], self.groups)
        return out.unsqueeze(2)
    return F.conv3d(x, weight, self.bias, self.stride, (0, *spatial), self.dilation, self.groups)


def _image_forward(self, x, cache_x=None):
    """QwenImage21CausalConv3d's forward (a 2-D convolution of one frame), padded inside the convolution on GPUs."""
    if cache_x is not None or not current().halo_conv:
        return super(_Dropped, self).forward(x, cache_x)
    spatial = (self._padding[2], self._padding[0])
    return F.conv2d(x.squeeze(2), self.weight, self.bias, self.stride, spatial, self.dilation, self.groups).unsqueeze(2)


class _Dropped:
    """Marks the classes `dropping_zero_history` makes (and finds diffusers' forward after it in the MRO)."""


@functools.cache
def dropping_zero_history(cls: type) -> type:
    """A subclass of a Wan causal convolution class (possibly already refined by other patches) with `_forward`."""
    image = QwenImage21CausalConv3d is not None and issubclass(cls, QwenImage21CausalConv3d)
    forward = _image_forward if image else _forward
    return type(f"ZeroHistory{cls.__name__}", (_Dropped, cls), {"forward": forward, "__module__": __name__})


def patch(model: nn.Module) -> int:
    """Gives every Wan or Qwen-Image causal convolution of `model` the forward above; returns how many."""
    return refine(model, CLASSES, _Dropped, dropping_zero_history)
