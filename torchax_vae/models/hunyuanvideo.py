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


def video_channels(config) -> int:
    return config.in_channels


def latent_shape(config, video_shape) -> tuple[int, ...]:
    """[B, latent_channels, F, H, W] of the latents of a [B, C, frames, height, width] video under `config`."""
    batch, _, frames, height, width = video_shape
    temporal, spatial = config.temporal_compression_ratio, config.spatial_compression_ratio
    return (batch, config.latent_channels, (frames - 1) // temporal + 1, height // spatial, width // spatial)


class HunyuanVideo(Windows):
    """diffusers' `AutoencoderKLHunyuanVideo`, as diffusers runs it (see `torchax_vae.models.windows`)."""

    model_class = AutoencoderKLHunyuanVideo
    marked = (HunyuanVideoCausalConv3d, TorchaxGroupNorm, HunyuanVideoUpsampleCausal3D, HunyuanVideoDownsampleCausal3D)

    @property
    def video_channels(self) -> int:
        return video_channels(self.config)

    @property
    def spatial_compression_ratio(self) -> int:
        return self.config.spatial_compression_ratio

    @property
    def temporal_compression_ratio(self) -> int:
        return self.config.temporal_compression_ratio

    def latent_shape(self, video_shape) -> tuple[int, ...]:
        return latent_shape(self.config, video_shape)

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents * self.config.scaling_factor  # as HunyuanVideoImageToVideoPipeline.prepare_latents

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents / self.config.scaling_factor  # as HunyuanVideoPipeline before decoding


class HunyuanVideoVAE(WindowVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLHunyuanVideo` (the module docstring)."""

    family = HunyuanVideo
