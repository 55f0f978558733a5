"""CogVideoXSafeConv3d as a plain Conv3d: no 2 GB chunking.

Upstream: diffusers' `CogVideoXSafeConv3d.forward` estimates the input size as
if it were fp16 and, above 2 GB, splits it along time into overlapping chunks,
convolves each and concatenates: a workaround for a cuDNN limit. Under XLA the
chunks are separate convolutions plus slice and concatenate copies in one graph,
which only fragments it; XLA plans the memory of one convolution itself.

Here: the forward of `nn.Conv3d`, whose result equals the chunked one (the
chunks overlap by kernel_size - 1 frames, so each output frame sees the same
inputs).

Still needed while diffusers' forward chunks
(tests/test_patches.py::test_safe_conv3d_still_chunks).
"""

from diffusers.models.autoencoders.autoencoder_kl_cogvideox import CogVideoXSafeConv3d
from torch import nn


class PlainConv3d(CogVideoXSafeConv3d):
    """CogVideoXSafeConv3d with nn.Conv3d's forward."""

    forward = nn.Conv3d.forward


def patch(model: nn.Module) -> int:
    """Makes every CogVideoXSafeConv3d in `model` a PlainConv3d; returns how many."""
    count = 0
    for module in model.modules():
        if type(module) is CogVideoXSafeConv3d:
            module.__class__ = PlainConv3d
            count += 1
    return count
