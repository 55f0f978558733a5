"""The VQ image VAE: diffusers' VQModel (Kandinsky 2.1/2.2/3's MoVQ, latent diffusion's VQ-VAE).

How diffusers runs it, and how this adapter does: as AutoencoderKL's images
(models/kl.py), one encoder call and one decoder call on the whole batch, one
program per shape each way, with what this class does its own way:

- `encode` returns `VQEncoderOutput(latents=...)`: the encoder's output after
  `quant_conv`, not quantized and with no distribution.
- `decode(h, force_not_quantize=False)` first snaps each latent vector to its
  nearest codebook entry (`quantize`: argmin of the distances), unless
  `force_not_quantize` (what the Kandinsky pipelines pass); then
  `post_quant_conv` and the decoder, which with `norm_type="spatial"` (MoVQ)
  takes the quantized latents as its spatial norm's condition. Each choice is
  a program of its own ("decoder+quantize", "decoder"). The commit loss it
  returns beside the sample is (1 + beta) x the mean squared distance to the
  codebook entries (zeros when not quantized), as diffusers' in eval mode.
- Codebook indices (`lookup_from_codebook`, aMUSEd's integer latents) are not
  taken yet (docs/limits.md): refused at the boundary.
- No tiling (diffusers' class has none); slicing neither.
"""

import functools

import jax
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.vq", "VQVAE"] entry by looking the base class up
# in this module.
from diffusers import ModelMixin, VQModel  # noqa: F401
from diffusers.models.autoencoders.vae import DecoderOutput, IdentityDistribution
from diffusers.models.autoencoders.vq_model import VQEncoderOutput

from .. import convert, validation
from ..vae import TorchaxVAE
from .kl import KL, KLVAE, _where_diffusers_has
from .windows import WindowLowered

__all__ = ["VQ", "VQVAE"]


class VQLowered(WindowLowered):
    """The encoder (+ quant_conv) as AutoencoderKL's; the decode with or without the codebook."""

    def decode_step(self, weights, latents, *, quantize: bool):
        dtype = latents.dtype
        weights, latents = self.env.j2t_iso((weights, latents))
        with self._tracing(dtype, latents.shape, 1):
            quant = self._call("quantize", weights, latents)[0] if quantize else latents
            hidden = self._call("post_quant_conv", weights, quant)
            spatial = self.model.config.norm_type == "spatial"
            out = self._call("decoder", weights, hidden, quant if spatial else None)
        return self.env.t2j_iso(out)


class VQ(KL):
    """diffusers' `VQModel`, as diffusers runs it (the module docstring)."""

    model_class = VQModel
    posterior_class = IdentityDistribution  # the latents themselves
    settings = ()

    def lower(self, vae):
        placement = self.engine.placement
        return VQLowered(vae, placement.mesh, placement.platform, self.marked, self.spatial_compression_ratio,
                         rank=4)

    @property
    def latent_channels(self) -> int:
        return self.config.vq_embed_dim or self.config.latent_channels  # what decode takes: quant_conv's output

    def _beyond_a_tile(self, kind: str, shape) -> bool:
        return False  # never tiled: diffusers' class has no tiling

    def decode(self, source, tiled: bool | None = None, quantize: bool = True) -> jax.Array:
        weights = {k: self.engine.weights[k] for k in ("quantize", "post_quant_conv", "decoder")}
        step = functools.partial(self.lowered.decode_step, quantize=quantize)
        out = self.engine.programs.run("decoder+quantize" if quantize else "decoder", step, weights, source.take())
        self.engine.ran_batch(out)
        return out

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents  # the Kandinsky pipelines hand MoVQ's latents over as they are

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents


class VQVAE(KLVAE):
    """`TorchaxVAE` for diffusers' `VQModel` (the module docstring)."""

    family = VQ

    def encode(self, x: torch.Tensor, return_dict: bool = True):
        """Encodes images [B, C, H, W] into latents, `VQEncoderOutput(latents=...)` as diffusers (not quantized)."""
        latents = self._posterior(x).mode()
        return VQEncoderOutput(latents=latents) if return_dict else (latents,)

    def decode(self, h: torch.Tensor, force_not_quantize: bool = False, return_dict: bool = True, shape=None):
        """Decodes latents [B, C, H, W] into images (`DecoderOutput(sample, commit_loss)`), quantized first unless
        `force_not_quantize`, as diffusers does."""
        if not h.is_floating_point() or shape is not None:
            raise ValueError("VQModel's codebook indices (lookup_from_codebook, `shape`: aMUSEd's integer latents) "
                             "are not taken by TorchaxVAE yet; pass the latents [B, C, H, W] (docs/limits.md)")
        validation.check_video(h, name="decode input", channels=self.latent_channels, role="decoder", rank=4,
                               dtype=self.dtype)
        quantize = not force_not_quantize
        sample = self._compute(functools.partial(self._family.decode, quantize=quantize), h)
        loss = self._commit_loss(h) if quantize else torch.zeros(h.shape[0], dtype=h.dtype, device=h.device)
        return DecoderOutput(sample=sample, commit_loss=loss) if return_dict else (sample, loss)

    def _commit_loss(self, h: torch.Tensor) -> torch.Tensor:
        """diffusers' VectorQuantizer loss in eval mode, (1 + beta) x mean |nearest codebook entry - h|^2 (a scalar),
        computed on the host from the codebook (the one place it is read outside a program)."""
        codebook = convert.to_torch(self._engine.weights["quantize"]["embedding.weight"]).to(h.device, h.dtype)
        flat = h.detach().permute(0, 2, 3, 1).reshape(-1, codebook.shape[1])
        nearest = codebook[torch.argmin(torch.cdist(flat, codebook), dim=1)]
        beta = 0.25  # VQModel builds its VectorQuantizer with beta=0.25
        return (1 + beta) * torch.mean((nearest - flat) ** 2)

    def forward(self, sample: torch.Tensor, return_dict: bool = True):
        """Encode then decode (quantized), as diffusers' `VQModel.forward`."""
        out = self.decode(self.encode(sample).latents)
        return out if return_dict else (out.sample, out.commit_loss)

    __call__ = forward

    @property
    def use_tiling(self) -> bool:  # diffusers' class has no such flag (nor use_slicing)
        raise AttributeError("VQModel has no use_tiling (no tiling)")

    def enable_tiling(self) -> None:
        """Refused, as diffusers' `enable_tiling` refuses a class without tiling."""
        raise NotImplementedError("Tiling doesn't seem to be implemented for VQModel.")

    def enable_slicing(self) -> None:
        """Refused, as diffusers' `enable_slicing` refuses a class without slicing."""
        raise NotImplementedError("Slicing doesn't seem to be implemented for VQModel.")

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    tiled_encode = _where_diffusers_has(TorchaxVAE.tiled_encode)
    tiled_decode = _where_diffusers_has(TorchaxVAE.tiled_decode)
    _tiled_encode = _where_diffusers_has(KLVAE._tiled_encode)
    unpack_latents = _where_diffusers_has(KLVAE.unpack_latents)
