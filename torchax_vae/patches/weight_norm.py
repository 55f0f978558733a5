"""`torch._weight_norm` (weight-normalized layers: `nn.utils.weight_norm` and its parametrization) computed in
float32 and rounded once, as ATen's own kernel computes it.

Upstream: torch runs `_weight_norm` of bf16 tensors on CPU and CUDA as one fused kernel
(`_weight_norm_interface`) whose norm, division and product are in float32; its composite form, which is what
torchax 0.0.13 traces, is `v * (g / norm_except_dim(v, 2, dim))` in bf16, three roundings. The sound VAEs'
weight-normalized convolutions (Oobleck, MiniMax H3 and Music 3, KVAE audio, LongCat, Cosmos 3, SAME) then began
each bf16 forward with weights one bf16 step off PyTorch's in about a fifth of their elements, and MiniMax Music 3's
tiny vocoder ended 2.3x PyTorch bf16's error instead of 2x at most (2026-12-08). Here the weight is the float32
product rounded to the parameter's dtype: in bf16 the same weights as torch's kernel; in float32 the same
operations as before. Still needed while torchax traces the composite form (tests/test_patches.py::test_weight_norm).
"""

import torch

from torchax_vae.patches.torchax_torch213 import import_torchax


def weight_norm(v: torch.Tensor, g: torch.Tensor, dim: int = 0) -> torch.Tensor:
    """`g * v / ||v||` (the norm over every axis but `dim`), in float32, in `v`'s dtype."""
    v32 = v.float()
    return (v32 * (g.float() / torch.norm_except_dim(v32, 2, dim))).to(v.dtype)


def patch_env(env) -> int:
    """Registers `weight_norm` for `torch._weight_norm` in `env`; 1 if it added it, 0 if it was there."""
    current = env._ops.get(torch._weight_norm)
    if current is not None and current.func is weight_norm:
        return 0
    env.override_op_definition(torch._weight_norm, weight_norm)
    return 1


def patch() -> int:
    """`patch_env` on torchax's default environment (the one every lowering here traces in)."""
    return patch_env(import_torchax().default_env())
