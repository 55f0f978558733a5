"""WanUpsample (and its copies QwenImageUpsample, QwenImage21Upsample) returning its input's dtype through `.to`, not torchax 0.0.13's `type_as`.

Upstream: diffusers' `WanUpsample.forward` (and `QwenImageUpsample.forward`) upsamples in float32 and casts back
with `.type_as(x)`. torchax 0.0.13's `Tensor.type_as` changes the wrapped JAX
array's dtype in place and returns the same tensor, whose torch-level dtype is
still float32; under bf16 the next Conv2d then fails with "Input type (float)
and bias type (c10::BFloat16) should be the same".

Here: the same forward, with `.to(x.dtype)`, which makes a new tensor of the
right dtype. In fp32 both are the identity.

Still needed while torchax's type_as works in place
(tests/test_patches.py::test_torchax_type_as_still_works_in_place).
"""

from diffusers.models.autoencoders.autoencoder_kl_qwenimage import QwenImageUpsample
from diffusers.models.autoencoders.autoencoder_kl_wan import WanUpsample
from torch import nn


def _forward(self, x):
    return nn.Upsample.forward(self, x.float()).to(x.dtype)


class CastingWanUpsample(WanUpsample):
    """WanUpsample whose cast back to the input's dtype is `.to`."""

    forward = _forward


class CastingQwenImageUpsample(QwenImageUpsample):
    """QwenImageUpsample whose cast back to the input's dtype is `.to`."""

    forward = _forward


_REPLACE = {WanUpsample: CastingWanUpsample, QwenImageUpsample: CastingQwenImageUpsample}

try:  # diffusers >= 0.42: Qwen-Image 2.1's copy
    from diffusers.models.autoencoders.autoencoder_kl_qwenimage21 import QwenImage21Upsample
except ImportError:
    pass
else:
    class CastingQwenImage21Upsample(QwenImage21Upsample):
        """QwenImage21Upsample whose cast back to the input's dtype is `.to`."""

        forward = _forward

    _REPLACE[QwenImage21Upsample] = CastingQwenImage21Upsample


def patch(model: nn.Module) -> int:
    """Makes every WanUpsample, QwenImageUpsample and QwenImage21Upsample in `model` cast with `.to`; how many."""
    count = 0
    for module in model.modules():
        if type(module) in _REPLACE:
            module.__class__ = _REPLACE[type(module)]
            count += 1
    return count
