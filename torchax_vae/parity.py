"""Side-by-side numerics of TorchaxVAE and diffusers' PyTorch VAE: the table scripts/parity.py prints."""

import copy
import dataclasses

import torch
from diffusers import AutoencoderKLCogVideoX, AutoencoderKLWan

from .vae import TorchaxVAE

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


@dataclasses.dataclass
class Row:
    config: str
    dtype: str
    frames: int
    batch: int
    slicing: bool
    size: int
    mean: float  # max |Δ| against PyTorch fp32
    logvar: float
    sample: float
    decode: float
    torch_bf16_decode: float | None = None  # PyTorch bf16's own max |Δ| against fp32, for scale


def _diff(a, b) -> float:
    return (a.float() - b.float()).abs().max().item()


@torch.no_grad()
def compare(vae, ours: TorchaxVAE, config: str, frames: int, batch: int, slicing: bool, size: int) -> Row:
    """One row: encode and decode a seeded random video both ways; max |Δ| of each result."""
    x = torch.randn(batch, 3, frames, size, size, generator=torch.Generator().manual_seed(frames))
    for model in (vae, ours):
        (model.enable_slicing if slicing else model.disable_slicing)()
    expected, actual = vae.encode(x).latent_dist, ours.encode(x).latent_dist
    expected_sample = expected.sample(generator=torch.Generator().manual_seed(0))
    actual_sample = actual.sample(generator=torch.Generator().manual_seed(0))
    reference = vae.decode(expected.mean).sample
    row = Row(
        config=config,
        dtype=str(ours.dtype).removeprefix("torch."),
        frames=frames,
        batch=batch,
        slicing=slicing,
        size=size,
        mean=_diff(actual.mean, expected.mean),
        logvar=_diff(actual.logvar, expected.logvar),
        sample=_diff(actual_sample, expected_sample),
        decode=_diff(ours.decode(expected.mean).sample, reference),
    )
    if ours.dtype == torch.bfloat16:
        torch_bf16 = copy.deepcopy(vae).to(torch.bfloat16)
        row.torch_bf16_decode = _diff(torch_bf16.decode(expected.mean.bfloat16()).sample, reference)
    return row


def table(rows: list[Row]) -> str:
    """A markdown table of the rows."""
    head = "| config | dtype | frames | batch | slicing | HxW | mean | logvar | sample | decode | PyTorch bf16 decode |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        bf16 = "" if r.torch_bf16_decode is None else f"{r.torch_bf16_decode:.2e}"
        lines.append(
            f"| {r.config} | {r.dtype} | {r.frames} | {r.batch} | {'on' if r.slicing else 'off'} | {r.size}x{r.size} "
            f"| {r.mean:.2e} | {r.logvar:.2e} | {r.sample:.2e} | {r.decode:.2e} | {bf16} |"
        )
    return "\n".join(lines)
