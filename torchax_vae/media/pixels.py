"""How a family's pixels map to [0, 1], and so to uint8 frames and back: the one place that knows.

diffusers' VAEs take and give [-1, 1] (the video processors' `x / 2 + 0.5` and `x * 2 - 1`), except where the
family says otherwise with `pixel_mean` / `pixel_std` (MiniMax H3's ImageNet-normalized RGB: `x * std + mean`
and `(x - mean) / std`, per channel, as its pipeline converts). The command's frames, `decode_stream(frames=
"uint8")` and the encode of a video file go through here; rounding as diffusers' VideoProcessor rounds.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import torch

__all__ = ["from_uint8", "to_uint8"]


def _per_channel(values, ndim: int, axis: int, like):
    shape = [1] * ndim
    shape[axis] = -1
    if isinstance(like, torch.Tensor):
        return torch.tensor(values, dtype=torch.float32, device=like.device).view(shape)
    return jnp.asarray(np.asarray(values, np.float32)).reshape(shape)


def to_unit(video, family, axis: int):
    """Decoded values (a JAX array or torch tensor, channels on `axis`) as [0, 1] (unclamped), in float32."""
    return _to_unit(video, _facts(family, "pixel_mean"), _facts(family, "pixel_std"), axis)


def _to_unit(video, mean, std, axis: int):
    video = video.float() if isinstance(video, torch.Tensor) else video.astype(jnp.float32)
    if std is None:
        return video / 2 + 0.5
    return video * _per_channel(std, video.ndim, axis, video) + _per_channel(mean, video.ndim, axis, video)


def to_uint8(video, family, axis: int):
    """Decoded values as uint8 0..255 (same layout; JAX on the device, or torch), as diffusers rounds them."""
    if isinstance(video, torch.Tensor):
        return (to_unit(video, family, axis).clamp(0, 1) * 255).round().to(torch.uint8)
    return _uint8(video, mean=_facts(family, "pixel_mean"), std=_facts(family, "pixel_std"), axis=axis)


def _facts(family, name: str):
    values = getattr(family, name, None)  # (None: no family, as the demo's side-by-side video)
    return None if values is None else tuple(values)


@functools.partial(jax.jit, static_argnames=("mean", "std", "axis"))
def _uint8(video, *, mean, std, axis):
    return jnp.round(jnp.clip(_to_unit(video, mean, std, axis), 0.0, 1.0) * 255).astype(jnp.uint8)


def from_uint8(frames: torch.Tensor, family, axis: int) -> torch.Tensor:
    """uint8 frames (a torch tensor, channels on `axis`) as the family's encoder takes them, float32."""
    std = _facts(family, "pixel_std")
    if std is None:
        return frames.float() / 127.5 - 1.0
    mean = _per_channel(_facts(family, "pixel_mean"), frames.ndim, axis, frames)
    return (frames.float() / 255 - mean) / _per_channel(std, frames.ndim, axis, frames)


def video_to_uint8(video, family=None):
    """[B, C, F, H, W] decoded (diffusers' [-1, 1], or the family's own pixels: torchax_vae/media/pixels.py) -> uint8
    [B, F, H, W, C], as diffusers' VideoProcessor rounds it."""
    return to_uint8(video, family, 1).transpose(0, 2, 3, 4, 1)
