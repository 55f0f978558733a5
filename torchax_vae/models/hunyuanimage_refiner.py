"""HunyuanImage 2.1's refiner VAE: diffusers' AutoencoderKLHunyuanImageRefiner (HunyuanImageRefinerPipeline's `vae`).

How diffusers runs it, and how this adapter does:

- Videos [B, C, F, H, W]; the refiner pipeline passes its image as one frame (`image.unsqueeze(2)`) and decodes
  [B, C, 1, h, w]. A causal 3-D encoder and decoder whose DCAE down- and upsampling fold 2 x 2 pixels into channels
  at each spatial level: latents [B, latent_channels, F, H / ratio, W / ratio] (the "temporal" levels keep the
  frame count too), so heights and widths are multiples of `spatial_compression_ratio`.
- `encode` and `decode` are one call on the whole batch each: one program per input shape. The posterior is
  diffusers' `DiagonalGaussianDistribution`; the pipeline scales latents by `scaling_factor` alone.
- Untiled only. diffusers' tiled paths for this class (0.42.1) step their tiles in latent units over pixels:
  `tiled_encode` fails on a 64x64 image with 32-pixel tiles (a reshape of 352 values), and `tiled_decode` of 16x16
  latents gives 18x18 pixels instead of 64x64. `enable_tiling`, `tiled_encode` and `tiled_decode` are refused in one
  line here, and "auto" never tiles; the pipeline never enables tiling.
"""

import jax
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.hunyuanimage_refiner", "HunyuanImageRefinerVAE"]
# entry by looking the base class up in this module.
from diffusers import AutoencoderKLHunyuanImageRefiner, ModelMixin  # noqa: F401

from torchax_vae.facade.family import Family, config_value
from torchax_vae.engine.lowering import OneChildLowered
from torchax_vae.facade.vae import TorchaxVAE

__all__ = ["HunyuanImageRefiner", "HunyuanImageRefinerVAE"]

UNTILED = ("AutoencoderKLHunyuanImageRefiner runs untiled here: diffusers' tiled paths for this class step their "
           "tiles in latent units over pixels (tiled_encode fails, tiled_decode gives another size; "
           "torchax_vae/models/hunyuanimage_refiner.py), and its pipeline never tiles")


class HunyuanImageRefiner(Family):
    """diffusers' `AutoencoderKLHunyuanImageRefiner`, as diffusers runs it untiled (the module docstring)."""

    model_class = AutoencoderKLHunyuanImageRefiner

    def lower(self, vae):
        return self.lowering_on(OneChildLowered, vae, (), self.spatial_compression_ratio)

    video_channels = config_value("in_channels")

    spatial_compression_ratio = config_value("spatial_compression_ratio")

    @property
    def temporal_compression_ratio(self) -> int:
        return 1  # its temporal DCAE levels fold pixels alone: the frame count stays

    def latent_shape(self, video_shape) -> tuple[int, ...]:
        batch, _, frames, height, width = video_shape
        ratio = self.spatial_compression_ratio
        return (batch, self.latent_channels, frames, height // ratio, width // ratio)

    def check_video(self, shape, name: str) -> None:
        ratio = self.spatial_compression_ratio
        if shape[3] % ratio or shape[4] % ratio:
            raise ValueError(f"{name} is {shape[3]}x{shape[4]} (shape {tuple(shape)}); AutoencoderKLHunyuanImageRefiner "
                             f"folds 2x2 pixels into channels at each level: heights and widths must be multiples of "
                             f"{ratio}")

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents * self.config.scaling_factor  # HunyuanImageRefinerPipeline's

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents / self.config.scaling_factor

    def encode(self, source, tiled: bool | None = None) -> jax.Array:
        if tiled:
            raise NotImplementedError(UNTILED)
        return self._run("encoder", self.lowered.encode_step, source)

    def decode(self, source, tiled: bool | None = None) -> jax.Array:
        if tiled:
            raise NotImplementedError(UNTILED)
        return self._run("decoder", self.lowered.decode_step, source)

    def _run(self, child: str, step, source) -> jax.Array:
        return self.engine.run_batch(child, step, {child: self.engine.weights[child]}, source.take())


class HunyuanImageRefinerVAE(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLHunyuanImageRefiner` (the module docstring)."""

    family = HunyuanImageRefiner

    def enable_tiling(self, *args, **kwargs) -> None:
        raise NotImplementedError(UNTILED)

    def tiled_encode(self, x: torch.Tensor, *args, **kwargs):
        raise NotImplementedError(UNTILED)

    def tiled_decode(self, z: torch.Tensor, *args, **kwargs):
        raise NotImplementedError(UNTILED)
