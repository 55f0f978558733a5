"""The HunyuanVideo family: diffusers' AutoencoderKLHunyuanVideo (HunyuanVideo, Kandinsky 5 and 6).

A frame-window VAE (torchax_vae/models/windows.py says how those run): no
cache, replicate-padded causal convolutions, a causal attention mask over
frames in its mid block, and frame windows of `tile_sample_min_num_frames`
(16 frames, 4 latent frames) every 12. Its pipelines scale latents by
`scaling_factor`.
"""

import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.hunyuanvideo", "HunyuanVideoVAE"] entry
# by looking the base class up in this module.
from diffusers import AutoencoderKLHunyuanVideo, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_hunyuan_video import (
    HunyuanVideoCausalConv3d,
    HunyuanVideoDownsampleCausal3D,
    HunyuanVideoUpsampleCausal3D,
)

from torchax_vae.patches.group_norm import TorchaxGroupNorm
from torchax_vae.models.windows import Windows, WindowVAE
from torchax_vae.facade.family import causal_latent_shape, config_value, of_config, with_config


def video_channels(config) -> int:
    return config.in_channels


def latent_shape(config, video_shape) -> tuple[int, ...]:
    """[B, latent_channels, F, H, W] of the latents of a [B, C, frames, height, width] video under `config`."""
    return causal_latent_shape(video_shape, config.latent_channels, config.temporal_compression_ratio, config.spatial_compression_ratio)


class HunyuanVideo(Windows):
    """diffusers' `AutoencoderKLHunyuanVideo`, as diffusers runs it (see `torchax_vae.models.windows`)."""

    model_class = AutoencoderKLHunyuanVideo
    marked = (HunyuanVideoCausalConv3d, TorchaxGroupNorm, HunyuanVideoUpsampleCausal3D, HunyuanVideoDownsampleCausal3D)

    video_channels = of_config(video_channels)

    spatial_compression_ratio = config_value("spatial_compression_ratio")

    temporal_compression_ratio = config_value("temporal_compression_ratio")

    latent_shape = with_config(latent_shape)

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents * self.config.scaling_factor  # as HunyuanVideoImageToVideoPipeline.prepare_latents

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents / self.config.scaling_factor  # as HunyuanVideoPipeline before decoding


class HunyuanVideoVAE(WindowVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLHunyuanVideo` (the module docstring)."""

    family = HunyuanVideo
