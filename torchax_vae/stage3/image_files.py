"""The `decode` and `encode` commands for image VAEs (AutoencoderKL: SD, SDXL, SD3, Flux): latents [B, C, H, W] to
PNG (or the exact uint8 pixels as .npy), and an image file to latents.

`torchax_vae.cli.commands` reads the files and makes the VAE, then hands a 4-D family (`rank == 4`) to these.
"""

import pathlib
import time

import jax
import numpy as np
import torch

from torchax_vae.engine.convert import on_device as _on_device
from torchax_vae.media import files, pixels, video_input
from torchax_vae.media.checks import IMAGE_SUFFIXES, InputError
from torchax_vae.stage3 import inpainting
from torchax_vae.stage3.input_checks import (check_input, check_output_fits, smallest_output,
                                             unpacked_latents as _unpacked)


def _to_uint8(images, family=None):
    """[B, C, H, W] decoded (diffusers' [-1, 1], or the family's own pixels: torchax_vae/media/pixels.py) -> uint8
    [B, H, W, C]: the video rounding (`pixels.video_to_uint8`) of one-frame videos."""

    return pixels.video_to_uint8(images[:, :, None], family)[:, 0]


def check_output(out: pathlib.Path, rank: int, model: str, frames: bool = False) -> None:
    """An output suffix the VAE's rank can write: .png/.npy for images, .mp4/.npy for videos, and any of them for
    an image VAE whose batch is a video's frames (`frames`: Stable Video Diffusion's)."""
    suffix = out.suffix.lower()
    if rank == 4 and not frames and suffix not in IMAGE_SUFFIXES:
        raise InputError(f"{out}: {model} decodes images; write .png (or .npy: the uint8 pixels [H, W, C])")
    if rank == 5 and suffix == ".png":
        raise InputError(f"{out}: {model} decodes videos; write .mp4 (or .npy: the uint8 frames [F, H, W, C])")


def decode(ours, z: torch.Tensor, latents, paths: list[pathlib.Path], *, precompile, progress, size=None,
           fps: float = 8, image=None, mask=None, seed: int = 0) -> dict:
    """Latents `z` as read from the file `latents` (4-D, or 3-D packed: Flux) -> one image per batch element, or, for
    a family whose batch is a video's frames (`batch_is_frames`) and one .mp4 or .npy path, that video.

    precompile, progress: `torchax_vae.cli.commands`' helpers (compile every program first; count finished calls).
    image, mask: files SD inpainting's asymmetric VAE conditions its decoder on (torchax_vae/stage3/inpainting.py).
    seed: where the decoder draws noise (the consistency decoder), its generator's seed.
    """

    if z.ndim == 3:
        z = _unpacked(ours, z, size, latents, ours.pipeline_layout)
    files.check_rank(z, latents, 4)
    if z.shape[1] != ours.latent_channels:
        raise InputError(f"{latents}: latents have {z.shape[1]} channels (layout [B, C, H, W], shape "
                         f"{tuple(z.shape)}); this model's decoder takes {ours.latent_channels}: they are another "
                         f"VAE's latents: check --model ({ours.model_class.__name__} here)")
    z = ours.denormalize_latents(z)  # as the family's pipelines do before decoding
    z, decode_args = ours.decode_inputs(z)  # (Stable Video Diffusion's num_frames: the batch)
    check_input(z, ours, "decode", f"latents in {latents}")
    condition = inpainting.condition(ours, image, mask, tuple(z.shape))
    check_output_fits(smallest_output(ours, tuple(z.shape)), f"latents in {latents}", None)
    if condition is None:
        compile_seconds, calls, stats = precompile(ours, "decode", tuple(z.shape))
    else:  # the conditioned decoder's program compiles in the call
        compile_seconds, calls, stats = 0.0, 1, None
    start = time.perf_counter()
    with progress(ours, calls, "decode", 1):
        conditioned = {} if condition is None else {key: value.to(ours.dtype) for key, value in condition.items()}
        if ours.decode_draws_noise:  # the consistency decoder: its noise from this call's generator
            conditioned["generator"] = torch.Generator().manual_seed(seed)
        images = ours.decode(_on_device(z, ours.dtype), *decode_args, **conditioned).sample
        levels = np.asarray(jax.device_get(_to_uint8(images._elem, ours._family)))
    seconds = time.perf_counter() - start
    if ours.batch_is_frames and len(paths) == 1 and paths[0].suffix.lower() != ".png":  # one video [F, H, W, C]
        if paths[0].suffix.lower() == ".npy":
            files.write_frames(paths[0], levels)
        else:
            files.write_mp4(paths[0], levels, fps=fps)
    else:
        for path, image in zip(paths, levels):
            if path.suffix.lower() == ".npy":
                files.write_frames(path, image[None])
            else:
                files.write_image(path, image)
    return {
        "outputs": [str(p) for p in paths],
        "images": levels.shape[0],
        "size": f"{levels.shape[1]}x{levels.shape[2]}",  # height x width, as everywhere
        "programs": len(stats if stats is not None else ours.compile_stats()),
        "compile_seconds": compile_seconds,
        "decode_seconds": seconds,
        "images_per_second": levels.shape[0] / seconds,
    }


def encode(ours, image, *, precompile, progress, posterior: str, seed: int) -> tuple[torch.Tensor, dict]:
    """An image file (anything ffmpeg reads: PNG, JPEG, ...; its first frame) -> normalized latents [1, C, h, w]."""
    frames, _ = video_input.read_video(image, 1, channels=4 if ours.video_channels == 4 else 3)
    x = pixels.from_uint8(torch.from_numpy(frames[0]).permute(2, 0, 1)[None], ours._family, 1)
    check_input(x, ours, "encode", f"image {image}")
    compile_seconds, calls, stats = precompile(ours, "encode", tuple(x.shape))
    start = time.perf_counter()
    with progress(ours, calls, "encode", 1):
        dist = ours._posterior(x.to(ours.dtype))  # in the model's dtype, as pipelines cast images to vae.dtype
        z = dist.mode() if posterior == "mean" else dist.sample(generator=torch.Generator().manual_seed(seed))
    seconds = time.perf_counter() - start
    z = ours.normalize_latents(z.float())  # as the family's image-to-image pipelines normalize them
    return z, {"size": f"{x.shape[2]}x{x.shape[3]}", "latent_shape": list(z.shape), "layout": "BCHW",
               "programs": len(stats), "compile_seconds": compile_seconds, "encode_seconds": seconds}
