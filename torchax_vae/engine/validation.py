"""Checks on user input, run before anything is traced or compiled."""

import jax.numpy as jnp
import torch



class ZeroOutputWarning(UserWarning):
    """An input the wrapped diffusers class answers with zeros (AutoencoderKLAllegro below one tile): the
    TorchaxVAE answers the same, as a drop-in, and warns; the command and the service refuse it."""


class DtypeMismatchError(TypeError, RuntimeError):
    """A floating-point input of another dtype than the TorchaxVAE computes in. diffusers' own models raise torch's
    RuntimeError on it ("Input type (c10::Half) and bias type (float) should be the same"), so this is a
    RuntimeError as theirs is (and a TypeError, as this module's other wrong-type errors are), raised before
    anything compiles. The command and the service cast what they read to the model's dtype themselves."""


LAYOUTS = {5: "[batch, channels, frames, height, width]", 4: "[batch, channels, height, width]",
           3: "[batch, channels, samples]"}


def check_video(x, *, name: str, channels: int, role: str, rank: int = 5, dtype: torch.dtype | None = None) -> None:
    """Raises TypeError/ValueError saying what is wrong with `x` and what was expected: a floating-point tensor
    of `rank` dimensions (the family's: 5 for video, 4 for images) with `channels` channels, finite, and of
    `dtype` where one is given (DtypeMismatchError)."""
    layout = LAYOUTS[rank]
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor {layout}, got {type(x).__name__}")
    if x.ndim != rank:
        raise ValueError(f"{name} must be {rank}-D {layout}, got {x.ndim}-D with shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must have a floating-point dtype, got {x.dtype}")
    if dtype is not None and x.dtype != dtype:
        want = str(dtype).removeprefix("torch.")
        raise DtypeMismatchError(
            f"{name} is {str(x.dtype).removeprefix('torch.')}, but this TorchaxVAE computes in {want}: cast it "
            f"(x.to(torch.{want})), as diffusers' pipelines cast latents to vae.dtype; diffusers' own model raises "
            "on this mismatch too"
        )
    check_shape(tuple(x.shape), name=name, channels=channels, role=role, rank=rank)
    if not _all_finite(x):
        raise ValueError(f"{name} contains NaN or Inf values")


def check_shape(shape, *, name: str, channels: int, role: str, rank: int = 5) -> tuple[int, ...]:
    """The shape as a tuple of ints; ValueError if it is not a non-empty shape of `rank` axes with `channels`."""
    layout = LAYOUTS[rank]
    try:
        shape = tuple(int(n) for n in shape)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a sequence of {rank} ints {layout}, got {shape!r}") from None
    if len(shape) != rank:
        raise ValueError(f"{name} must be {rank}-D {layout}, got {len(shape)}-D with shape {shape}")
    if shape[1] != channels:
        raise ValueError(f"{name} has {shape[1]} channels (shape {shape}), but this model's {role} expects {channels}")
    if min(shape) <= 0:
        raise ValueError(f"{name} is empty: shape {shape} {layout}")
    return shape


def _all_finite(x: torch.Tensor) -> bool:
    jax_array = getattr(x, "_elem", None)  # a torchax tensor: check on its device
    if jax_array is not None:
        return bool(jnp.isfinite(jax_array).all())
    return bool(torch.isfinite(x).all())


def packed_grid(latents, height: int, width: int, ratio: int, latent_channels: int) -> tuple[int, int]:
    """(rows, cols) of 2x2 latent patches of a height x width image, as the Flux, Flux.2 and Qwen-Image pipelines pack
    latents into tokens [B, rows x cols, latent_channels x 4]; ValueError where `latents` do not fit that."""
    _, tokens, channels = latents.shape
    rows, cols = int(height) // (ratio * 2), int(width) // (ratio * 2)
    if rows * cols != tokens or channels != 4 * latent_channels:
        raise ValueError(
            f"packed latents {tuple(latents.shape)} do not fit a {height}x{width} image: expected "
            f"[B, {rows * cols}, {4 * latent_channels}] ({rows}x{cols} patches of 2x2 latents)"
        )
    return rows, cols
