"""Gradients through a TorchaxVAE: a torch autograd Function over the VJP of the JAX computation.

When an input requires grad (and torch's grad mode is on), TorchaxVAE runs its
encode or decode under `jax.vjp` instead of calling its compiled programs
directly (torchax_vae.engine.programs: inside `jax.vjp` a program is a jitted
function JAX can differentiate). The result comes back to torch as the output
of `_Bridge`, whose backward pulls the output's gradient back through JAX's
VJP to the input. Only inputs get gradients: the weights are constants of
the JAX computation (`TorchaxVAE.requires_grad_(True)` says so).
"""

from collections.abc import Callable

import jax
import torch

from torchax_vae.engine import convert


class _Bridge(torch.autograd.Function):
    """forward: the JAX result as a torch tensor; backward: the input's gradient through the saved VJP."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, compute: Callable):
        out, ctx.pullback = compute()
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return ctx.pullback(grad), None


def vjp(f: Callable, start: jax.Array, x: torch.Tensor) -> torch.Tensor:
    """f(start) as a torch tensor like x (its device and dtype), differentiable with respect to x.

    `start` is x on the JAX device (as f expects it); f maps JAX arrays to a JAX array.
    """

    def compute():
        out, pullback = jax.vjp(f, start)

        def backward(grad: torch.Tensor) -> torch.Tensor:
            (dx,) = pullback(convert.to_jax(grad.contiguous(), out.dtype, out.sharding))
            return convert.to_torch(dx, device=x.device, dtype=x.dtype)

        # a copy: the output must not alias a JAX buffer the VJP may still read
        return convert.to_torch(convert.mutated(out), device=x.device, dtype=x.dtype).clone(), backward

    return _Bridge.apply(x, compute)
