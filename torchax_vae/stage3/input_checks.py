"""The checks a decode or encode input gets before anything compiles, shared by the command (`commands`,
`image_files`) and the service (`serve.protocol`): TorchaxVAE's own input checks as one-line `InputError`s, and
whether the decoded output can be held in memory at all.
"""

import math
import sys
import warnings

import jax
import torch

from torchax_vae.engine import memory, validation
from torchax_vae.media.checks import InputError

__all__ = ["LARGE_OUTPUT_BYTES", "check_input", "check_video_shape", "check_output_fits", "smallest_output"]

# Above this, a decode says how many GB of uint8 frames it will hold in memory until they are written.
LARGE_OUTPUT_BYTES = 4 << 30


def check_output_fits(video_shape, what: str, mode, streamed: bool = False) -> None:
    """InputError if the decoded videos (held whole, as floats then uint8 frames) cannot fit in memory; a line if large.

    A decode keeps its frame batches' outputs and their concatenation on the device, then the uint8 frames on
    the host: about 2 x (4 + 1) bytes per value where the device is the CPU, 2 x 4 + 1 on an accelerator.
    streamed: `video_shape` is one chunk of a streamed decode (`decode_stream`), which holds nothing more.
    """
    values = math.prod(video_shape)
    device = jax.devices()[0]
    frames_bytes = values  # uint8
    device_bytes = 2 * 4 * values + (frames_bytes if device.platform != "cpu" else 2 * frames_bytes)
    limits = [("on the device", device_bytes, memory.free_bytes(device))]
    if device.platform != "cpu":
        limits.append(("on the host", frames_bytes, memory.host_available_bytes()))
    batch, frames, height, width = video_shape[0], math.prod(video_shape[2:-2]), *video_shape[-2:]  # images: 1 frame
    for where, need, available in limits:
        if available is not None and need > available:
            decodes = "decodes in chunks of at least" if streamed else "decodes to"
            raise InputError(
                f"{what} {decodes} {batch} x {frames} frames of {height}x{width}: about {need / 1e9:.3g} GB {where} at "
                f"once, more than the {available / 1e9:.3g} GB available; decode fewer frames per file (note that "
                "CogVideoX and Wan carry state across frames, so the pieces' seams differ from one whole decode)"
            )
    if mode is not None and frames_bytes > LARGE_OUTPUT_BYTES and not streamed:
        print(f"torchax-vae decode: {batch} x {frames} frames of {height}x{width} are {frames_bytes / 1e9:.3g} GB of "
              "uint8 frames, held in memory until written", file=sys.stderr, flush=True)


def smallest_output(ours, latent_shape) -> tuple[int, ...]:
    """[B, C, F, H, W] of the smallest video whose latents have `latent_shape` (`latent_shape` inverted by search):
    a lower bound of what decoding them gives, for refusing what cannot fit before anything compiles. Images
    [B, C, H, W]: [B, C, H x ratio, W x ratio]."""
    ratio = ours.spatial_compression_ratio
    if len(latent_shape) == 4:
        return (latent_shape[0], ours.video_channels, latent_shape[2] * ratio, latent_shape[3] * ratio)
    batch, _, frames, height, width = latent_shape

    def latent_frames(count: int) -> int:
        return ours.latent_shape((batch, ours.video_channels, count, height * ratio, width * ratio))[2]

    # the fewest video frames that give `frames` latent frames: a bisection (latent frames grow with video frames),
    # so that a request's made-up frame count costs a few dozen steps, not one per frame
    low, high = 1, 16 * frames + 1
    while low < high:
        middle = (low + high) // 2
        if latent_frames(middle) >= frames:
            high = middle
        else:
            low = middle + 1
    return (batch, ours.video_channels, low, height * ratio, width * ratio)


def check_input(x: torch.Tensor, vae, kind: str, what: str) -> None:
    """TorchaxVAE's own input checks, as InputError (they would raise the same inside encode/decode)."""
    encode = kind == "encode"
    channels = vae.video_channels if encode else vae.latent_channels
    try:
        validation.check_video(x, name=what, channels=channels, role="encoder" if encode else "decoder", rank=vae.rank)
        with warnings.catch_warnings():  # an all-zero answer is no answer to a caller of the command or the service
            warnings.simplefilter("error", validation.ZeroOutputWarning)
            if encode:
                vae._family.check_video(tuple(x.shape), what)
            else:
                vae._family.check_latents(tuple(x.shape), what)
    except (TypeError, ValueError, validation.ZeroOutputWarning) as e:
        raise InputError(str(e)) from e


def check_video_shape(shape, vae, what: str) -> None:
    """`check_input`'s checks of an encode input's shape alone, for a video read a chunk at a time (its values
    are checked as each chunk is encoded)."""
    try:
        validation.check_shape(shape, name=what, channels=vae.video_channels, role="encoder", rank=vae.rank)
        vae._family.check_video(tuple(shape), what)
    except ValueError as e:
        raise InputError(str(e)) from e


def unpacked_latents(ours, z: torch.Tensor, size, where, layout: str) -> torch.Tensor:
    """3-D packed latents [B, tokens, channels] as [B, C, F, H, W], as the family's pipeline unpacks them."""
    if not hasattr(ours, "unpack_latents"):  # the same words as files.load_latents for every other rank
        shown = "[B, F, C, H, W]" if layout == "BFCHW" else "[B, C, F, H, W]"
        raise InputError(f"{where}: latents must be 5-D {shown}, as {type(ours).model_class.__name__}'s "
                         f"pipelines hand them over; got 3-D with shape {tuple(z.shape)} (only "
                         "Qwen-Image's and LTX-Video's packed latents may be 3-D)")
    if size is None:
        raise InputError(f"{where}: packed latents {tuple(z.shape)} ([B, tokens, channels]); pass --size "
                         "HEIGHTxWIDTH, the image size the pipeline made them for")
    try:
        return ours.unpack_latents(z, *size)
    except ValueError as e:
        raise InputError(f"{where}: {e}") from None
