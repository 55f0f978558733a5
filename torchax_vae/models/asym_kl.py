"""The inpainting VAE: diffusers' AsymmetricAutoencoderKL (StableDiffusionInpaintPipeline, its PAG variant).

How diffusers runs it, and how this adapter does: as AutoencoderKL's images
(models/kl.py), one encoder (+ quant_conv) call and one (post_quant_conv +)
decoder call on the whole batch, one program per shape each way, with what
this class does its own way:

- Its decoder (`MaskConditionDecoder`) may take the image being inpainted and
  its mask: `decode(z, generator=None, image=None, mask=None)`. With both, a
  condition encoder runs on the masked image and each upsampling level blends
  its features in where the mask is 0, as the pipeline asks
  (`isinstance(self.vae, AsymmetricAutoencoderKL)` there passes them). Here
  that is its own program of (weights, latents, image, mask); without them,
  the plain decoder's. `generator` is accepted and unused, as in diffusers.
- `plan` of a decode compiles the conditioned program, the one SD
  inpainting's pipelines run.
- No tiling and no slicing: diffusers' class has neither (`enable_tiling`
  and `enable_slicing` raise there), and neither has this adapter.
"""

import functools

import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.asym_kl", "AsymmetricKLVAE"] entry by looking the
# base class up in this module.
from diffusers import AsymmetricAutoencoderKL, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.vae import DecoderOutput

from torchax_vae.engine import convert, validation
from torchax_vae.engine.arrays import is_abstract
from torchax_vae.models.kl import KL, KLVAE
from torchax_vae.facade.policy import refused

__all__ = ["AsymmetricKL", "AsymmetricKLVAE"]


class AsymmetricKL(KL):
    """diffusers' `AsymmetricAutoencoderKL`, as diffusers runs it (the module docstring)."""

    model_class = AsymmetricAutoencoderKL
    settings = ()  # no tiling attributes in diffusers' class

    def _beyond_a_tile(self, kind: str, shape) -> bool:
        return False  # never tiled: diffusers' class has no tiling

    def decode(self, source, tiled: bool | None = None, image=None, mask=None):
        """The decoded images; with `image` and `mask` (torch tensors [B, C, H, W], [B, 1, H, W]) the decoder
        conditioned on them, one program of its own."""
        if image is None or mask is None:
            return super().decode(source, tiled)
        placement, dtype = self.engine.placement, self.engine.jax_dtype
        latents = source.take()
        abstract = is_abstract(latents)
        condition = [_as_jax(t, dtype, placement.activation(tuple(t.shape)), abstract) for t in (image, mask)]
        weights = {k: self.engine.weights[k] for k in ("decoder", "post_quant_conv") if k in self.engine.weights}
        return self.engine.run_batch("decoder+mask", self.lowered.decode_step, weights, latents, *condition)


def _as_jax(tensor: torch.Tensor, dtype, sharding, abstract: bool):
    import jax

    if abstract or tensor.is_meta:
        return jax.ShapeDtypeStruct(tuple(tensor.shape), dtype, sharding=sharding)
    return convert.to_jax(tensor.detach(), dtype, sharding)


class AsymmetricKLVAE(KLVAE):
    """`TorchaxVAE` for diffusers' `AsymmetricAutoencoderKL` (the module docstring)."""

    family = AsymmetricKL

    def decode(self, z: torch.Tensor, generator=None, image: torch.Tensor | None = None,
               mask: torch.Tensor | None = None, return_dict: bool = True):
        """Decodes latents [B, C, H, W] into images, conditioned on the inpainted `image` [B, 3, H x 8, W x 8] and
        its `mask` [B, 1, H x 8, W x 8] where both are given, as diffusers' `decode(z, generator, image, mask)`."""
        return self._decoder_output(self._decode_call(z, generator, image, mask), return_dict)

    def _decode_call(self, z: torch.Tensor, generator=None, image: torch.Tensor | None = None,
                     mask: torch.Tensor | None = None):
        validation.check_video(z, name="decode input", channels=self.latent_channels, role="decoder", rank=4,
                               dtype=self.dtype)
        condition = {}
        if image is not None and mask is not None:
            size = [n * self.spatial_compression_ratio for n in z.shape[-2:]]
            for name, tensor, channels in (("image", image, self.video_channels), ("mask", mask, 1)):
                if not isinstance(tensor, torch.Tensor) or tuple(tensor.shape) != (z.shape[0], channels, *size):
                    shape = tuple(tensor.shape) if isinstance(tensor, torch.Tensor) else type(tensor).__name__
                    raise ValueError(f"decode's {name} must be a tensor [{z.shape[0]}, {channels}, {size[0]}, "
                                     f"{size[1]}] for latents {tuple(z.shape)}, got {shape}")
            condition = {"image": image.to(self.dtype), "mask": mask.to(self.dtype)}
        return self._prepare(functools.partial(self._per_sample, self._family.decode_chunks, **condition), z)

    def forward(self, sample: torch.Tensor, mask: torch.Tensor | None = None, sample_posterior: bool = False,
                return_dict: bool = True, generator=None):
        """Encode then decode conditioned on `sample` and `mask`, as diffusers' `forward`."""
        posterior = self.encode(sample).latent_dist
        z = posterior.sample(generator=generator) if sample_posterior else posterior.mode()
        dec = self.decode(z, generator, sample, mask).sample
        return DecoderOutput(sample=dec) if return_dict else (dec,)

    __call__ = forward

    def _planned_run(self, kind: str, source):
        """What `plan` compiles for a decode: the decoder conditioned on the image and mask, the program SD
        inpainting's pipelines run (they always pass both); encode as AutoencoderKL's. (`precompile` and `lower`
        follow a call without them, as the command's unconditioned decode makes.)"""
        if kind != "decode":
            return super()._planned_run(kind, source)
        batch, _, height, width = source.shape
        size = (height * self.spatial_compression_ratio, width * self.spatial_compression_ratio)
        condition = {"image": torch.empty(batch, self.video_channels, *size, device="meta"),
                     "mask": torch.empty(batch, 1, *size, device="meta")}
        return self._per_sample(functools.partial(self._family.decode, **condition), source)

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("tiled_encode", "_tiled_encode", "tiled_decode", "unpack_latents", "use_tiling", "use_slicing")

    enable_tiling = refused("tiling")

    enable_slicing = refused("slicing")

    def disable_tiling(self) -> None:
        """Nothing to disable (diffusers' sets a flag that nothing reads)."""

    def disable_slicing(self) -> None:
        """Nothing to disable (diffusers' sets a flag that nothing reads)."""
