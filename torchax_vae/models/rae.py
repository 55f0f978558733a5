"""Representation autoencoders: diffusers' AutoencoderRAE (a frozen DINOv2, SigLIP2 or MAE encoder and a ViT-MAE
decoder; no diffusers pipeline uses it).

How diffusers runs it, and how this adapter does:

- `encode(images)` resizes any [B, C, H, W] image batch to the encoder's input size (bicubic), normalizes it with
  the encoder's mean and std, takes the encoder's patch tokens (DINOv2's after its CLS and register tokens) as a
  square grid [B, hidden, g, g] (g = encoder_input_size / encoder_patch_size), and normalizes those with the
  model's latent statistics and `scaling_factor`: `EncoderOutput(latent=...)`, no posterior. Here the whole of
  diffusers' `_encode` is one program of (weights, images) per input shape, traced from the model itself (DINOv2
  resizes its position embeddings with antialiased bicubic interpolation: torchax_vae/patches/antialias_resize.py).
- `decode(latents)` undoes that normalization, runs the decoder (its tokens resized to its own grid where they differ,
  bilinear) and unpatchifies: images of the config's `image_size` whatever the latents' grid. One program of
  diffusers' `_decode` per latent shape.
- Pixels in [0, 1], not [-1, 1] (what its encoder's mean and std normalize; its decoder gives them back so): the
  command's PNGs and the service's images convert with `pixel_mean` 0 and `pixel_std` 1 (torchax_vae/media/pixels.py).
- Slicing as diffusers' (one image at a time); no tiling (diffusers' class has none: `enable_tiling` raises
  NotImplementedError, as there, and "auto" never tiles). The latents come out normalized, so the command and the
  service scale nothing.
- Only the 2-D latents (`reshape_to_2d=True`, the default and the released models'); the token form is refused when
  wrapping. In training mode diffusers adds noise to the latents (`noise_tau` > 0): computing so is refused
  (`training_differences`), as for models with dropout.
"""

import jax
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.rae", "RAEVAE"] entry by looking the base class
# up in this module.
from diffusers import AutoencoderRAE, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.vae import DecoderOutput, EncoderOutput, IdentityDistribution

from torchax_vae.facade.family import Family, config_value
from torchax_vae.engine.lowering import Lowered
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.facade.policy import refused
from torchax_vae.models.vidtok import Method

__all__ = ["RAE", "RAEVAE"]


class RAELowered(Lowered):
    """diffusers' `_encode` and `_decode`, each one program of (weights, input)."""

    def encode_step(self, weights, images):
        return self._step("_encode", weights, images)

    def decode_step(self, weights, latents):
        return self._step("_decode", weights, latents)

    def _step(self, method: str, weights, x):
        dtype = x.dtype
        weights, x = self.env.j2t_iso((weights, x))
        flat = {f"model.{child}" + (f".{rest}" if rest else ""): t
                for child, group in weights.items() for rest, t in group.items()}
        with self._tracing(dtype, x.shape, 1):
            out = torch.func.functional_call(Method(self.model, lambda model, a: getattr(model, method)(a)), flat, (x,))
        return self.env.t2j_iso(out)


class RAE(Family):
    """diffusers' `AutoencoderRAE`, as diffusers runs it (the module docstring)."""

    model_class = AutoencoderRAE
    rank = 4
    pipeline_layout = "BCHW"
    decoded_layout = "BCHW"
    posterior_class = IdentityDistribution  # the encoder's output is the latents

    def lower(self, vae):
        if not vae.reshape_to_2d:
            raise ValueError("this AutoencoderRAE keeps its latents as tokens [B, N, C] (reshape_to_2d=False); a "
                             "TorchaxVAE takes the 2-D latents [B, C, h, w] (reshape_to_2d=True, the released models')")
        return self.lowering_on(RAELowered, vae, (), 1, rank=4)

    # ----- what the family says -----

    video_channels = config_value("num_channels")

    latent_channels = config_value("encoder_hidden_size")

    @property
    def spatial_compression_ratio(self) -> int:
        """The decoder's patch: a latent of the model's grid decodes to patch x patch pixels."""
        return self.config.patch_size

    @property
    def latent_grid(self) -> int:
        return self.config.encoder_input_size // self.config.encoder_patch_size

    def latent_shape(self, video_shape) -> tuple[int, ...]:
        """[B, hidden, g, g] whatever the images' size (the encoder takes them resized to its input size)."""
        return (video_shape[0], self.latent_channels, self.latent_grid, self.latent_grid)

    def check_latents(self, shape, name: str) -> None:
        if shape[-2] != shape[-1]:
            raise ValueError(f"{name}: AutoencoderRAE's decoder reads its latents as a square grid of tokens; got "
                             f"{shape[-2]}x{shape[-1]} (its encoder gives {self.latent_grid}x{self.latent_grid})")

    @property
    def pixel_mean(self) -> tuple:
        return (0.0,) * self.video_channels  # pixels in [0, 1] (the encoder normalizes them itself)

    @property
    def pixel_std(self) -> tuple:
        return (1.0,) * self.video_channels

    def training_differences(self, vae) -> list[str]:
        return [f"its encoder's noise (noise_tau={vae.noise_tau})"] if vae.noise_tau > 0 else []

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents  # (normalized inside encode with the model's statistics and scaling_factor)

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents

    # ----- encode / decode: one program each -----

    def encode(self, source, tiled: bool | None = None) -> jax.Array:
        return self._run("encoder", self.lowered.encode_step, source, unused="decoder")

    def decode(self, source, tiled: bool | None = None) -> jax.Array:
        return self._run("decoder", self.lowered.decode_step, source, unused="encoder")

    def _run(self, name: str, step, source, unused: str) -> jax.Array:
        """One program of `step` with the weights it reads: all but the other half's (the statistics buffers are
        both halves')."""
        weights = {child: group for child, group in self.engine.weights.items() if child != unused}
        return self.engine.run_batch(name, step, weights, source.take())


class RAEVAE(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderRAE`, as diffusers runs it (the module docstring)."""

    family = RAE

    def encode(self, x: torch.Tensor, return_dict: bool = True, generator: torch.Generator | None = None):
        """The latents of images [B, C, H, W], `EncoderOutput(latent=...)` as diffusers (`generator` feeds only the
        training noise, which a TorchaxVAE refuses: accepted and unused)."""
        latent = self._posterior(x).mode()
        return EncoderOutput(latent=latent) if return_dict else (latent,)

    def decode(self, z: torch.Tensor, return_dict: bool = True):
        """Images [B, C, image_size, image_size] of latents [B, hidden, g, g], as diffusers' decode."""
        return super().decode(z, return_dict=return_dict)

    def forward(self, sample: torch.Tensor, return_dict: bool = True, generator: torch.Generator | None = None):
        """Encode then decode, as diffusers' `AutoencoderRAE.forward`."""
        decoded = self.decode(self.encode(sample, return_dict=False)[0]).sample
        return DecoderOutput(sample=decoded) if return_dict else (decoded,)

    __call__ = forward

    enable_tiling = refused("tiling")

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("use_tiling", "tiled_encode", "tiled_decode")
