"""The HunyuanVideo 1.5 family: diffusers' AutoencoderKLHunyuanVideo15 (HunyuanVideo15Pipeline, and its
image-to-video pipeline).

A whole-clip VAE on the frame-window scheme (torchax_vae/models/windows.py) without the windows: diffusers'
class has no framewise encoding or decoding, so every encoder and decoder call sees the whole clip, one
program per clip length and resolution, as in PyTorch. Its blocks: replicate-padded causal convolutions,
RMS norms over channels, 16x spatial compression by channel-matching pixel-(un)shuffle samplers, 32 latent
channels, and a mid-block attention over all the clip's tokens with a frame-causal mask (built vectorized
here: torchax_vae/patches/causal_mask.py). Spatial tiling is diffusers' own for this class: tiles of
`tile_sample_min_height/width` (latents: `tile_latent_min_height/width`) overlapping by
`tile_overlap_factor`. Its pipelines divide latents by `scaling_factor` before decoding, and multiply the
encoded image's latents by it.
"""

# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.hunyuanvideo15", "HunyuanVideo15VAE"] entry
# by looking the base class up in this module.
from diffusers import AutoencoderKLHunyuanVideo15, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_hunyuanvideo15 import (
    HunyuanVideo15CausalConv3d,
    HunyuanVideo15Downsample,
    HunyuanVideo15RMS_norm,
    HunyuanVideo15Upsample,
)

from torchax_vae.placement import tiling
# the same config fields (in_channels, latent_channels, the two compression ratios, scaling_factor)
from torchax_vae.models.hunyuanvideo import HunyuanVideo, latent_shape, video_channels  # noqa: F401
from torchax_vae.models.windows import Windows, WindowVAE
from torchax_vae.facade.policy import tiling_switch

__all__ = ["HunyuanVideo15VAE", "latent_shape", "video_channels"]


class HunyuanVideo15(HunyuanVideo):
    """diffusers' `AutoencoderKLHunyuanVideo15`, as diffusers runs it (module docstring).

    HunyuanVideo's family with this class's layers, whole clips, and its tiling arguments; the channels, ratios,
    latent shape and `scaling_factor` normalization (as HunyuanVideo15Pipeline applies it) are HunyuanVideo's.
    """

    model_class = AutoencoderKLHunyuanVideo15
    marked = (HunyuanVideo15CausalConv3d, HunyuanVideo15RMS_norm, HunyuanVideo15Upsample, HunyuanVideo15Downsample)
    frame_windows = False
    settings = ("tile_sample_min_height", "tile_sample_min_width", "tile_latent_min_height", "tile_latent_min_width",
                "tile_overlap_factor")
    check_video = Windows._check_clip

    def _tile_threshold(self, kind: str) -> tuple[int, int]:
        if kind == "encode":
            return (self.tile_sample_min_height, self.tile_sample_min_width)
        return (self.tile_latent_min_height, self.tile_latent_min_width)

    def _tile_layout(self, kind: str, size: tuple[int, int]) -> tiling.TileLayout:
        """diffusers' tiled_encode / tiled_decode arithmetic: input tiles every int(tile * (1 - overlap)),
        outputs blended over int(output tile * overlap) and cut to the rest."""
        sample = (self.tile_sample_min_height, self.tile_sample_min_width)
        latent = (self.tile_latent_min_height, self.tile_latent_min_width)
        tile, out = (sample, latent) if kind == "encode" else (latent, sample)
        overlap = self.tile_overlap_factor
        return tiling.layout(*tile, *out, overlap, overlap)


class HunyuanVideo15VAE(WindowVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLHunyuanVideo15` (the module docstring)."""

    family = HunyuanVideo15

    enable_tiling = tiling_switch(
        "tile_sample_min_height", "tile_sample_min_width", "tile_latent_min_height", "tile_latent_min_width", "tile_overlap_factor")
