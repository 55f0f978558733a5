"""Flux.2's image VAE: diffusers' AutoencoderKLFlux2 (Flux2Pipeline, Flux2KleinPipeline and their variants).

diffusers' class is AutoencoderKL's code with 32 latent channels and one more
child, `bn`: a BatchNorm2d over the latents in 2x2 patches (4 x 32 channels)
that encode and decode never run. Its running statistics are the latent
normalization: the pipelines patchify the latents and apply
`(z - running_mean) / sqrt(running_var + batch_norm_eps)` before the
transformer, and the inverse before `decode` (pipeline_flux2.py). So the calls
are `KLVAE`'s (models/kl.py: one program per image shape, diffusers' tiling and
slicing); what this adapter adds is that normalization, the packed latents of
`output_type="latent"`, and `vae.bn` as the pipelines read it (a read-only view
of the statistics, `weights.Submodule`).
"""

import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.flux2", "Flux2VAE"] entry by looking the base
# class up in this module.
from diffusers import AutoencoderKLFlux2, ModelMixin  # noqa: F401

from torchax_vae.engine import convert, validation
from torchax_vae.models.kl import KL, KLVAE, latent_shape, video_channels  # noqa: F401  (the module functions every family has)

__all__ = ["Flux2", "Flux2VAE", "latent_shape", "video_channels"]


def patchify(latents: torch.Tensor) -> torch.Tensor:
    """[B, C, h, w] as [B, C x 4, h/2, w/2], as `Flux2Pipeline._patchify_latents`."""
    batch, channels, height, width = latents.shape
    latents = latents.view(batch, channels, height // 2, 2, width // 2, 2).permute(0, 1, 3, 5, 2, 4)
    return latents.reshape(batch, channels * 4, height // 2, width // 2)


def unpatchify(latents: torch.Tensor) -> torch.Tensor:
    """`patchify` undone, as `Flux2Pipeline._unpatchify_latents`."""
    batch, channels, height, width = latents.shape
    latents = latents.reshape(batch, channels // 4, 2, 2, height, width).permute(0, 1, 4, 2, 5, 3)
    return latents.reshape(batch, channels // 4, height * 2, width * 2)


class Flux2(KL):
    """diffusers' `AutoencoderKLFlux2`: `KL`'s calls, Flux.2's latent normalization."""

    model_class = AutoencoderKLFlux2
    # encode and decode never run `bn` (the pipelines read its statistics), so its training mode changes nothing
    not_run = ("bn",)

    def _statistics(self, latents: torch.Tensor):
        """The `bn` running mean and standard deviation, [1, C x 4, 1, 1] as the pipelines shape them."""
        bn = self.engine.weights["bn"]
        shape = (1, -1, 1, 1)
        mean, var = (convert.to_torch(bn[name]).view(shape) for name in ("running_mean", "running_var"))
        std = torch.sqrt(var + self.config.batch_norm_eps)
        return mean.to(latents.device, latents.dtype), std.to(latents.device, latents.dtype)

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """Encoded latents [B, C, h, w] normalized as Flux2Pipeline normalizes them (`_encode_vae_image`: patchify,
        then `bn`'s statistics), kept in the decoder's layout [B, C, h, w] (`patchify` gives the transformer's)."""
        mean, std = self._statistics(latents)
        return unpatchify((patchify(latents) - mean) / std)

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """`scale_latents` undone, as Flux2Pipeline de-normalizes latents before `decode`."""
        mean, std = self._statistics(latents)
        return unpatchify(patchify(latents) * std + mean)


class Flux2VAE(KLVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLFlux2` (the module docstring)."""

    family = Flux2

    def unpack_latents(self, latents: torch.Tensor, height: int, width: int) -> torch.Tensor:
        """Flux2Pipeline's `output_type="latent"` [B, tokens, C x 4] of a height x width image as [B, C, h, w]: the
        tokens in row order (`_unpack_latents_with_ids` with the pipeline's own ids), unpatchified; still
        normalized (`unscale_latents` undoes that)."""
        rows, cols = validation.packed_grid(latents, height, width, self.spatial_compression_ratio,
                                            self.latent_channels)
        batch, _, channels = latents.shape
        return unpatchify(latents.view(batch, rows, cols, channels).permute(0, 3, 1, 2))
