"""Seeded diffusers VAEs of named configs, and the input a benchmark case needs.

Shared by the scripts (bench, speed, parity) and the tests (tests/helpers.py puts
this folder on sys.path and re-exports them); not part of the installed package.
"""

import torch
from diffusers import AutoencoderKLCogVideoX, AutoencoderKLWan

# diffusers' own test config (tests/models/autoencoders/test_models_autoencoder_kl_cogvideox.py)
# and the released CogVideoX VAE's architecture (the class defaults, 215 M parameters).
CONFIGS = {
    "tiny": {
        "in_channels": 3,
        "out_channels": 3,
        "down_block_types": ("CogVideoXDownBlock3D",) * 4,
        "up_block_types": ("CogVideoXUpBlock3D",) * 4,
        "block_out_channels": (8, 8, 8, 8),
        "latent_channels": 4,
        "layers_per_block": 1,
        "norm_num_groups": 2,
        "temporal_compression_ratio": 4,
    },
    "official": {},
}


def _normalization(z_dim: int) -> dict:
    """Placeholder latents_mean/latents_std of the right length (the released values matter only with real weights)."""
    return {
        "latents_mean": [round(0.1 * (i % 7) - 0.3, 4) for i in range(z_dim)],
        "latents_std": [round(1.0 + 0.25 * (i % 5), 4) for i in range(z_dim)],
    }


# AutoencoderKLWan: diffusers' own test config; a small Wan 2.2-style one (residual blocks,
# patchified, decoder wider than the encoder); the released Wan 2.1 VAE's architecture (the
# class defaults, 127 M parameters) and Wan 2.2 TI2V-5B's (Wan-AI/Wan2.2-TI2V-5B-Diffusers).
WAN_CONFIGS = {
    "wan-tiny": {"base_dim": 3, "z_dim": 16, "dim_mult": [1, 1, 1, 1], "num_res_blocks": 1},
    "wan2.2-tiny": {
        "base_dim": 8, "decoder_base_dim": 12, "z_dim": 4, "dim_mult": [1, 2, 2, 2], "num_res_blocks": 1,
        "is_residual": True, "patch_size": 2, "in_channels": 12, "out_channels": 12, "scale_factor_spatial": 16,
        **_normalization(4),
    },
    "wan2.1": {},
    "wan2.2": {
        "base_dim": 160, "decoder_base_dim": 256, "z_dim": 48, "is_residual": True, "patch_size": 2,
        "in_channels": 12, "out_channels": 12, "scale_factor_spatial": 16, **_normalization(48),
    },
}


def random_vae(config: str, seed: int = 0) -> AutoencoderKLCogVideoX | AutoencoderKLWan:
    """A model of a named config (CONFIGS: CogVideoX; WAN_CONFIGS: Wan) with weights from a fixed seed."""
    torch.manual_seed(seed)
    if config in WAN_CONFIGS:
        return AutoencoderKLWan(**WAN_CONFIGS[config]).eval()
    return AutoencoderKLCogVideoX(**CONFIGS[config]).eval()


def input_shape(case, vae) -> tuple[int, ...]:
    """The encode or decode input for a video of case's size, as the pipeline would pass it."""
    from torchax_vae.models import input_shape

    return input_shape(vae, case.kind, case.frames, case.height, case.width)


def configure(model, case) -> None:
    """Tiling and program split of `case` on a TorchaxVAE (or diffusers' model, for the PyTorch side).

    CogVideoX has a tiling mode ("auto"/"on"/"off") and a program split; Wan
    tiles as diffusers does, when `enable_tiling` was called.
    """
    if case.tile:
        model.enable_tiling(tile_sample_min_height=case.tile[0], tile_sample_min_width=case.tile[1])
    tiling = getattr(case, "tiling", "on" if case.tile else "off")
    if hasattr(model, "tiling_mode"):
        model.tiling_mode = tiling
    elif tiling == "off":
        model.disable_tiling()
    elif tiling == "on" and not case.tile:
        model.enable_tiling()
    if hasattr(model, "program_split"):
        model.program_split = case.split
