"""The Qwen-Image family: diffusers' AutoencoderKLQwenImage (Qwen-Image, Qwen-Image 2.1, Krea 2, NucleusMoE-Image).

A Wan-2.1-derived feat_cache VAE (torchax_vae/models/feat_cache.py says how
those run) with its own layer classes: no patchify, a decoder without Wan's
`first_chunk` flag, `input_channels` for the video's channels, and the
compression ratios from `temperal_downsample` (8x spatially, 4x in time). Its
pipelines use it for images: one frame, [B, C, 1, H, W], so one encoder and
one decoder program per resolution.
"""

import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.qwenimage", "QwenImageVAE"] entry by
# looking the base class up in this module.
from diffusers import AutoencoderKLQwenImage, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_qwenimage import (
    QwenImageAttentionBlock,
    QwenImageCausalConv3d,
    QwenImageResample,
)

from torchax_vae.engine import validation
from torchax_vae.models.feat_cache import FeatCache, FeatCacheVAE
from torchax_vae.facade.family import causal_latent_shape, of_config, with_config


def video_channels(config) -> int:
    return config.input_channels


def latent_shape(config, video_shape) -> tuple[int, ...]:
    """[B, z_dim, F, H, W] of the latents of a [B, C, frames, height, width] video under `config`."""
    return causal_latent_shape(video_shape, config.z_dim, 2 ** sum(config.temperal_downsample), 2 ** len(config.temperal_downsample))


class QwenImage(FeatCache):
    """diffusers' `AutoencoderKLQwenImage`, as diffusers runs it (see `torchax_vae.models.feat_cache`)."""

    model_class = AutoencoderKLQwenImage
    resample_class = QwenImageResample
    first_chunk = False
    marked = (QwenImageCausalConv3d, QwenImageResample, QwenImageAttentionBlock)

    video_channels = of_config(video_channels)

    @property
    def spatial_compression_ratio(self) -> int:
        return 2 ** len(self.config.temperal_downsample)

    latent_shape = with_config(latent_shape)


class QwenImageVAE(FeatCacheVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLQwenImage` (the module docstring)."""

    family = QwenImage

    def unpack_latents(self, latents: torch.Tensor, height: int, width: int) -> torch.Tensor:
        """The pipelines' packed latents [B, tokens, C x 4] (2x2 patches) of a height x width image as [B, C, 1, h, w].

        As `QwenImagePipeline._unpack_latents` does before decoding (what `output_type="latent"` returns is packed).
        """
        from diffusers import QwenImagePipeline

        ratio = self.spatial_compression_ratio
        validation.packed_grid(latents, height, width, ratio, self.latent_channels)
        return QwenImagePipeline._unpack_latents(latents, height, width, ratio)
