"""`torchax-vae demo`: the tiny VAE shipped in the package encodes and decodes a synthetic clip (README's first
command), against the same model in PyTorch."""

import pathlib
import time

import jax
import jax.numpy as jnp
import numpy as np
import torch
from diffusers import AutoencoderKLCogVideoX

from torchax_vae.cli.commands import LONG_RUN_SECONDS, psnr
from torchax_vae.cli.frame_progress import batches_finished, progress_mode
from torchax_vae.cli.frame_progress import precompile_counting as _precompile
from torchax_vae.cli.tiny_models import DEMO_MODEL
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.media import files
from torchax_vae.media.files import InputError
from torchax_vae.media.pixels import video_to_uint8 as _to_uint8
from torchax_vae.media.synthetic import moving_shapes

__all__ = ["DEMO_MODEL", "DEMO_CLIP", "demo"]

# A seed scripts/train_tiny.py never draws (training: seed * 10**6 + step, below 10**9 for its seeds
# under 1000; validation 10**9 + seed; scaling 2 * 10**9 + seed), so a clip the training never saw.
DEMO_CLIP = {"seed": 3 * 10**9, "frames": 17, "height": 96, "width": 128}


def demo(out: str = "torchax_vae_demo.mp4", *, model=DEMO_MODEL, fps: float = 8, progress="bar") -> dict:
    """The shipped tiny VAE (or `model`, a VAE folder) encodes and decodes a synthetic clip.

    Writes an input|reconstruction MP4; returns the PSNR of the reconstruction
    and its max |Δ| against the same model in PyTorch.
    """
    out = files.check_writable(out)
    if not (pathlib.Path(model) / "config.json").is_file():
        if pathlib.Path(model) == DEMO_MODEL:
            raise InputError(f"this installation has no demo VAE at {model} (scripts/train_tiny.py --export writes it)")
        raise InputError(f"no VAE at {model}: expected a folder with config.json and the weights")
    vae = AutoencoderKLCogVideoX.from_pretrained(model, low_cpu_mem_usage=False).eval()
    clip = torch.from_numpy(moving_shapes(DEMO_CLIP["seed"], 1, DEMO_CLIP["frames"], DEMO_CLIP["height"], DEMO_CLIP["width"]))
    ours = TorchaxVAE(vae)
    mode = progress_mode(progress)
    compile_seconds, batches, _ = _precompile(ours, "encode", tuple(clip.shape))
    start = time.perf_counter()
    with batches_finished(batches, "encode", mode, clip.shape[2], LONG_RUN_SECONDS):
        mean = ours.encode(clip).latent_dist.mean
    run_seconds = time.perf_counter() - start
    seconds, batches, _ = _precompile(ours, "decode", tuple(mean.shape))
    compile_seconds += seconds
    start = time.perf_counter()
    with batches_finished(batches, "decode", mode, clip.shape[2], LONG_RUN_SECONDS):
        reconstruction = ours.decode(mean).sample.clamp(-1, 1)
    run_seconds += time.perf_counter() - start
    with torch.no_grad():
        expected = vae.decode(vae.encode(clip).latent_dist.mean).sample.clamp(-1, 1)
    side_by_side = torch.cat([clip, reconstruction], dim=-1)
    frames = np.asarray(jax.device_get(_to_uint8(jnp.asarray(side_by_side.numpy()))))[0]
    files.write_mp4(out, frames, fps=fps)
    return {
        "output": str(out),
        "clip": f"{DEMO_CLIP['frames']} frames {DEMO_CLIP['height']}x{DEMO_CLIP['width']} (seed {DEMO_CLIP['seed']})",
        "parameters": sum(p.numel() for p in vae.parameters()),
        "psnr_db": psnr(clip.numpy(), reconstruction.numpy()),
        "max_abs_vs_pytorch": (reconstruction - expected).abs().max().item(),
        "compile_seconds": compile_seconds,
        "run_seconds": run_seconds,
    }
