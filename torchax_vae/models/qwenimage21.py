"""The Qwen-Image 2.1 family: diffusers' AutoencoderKLQwenImage21 (QwenImage21Pipeline).

A Wan-2.2-style feat_cache VAE for images (torchax_vae/models/feat_cache.py
says how those run): residual blocks with `QwenImage21AvgDown3D` and
`QwenImage21DupUp3D`, the decoder's `first_chunk` flag, 4-channel images
(`in_channels`), an optional patchify, and 16x spatial compression
(`scale_factor_spatial`). Its causal convolutions are 2-D convolutions over
the single frame, which diffusers refuses a cache: it encodes and decodes
one frame ([B, C, 1, H, W]), so one encoder and one decoder program per
resolution, and more frames are refused at the boundary. Its pipeline packs
latents one token per latent pixel (Qwen-Image's packs 2x2 patches).
"""

import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.qwenimage21", "QwenImage21VAE"] entry by
# looking the base class up in this module.
from diffusers import AutoencoderKLQwenImage21, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_qwenimage21 import (
    QwenImage21AttentionBlock,
    QwenImage21AvgDown3D,
    QwenImage21CausalConv3d,
    QwenImage21DupUp3D,
    QwenImage21Resample,
)

from torchax_vae.models.feat_cache import FeatCache, FeatCacheVAE
from torchax_vae.models.wan import latent_shape, video_channels  # the same config fields (in_channels, patch_size, scale_factor_*)
from torchax_vae.facade.family import config_value, of_config, with_config

__all__ = ["QwenImage21VAE", "latent_shape", "video_channels"]


class QwenImage21(FeatCache):
    """diffusers' `AutoencoderKLQwenImage21`, as diffusers runs it (see `torchax_vae.models.feat_cache`)."""

    model_class = AutoencoderKLQwenImage21
    resample_class = QwenImage21Resample
    first_chunk = True
    marked = (QwenImage21CausalConv3d, QwenImage21Resample, QwenImage21AvgDown3D, QwenImage21DupUp3D,
              QwenImage21AttentionBlock)

    patch_size = config_value("patch_size")

    video_channels = of_config(video_channels)

    spatial_compression_ratio = config_value("scale_factor_spatial")

    latent_shape = with_config(latent_shape)

    def check_video(self, shape, name: str) -> None:
        if shape[2] != 1:
            raise ValueError(f"{name} has {shape[2]} frames (shape {tuple(shape)}); AutoencoderKLQwenImage21 encodes "
                             "images: one frame, [B, C, 1, H, W]")
        multiple = (self.config.patch_size or 1) * 2 ** (len(self.config.dim_mult) - 1)
        if shape[3] % multiple or shape[4] % multiple:
            raise ValueError(f"{name} is {shape[3]}x{shape[4]} (shape {tuple(shape)}); this VAE's encoder needs a "
                             f"height and width divisible by {multiple}")

    def check_latents(self, shape, name: str) -> None:
        if shape[2] != 1:
            raise ValueError(f"{name} has {shape[2]} latent frames (shape {tuple(shape)}); AutoencoderKLQwenImage21 "
                             "decodes images: one latent frame, [B, C, 1, h, w]")


class QwenImage21VAE(FeatCacheVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLQwenImage21` (the module docstring)."""

    family = QwenImage21

    def unpack_latents(self, latents: torch.Tensor, height: int, width: int) -> torch.Tensor:
        """The pipeline's packed latents [B, tokens, C] (one token per latent pixel) of a height x width image as
        [B, C, 1, h, w], as `QwenImage21Pipeline._unpack_latents` does before decoding (`output_type="latent"`)."""
        from diffusers import QwenImage21Pipeline

        batch, tokens, channels = latents.shape
        ratio = self.spatial_compression_ratio
        rows, cols = 2 * (int(height) // (ratio * 2)), 2 * (int(width) // (ratio * 2))
        if rows * cols != tokens or channels != self.latent_channels:
            raise ValueError(
                f"packed latents {tuple(latents.shape)} do not fit a {height}x{width} image: expected "
                f"[B, {rows * cols}, {self.latent_channels}] (one token per latent pixel, {rows}x{cols})"
            )
        return QwenImage21Pipeline._unpack_latents(latents, height, width, ratio)
