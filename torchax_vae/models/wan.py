"""The Wan family: diffusers' AutoencoderKLWan (Wan 2.1, and Wan 2.2's residual, patchified VAE).

A feat_cache VAE (torchax_vae/models/feat_cache.py says how those run). What
is Wan's own: the decoder's `first_chunk` flag, Wan 2.2's patchify (patch
size 2: 3 video channels become `in_channels` = 12) and its residual down
blocks, which need heights and widths divisible by the patch size times
their downsampling, and the compression ratios from the config.
"""

import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.wan", "WanVAE"] entry by looking the
# base class up in this module (pipelines.pipeline_loading_utils.get_class_obj_and_candidates).
from diffusers import AutoencoderKLWan, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_wan import (
    AvgDown3D,
    DupUp3D,
    WanAttentionBlock,
    WanCausalConv3d,
    WanResample,
    unpatchify,
)

from torchax_vae.engine import validation
from torchax_vae.models.feat_cache import FeatCache, FeatCacheVAE, encode_chunks  # noqa: F401 (encode_chunks: tests, scripts)
from torchax_vae.facade.family import causal_latent_shape, config_value, of_config, with_config


def video_channels(config) -> int:
    """Channels of the video (Wan 2.2 patchifies 3 into in_channels = 3 x patch^2)."""
    patch = config.patch_size
    return config.in_channels // (patch * patch) if patch else config.in_channels


def latent_shape(config, video_shape) -> tuple[int, ...]:
    """[B, z_dim, F, H, W] of the latents of a [B, C, frames, height, width] video under `config`."""
    return causal_latent_shape(video_shape, config.z_dim, config.scale_factor_temporal, config.scale_factor_spatial)


class Wan(FeatCache):
    """diffusers' `AutoencoderKLWan` (Wan 2.1, Wan 2.2), as diffusers runs it.

    See `torchax_vae.models.feat_cache` for the programs, the cache and the tiling.
    """

    model_class = AutoencoderKLWan
    resample_class = WanResample
    first_chunk = True
    # its RMS norms are per pixel: they keep their input's split without a mark
    marked = (WanCausalConv3d, WanResample, AvgDown3D, DupUp3D, WanAttentionBlock)

    patch_size = config_value("patch_size")

    video_channels = of_config(video_channels)

    spatial_compression_ratio = config_value("scale_factor_spatial")

    latent_shape = with_config(latent_shape)

    def check_video(self, shape, name: str) -> None:
        # Patchify needs whole patches; Wan 2.2's residual down blocks (AvgDown3D) average whole 2x2 blocks at
        # every spatial downsampling, where diffusers fails with a reshape error deep inside the encoder.
        multiple = self.config.patch_size or 1
        if self.config.is_residual:
            multiple *= 2 ** (len(self.config.dim_mult) - 1)
        if shape[3] % multiple or shape[4] % multiple:
            raise ValueError(
                f"{name} is {shape[3]}x{shape[4]} (shape {tuple(shape)}); this Wan VAE's encoder needs a height "
                f"and width divisible by {multiple}"
            )


class WanVAE(FeatCacheVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLWan` (Wan 2.1, Wan 2.2), as diffusers runs it."""

    family = Wan

    def tiled_encode(self, x: torch.Tensor) -> torch.Tensor:
        """diffusers' `tiled_encode`: the moments of `x`, which is patchified for Wan 2.2 (`patchify(video, 2)`), as there."""
        if self.config.patch_size:
            validation.check_video(x, name="tiled_encode input", channels=self.config.in_channels, role="encoder", rank=self.rank,
                                  dtype=self.dtype)
            x = unpatchify(x, patch_size=self.config.patch_size)  # the programs patchify again, on the device
        return super().tiled_encode(x)
