"""`F.linear(input=..., weight=..., bias=...)` with torch's keyword names.

Upstream: torchax 0.0.13 lowers `torch.nn.functional.linear` with a function whose parameters are named
`(self, weights, bias)` (torchax/ops/jtorch.py), so a call by torch's own keywords raises "functional_linear() got
an unexpected keyword argument 'input'". diffusers' MiniMax H3 audio VAE calls it so (its causal-attention
projection). Here the registered lowering takes torch's names and hands them on by position; positional calls
are unchanged. Still needed while torchax names them otherwise (tests/test_patches.py::test_keyword_linear).
"""

import dataclasses

import torch

from torchax_vae.patches.torchax_torch213 import import_torchax


def _with_torch_keywords(stock):
    def linear(input=None, weight=None, bias=None, **kwargs):  # noqa: A002 (torch's name)
        return stock(input, weight, bias, **kwargs)

    linear.torchax_vae_stock = stock
    return linear


def patch_env(env) -> int:
    """Registers the keyword-taking lowering in `env`; 1 if it did, 0 if done before (or torchax has none)."""
    op = env._ops.get(torch.nn.functional.linear)
    if op is None or hasattr(op.func, "torchax_vae_stock"):
        return 0
    env._ops[torch.nn.functional.linear] = dataclasses.replace(op, func=_with_torch_keywords(op.func))
    return 1


def patch() -> int:
    """`patch_env` on torchax's default environment (the one every lowering here traces in)."""
    return patch_env(import_torchax().default_env())
