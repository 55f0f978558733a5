"""Checks on user input, run before anything is traced or compiled."""

import jax.numpy as jnp
import torch

_LAYOUT = "[batch, channels, frames, height, width]"


def check_video(x, *, name: str, channels: int, role: str) -> None:
    """Raises TypeError/ValueError saying what is wrong with `x` and what was expected."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor {_LAYOUT}, got {type(x).__name__}")
    if x.ndim != 5:
        raise ValueError(f"{name} must be 5-D {_LAYOUT}, got {x.ndim}-D with shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must have a floating-point dtype, got {x.dtype}")
    if x.shape[1] != channels:
        raise ValueError(
            f"{name} has {x.shape[1]} channels (shape {tuple(x.shape)}), but this model's {role} expects {channels}"
        )
    if 0 in x.shape:
        raise ValueError(f"{name} is empty: shape {tuple(x.shape)} {_LAYOUT}")
    if not _all_finite(x):
        raise ValueError(f"{name} contains NaN or Inf values")


def _all_finite(x: torch.Tensor) -> bool:
    jax_array = getattr(x, "_elem", None)  # a torchax tensor: check on its device
    if jax_array is not None:
        return bool(jnp.isfinite(jax_array).all())
    return bool(torch.isfinite(x).all())
