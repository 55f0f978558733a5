"""`torch.hann_window` (aten.hann_window), which torchax 0.0.13 has no lowering for.

Upstream: torchax raises `OperatorNotFound: Operator with name aten::hann_window has no lowering`. diffusers'
Cosmos 3 sound tokenizer makes its STFT window with it inside `encode` (`torch.hann_window(n_fft, device=...,
dtype=...)`), so its encode could not trace. Here the window is computed as torch defines it, from `arange` and
`cos` (which torchax lowers): periodic (the default) 0.5 - 0.5 cos(2 pi n / N), symmetric over N - 1, one value
for a window of 1, in float32 and then cast (torch's bf16 window computes in bf16, up to two rounding steps from
this one; the Cosmos 3 window is float32). Registered for both overloads; nothing else changes. Still needed while torchax has no
lowering for it (tests/test_patches.py::test_hann_window).
"""

import math

import torch

from torchax_vae.patches.torchax_torch213 import import_torchax


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                pin_memory=None) -> torch.Tensor:
    """torch's Hann window of `window_length` values (made inside torchax's environment: a JAX array)."""
    dtype = dtype or torch.get_default_dtype()
    if window_length == 1:
        return torch.ones(1, dtype=dtype)
    n = torch.arange(window_length, dtype=torch.float32)
    span = window_length if periodic else window_length - 1
    return (0.5 - 0.5 * torch.cos(n * (2 * math.pi / span))).to(dtype)


def _periodic(window_length, periodic=True, **kwargs):
    return hann_window(window_length, periodic, **kwargs)


def patch_env(env) -> int:
    """Registers the lowering for both overloads in `env`; how many it added (0 if done before)."""
    count = 0
    for op, func in ((torch.ops.aten.hann_window.default, hann_window),
                     (torch.ops.aten.hann_window.periodic, _periodic)):
        current = env._ops.get(op)
        if current is not None and current.func in (hann_window, _periodic):
            continue
        env.override_op_definition(op, func)
        count += 1
    return count


def patch() -> int:
    """`patch_env` on torchax's default environment (the one every lowering here traces in)."""
    return patch_env(import_torchax().default_env())
