"""CogVideoXDownsample3D's time compression as a pooling over the time axis, in place.

Upstream: diffusers' `CogVideoXDownsample3D.forward` (compress_time=True, the
encoder's first down blocks) halves the frame count by permuting NCTHW to
(N*H*W, C, T), running `F.avg_pool1d(kernel 2)` (the first frame of an odd
count passes through) and permuting back. The width axis is merged into the
leading one, which a width sharding cannot follow: XLA gathers the whole
activation onto every device there (tiny encoder on a (1, 8) mesh: 0.56x the
single-device temp memory instead of 0.14x, tests/test_sharding.py). The two
permutes are also two full copies of the activation on one device.

Here: the same average, `F.avg_pool3d` with kernel (2, 1, 1) straight on
NCTHW; the first frame of an odd count passes through as before. Equal to the
upstream result (each output is the mean of the same two frames;
tests/test_patches.py::test_time_pool_equals_upstream). The spatial half of the
layer (pad, stride-2 Conv2d over N*T images) is upstream's code.
"""

import torch
import torch.nn.functional as F
from diffusers.models.downsampling import CogVideoXDownsample3D
from torch import nn


def pool_time(x: torch.Tensor) -> torch.Tensor:
    """NCTHW with T halved as CogVideoXDownsample3D does: mean of frame pairs, an odd first frame kept."""
    if x.shape[2] % 2 == 1:
        first, rest = x[:, :, :1], x[:, :, 1:]
        if rest.shape[2] > 0:
            rest = F.avg_pool3d(rest, kernel_size=(2, 1, 1), stride=(2, 1, 1))
        return torch.cat([first, rest], dim=2)
    return F.avg_pool3d(x, kernel_size=(2, 1, 1), stride=(2, 1, 1))


class TimePooledDownsample3D(CogVideoXDownsample3D):
    """CogVideoXDownsample3D whose time compression keeps the NCTHW layout."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.compress_time:
            x = pool_time(x)
        # The rest of upstream's forward: pad right and bottom by one, stride-2 Conv2d per frame.
        x = F.pad(x, (0, 1, 0, 1), mode="constant", value=0)
        batch_size, channels, frames, height, width = x.shape
        x = x.permute(0, 2, 1, 3, 4).reshape(batch_size * frames, channels, height, width)
        x = self.conv(x)
        return x.reshape(batch_size, frames, x.shape[1], x.shape[2], x.shape[3]).permute(0, 2, 1, 3, 4)


def patch(model: nn.Module) -> int:
    """Makes every CogVideoXDownsample3D in `model` a TimePooledDownsample3D; returns how many."""
    count = 0
    for module in model.modules():
        if type(module) is CogVideoXDownsample3D:
            module.__class__ = TimePooledDownsample3D
            count += 1
    return count
