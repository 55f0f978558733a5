"""Kandinsky's image VAE: diffusers' AutoencoderKLKVAE (KVAE 2D; no diffusers pipeline uses it).

How diffusers runs it, and how this adapter does: as AutoencoderKL's images (models/kl.py), one encoder call and one
decoder call on the whole batch, one program per shape each way, with what this class has its own way:

- No `quant_conv` / `post_quant_conv`: the encoder's output is the posterior's moments, the decoder takes the latents
  (its spatial norms condition every level on them, as MoVQ's).
- Its config names: `z_channels` latent channels, `ch_mult` levels (2x each after the first), `in_channels`.
- Tiling (`enable_tiling()`) and slicing as diffusers': `tile_sample_min_size` (the config's `sample_size`),
  `tile_latent_min_size`, `tile_overlap_factor`; "auto" tiles only what would not fit, as every family.
- No latent normalization: the config has no `scaling_factor`, and no pipeline scales its latents.
"""

import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.kvae", "KVAEModel"] entry by looking the base
# class up in this module.
from diffusers import AutoencoderKLKVAE, ModelMixin  # noqa: F401

from torchax_vae.models.kl import KL, KLVAE
from torchax_vae.facade.family import config_value

__all__ = ["KVAE", "KVAEModel"]


class KVAE(KL):
    """diffusers' `AutoencoderKLKVAE`, as diffusers runs it (the module docstring)."""

    model_class = AutoencoderKLKVAE

    video_channels = config_value("in_channels")

    latent_channels = config_value("z_channels")

    @property
    def spatial_compression_ratio(self) -> int:
        return 2 ** (len(self.config.ch_mult) - 1)

    def latent_shape(self, video_shape) -> tuple[int, ...]:
        batch, _, height, width = video_shape
        ratio = self.spatial_compression_ratio
        return (batch, self.latent_channels, height // ratio, width // ratio)

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents  # (no scaling_factor: no pipeline normalizes its latents)

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents


class KVAEModel(KLVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLKVAE` (the module docstring)."""

    family = KVAE

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("tiled_encode", "unpack_latents")
