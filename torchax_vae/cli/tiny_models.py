"""Tiny random-weight model folders to try the command, the service and sessions offline
(`torchax-vae demo --save-models DIR`; docs/guide/offline.md).

Each is a diffusers VAE of a served class with small, numerically stable widths (the 3-channel toys diffusers' own
tests use make jumps a nudge of 1e-5 flips), its weights drawn from a fixed seed, saved as diffusers saves a model:
`config.json` and `diffusion_pytorch_model.safetensors`. Beside them, the CogVideoX VAE the demo runs.
"""

import pathlib
import shutil

import diffusers
import torch

from torchax_vae.cli.demo import DEMO_MODEL

__all__ = ["TINY", "save_models"]

# name -> (diffusers class, config): what each folder holds
TINY = {
    # a video VAE with a causal cache, for sessions: Wan 2.1's architecture, 8x spatial, 4x temporal
    "wan": ("AutoencoderKLWan", {"base_dim": 8, "z_dim": 4, "dim_mult": [1, 2, 2, 2], "num_res_blocks": 1,
                                 "latents_mean": [0.0, 0.1, -0.1, 0.2], "latents_std": [1.0, 1.25, 1.5, 1.75]}),
    # an image VAE: AutoencoderKL as SD's, 2x spatial
    "sd": ("AutoencoderKL", {"block_out_channels": [8, 16], "norm_num_groups": 4, "latent_channels": 4,
                             "down_block_types": ["DownEncoderBlock2D"] * 2, "up_block_types": ["UpDecoderBlock2D"] * 2,
                             "sample_size": 64}),
}


def save_models(folder, seed: int = 0) -> dict:
    """Writes each tiny model into `folder`/NAME (and the demo's CogVideoX as `folder`/cogvideox); returns
    {name: path}."""
    folder = pathlib.Path(folder).expanduser()
    written = {}
    for name, (class_name, config) in TINY.items():
        torch.manual_seed(seed)
        model = getattr(diffusers, class_name)(**config).eval()
        model.save_pretrained(folder / name)
        written[name] = str(folder / name)
    shutil.copytree(DEMO_MODEL, folder / "cogvideox", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("*.jsonl", "README.md"))
    written["cogvideox"] = str(folder / "cogvideox")
    return written
