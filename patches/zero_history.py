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
"""

import functools

import torch
from diffusers.models.autoencoders.autoencoder_kl_qwenimage import QwenImageCausalConv3d
from diffusers.models.autoencoders.autoencoder_kl_wan import WanCausalConv3d
from torch import nn
from torch.nn import functional as F

CLASSES = (WanCausalConv3d, QwenImageCausalConv3d)


def _forward(self, x, cache_x=None):
    padding = list(self._padding)
    zeros = padding[4] - (cache_x.shape[2] if cache_x is not None and padding[4] > 0 else 0)
    frames = x.shape[2] + (cache_x.shape[2] if cache_x is not None and padding[4] > 0 else 0)
    # one output frame whose first `zeros` taps read the zeros: the padded frames fill the kernel exactly.
    if zeros <= 0 or padding[5] or frames + zeros != self.kernel_size[0] or self.dilation[0] != 1:
        return super(_Dropped, self).forward(x, cache_x)
    if cache_x is not None and padding[4] > 0:
        x = torch.cat([cache_x.to(x.device), x], dim=2)
    x = F.pad(x, padding[:4])  # the spatial padding alone
    weight = self.weight[:, :, zeros:]
    if frames == 1:  # one frame: a 2-D convolution
        out = F.conv2d(x[:, :, 0], weight[:, :, 0], self.bias, self.stride[1:], 0, self.dilation[1:], self.groups)
        return out.unsqueeze(2)
    return F.conv3d(x, weight, self.bias, self.stride, 0, self.dilation, self.groups)


class _Dropped:
    """Marks the classes `dropping_zero_history` makes (and finds diffusers' forward after it in the MRO)."""


@functools.cache
def dropping_zero_history(cls: type) -> type:
    """A subclass of a Wan causal convolution class (possibly already refined by other patches) with `_forward`."""
    return type(f"ZeroHistory{cls.__name__}", (_Dropped, cls), {"forward": _forward, "__module__": __name__})


def patch(model: nn.Module) -> int:
    """Gives every Wan or Qwen-Image causal convolution of `model` the forward above; returns how many."""
    count = 0
    for module in model.modules():
        if isinstance(module, CLASSES) and not isinstance(module, _Dropped):
            module.__class__ = dropping_zero_history(type(module))
            count += 1
    return count
