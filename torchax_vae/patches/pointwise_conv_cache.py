"""No conv_cache for CogVideoXCausalConv3d layers whose time kernel is 1.

Upstream: `CogVideoXCausalConv3d.forward` returns `inputs[:, :, -k + 1:]` as the
cache; for a time kernel k = 1 (`conv_y` and `conv_b` of every
CogVideoXSpatialNorm3D) that slice is `inputs[:, :, 0:]`, a copy of the whole
input, and the next call never reads it (a 1-frame kernel pads nothing). Under
XLA that unread cache is a program output: it must be materialized (the
upsampled latents at every decoder resolution), and since its frame count
follows the batch's, a 3-frame first batch and a 2-frame later batch give
different cache shapes and so one more compiled program.

Here: such layers return None as their cache. The output is unchanged.

Still needed while diffusers returns the whole input as a k = 1 layer's cache
(tests/test_patches.py::test_pointwise_conv_cache_still_copies_input).
"""

from diffusers.models.autoencoders.autoencoder_kl_cogvideox import CogVideoXCausalConv3d
from torch import nn


class PointwiseCausalConv3d(CogVideoXCausalConv3d):
    """A CogVideoXCausalConv3d with time kernel 1 that carries no cache."""

    def forward(self, inputs, conv_cache=None):
        output, _ = super().forward(inputs, conv_cache)
        return output, None


def patch(model: nn.Module) -> int:
    """Makes every time-kernel-1 CogVideoXCausalConv3d in `model` a PointwiseCausalConv3d."""
    count = 0
    for module in model.modules():
        if type(module) is CogVideoXCausalConv3d and module.time_kernel_size == 1 and module.pad_mode != "replicate":
            module.__class__ = PointwiseCausalConv3d
            count += 1
    return count
