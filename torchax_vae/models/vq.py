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
- Codebook indices (`lookup_from_codebook` in the config, `decode(indices,
  force_not_quantize=True, shape=(B, H, W, C))`, aMUSEd's integer latents):
  the codebook rows are looked up on the device (`_lookup`), then decoded as
  latents; indices outside the codebook or a `shape` that does not fit them
  are refused at the boundary.
- No tiling (diffusers' class has none); slicing neither.
- `precompile`, `lower`, `plan` and `torchax-vae warmup` of a decode compile the "decoder" program, the
  Kandinsky pipelines' (`force_not_quantize=True`), as the command and the service run it. (Planned quantized,
  MoVQ's 4096 x 16384 float32 codebook distances at 512x512 were its largest buffer, not split over GPUs.)
"""

import functools

import jax
import jax.numpy as jnp
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.vq", "VQVAE"] entry by looking the base class up
# in this module.
from diffusers import ModelMixin, VQModel  # noqa: F401
from diffusers.models.autoencoders.vae import DecoderOutput, IdentityDistribution
from diffusers.models.autoencoders.vq_model import VQEncoderOutput

from torchax_vae.engine import convert, validation
from torchax_vae.models.kl import KL, KLVAE
from torchax_vae.models.windows import WindowLowered
from torchax_vae.facade.policy import refused

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
        return self.lowering_on(VQLowered, vae, self.marked, self.spatial_compression_ratio,
                         rank=4)

    @property
    def latent_channels(self) -> int:
        return self.config.vq_embed_dim or self.config.latent_channels  # what decode takes: quant_conv's output

    def _beyond_a_tile(self, kind: str, shape) -> bool:
        return False  # never tiled: diffusers' class has no tiling

    def decode(self, source, tiled: bool | None = None, quantize: bool = True) -> jax.Array:
        weights = {k: self.engine.weights[k] for k in ("quantize", "post_quant_conv", "decoder")}
        step = functools.partial(self.lowered.decode_step, quantize=quantize)
        return self.engine.run_batch("decoder+quantize" if quantize else "decoder", step, weights, source.take())

    def decode_inputs(self, latents: torch.Tensor, *, timestep=None, noise_scale=None, seed: int = 0):
        """The Kandinsky pipelines' stage 3 (2.1, 2.2, 3): `movq.decode(latents, force_not_quantize=True)`, what the
        command and the service run (latent diffusion's VQ pipelines decode quantized: TorchaxVAE in Python)."""
        latents, _ = super().decode_inputs(latents, timestep=timestep, noise_scale=noise_scale, seed=seed)
        return latents, (True,)

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents  # the Kandinsky pipelines hand MoVQ's latents over as they are

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents


class VQVAE(KLVAE):
    """`TorchaxVAE` for diffusers' `VQModel` (the module docstring)."""

    family = VQ

    def _kind_chunks(self, kind: str, source):
        """`precompile`, `lower` and `plan` of a decode follow the Kandinsky pipelines' stage 3
        (`force_not_quantize=True`: the "decoder" program), which the command and the service run too; a quantized
        `decode(z)` compiles its own program when called."""
        if kind != "decode":
            return super()._kind_chunks(kind, source)
        return self._per_sample(functools.partial(self._family.decode, quantize=False), source)

    def encode(self, x: torch.Tensor, return_dict: bool = True):
        """Encodes images [B, C, H, W] into latents, `VQEncoderOutput(latents=...)` as diffusers (not quantized)."""
        latents = self._posterior(x).mode()
        return VQEncoderOutput(latents=latents) if return_dict else (latents,)

    def decode(self, h: torch.Tensor, force_not_quantize: bool = False, return_dict: bool = True, shape=None):
        """Decodes latents [B, C, H, W] into images (`DecoderOutput(sample, commit_loss)`), quantized first unless
        `force_not_quantize`, as diffusers does."""
        call = self._decode_call(h, force_not_quantize, shape)
        sample, latents, quantize = self._joined(call), call.x, not force_not_quantize
        like = h  # diffusers' zero loss takes the input's dtype, codebook indices' too
        loss = self._commit_loss(latents) if quantize else _zeros(latents.shape[0], like)
        return DecoderOutput(sample=sample, commit_loss=loss) if return_dict else (sample, loss)

    def _decode_call(self, h: torch.Tensor, force_not_quantize: bool = False, shape=None):
        if not h.is_floating_point() or shape is not None:  # codebook indices (aMUSEd's integer latents)
            h = self._codebook_entries(h, shape, force_not_quantize)
        validation.check_video(h, name="decode input", channels=self.latent_channels, role="decoder", rank=4,
                               dtype=self.dtype)
        return self._prepare(functools.partial(self._family.decode_chunks, quantize=not force_not_quantize), h)

    def _codebook_entries(self, indices: torch.Tensor, shape, force_not_quantize: bool) -> torch.Tensor:
        """diffusers' `VectorQuantizer.get_codebook_entry(indices, shape)`, looked up on the device: the codebook rows
        of the indices, laid out as `shape` (B, H, W, C) and returned as latents [B, C, H, W] in the model's dtype."""
        entries, dim = self._codebook_shape
        if not (force_not_quantize and self.config.lookup_from_codebook):
            raise ValueError(f"decode input is {indices.dtype} of shape {tuple(indices.shape)} (shape={shape}): "
                             "VQModel takes codebook indices only with lookup_from_codebook in its config and "
                             "force_not_quantize=True, as diffusers' (else pass the latents [B, C, H, W])")
        if indices.is_floating_point() or indices.is_complex() or indices.dtype == torch.bool:
            raise ValueError(f"codebook indices are {indices.dtype}; expected an integer tensor")
        if shape is None or len(shape) != 4 or shape[3] != dim or indices.numel() != shape[0] * shape[1] * shape[2]:
            raise ValueError(f"codebook indices of shape {tuple(indices.shape)} with shape={shape}: expected shape "
                             f"(B, H, W, {dim}) with B x H x W = the indices' count ({indices.numel()})")
        low, high = int(indices.min()), int(indices.max())
        if low < 0 or high >= entries:
            raise ValueError(f"codebook indices run from {low} to {high}; this codebook has {entries} entries "
                             f"(0 to {entries - 1})")
        placement = self._engine.placement
        flat = convert.put(indices.detach().to("cpu", torch.int32).reshape(-1).numpy(), placement.replicated)
        codebook = self._engine.weights["quantize"]["embedding.weight"]
        return convert.like(_lookup(codebook, flat, shape=tuple(shape)), indices, own_dtype=True)

    @property
    def _codebook_shape(self) -> tuple[int, int]:
        return tuple(self._engine.weights["quantize"]["embedding.weight"].shape)

    def _commit_loss(self, h: torch.Tensor) -> torch.Tensor:
        """diffusers' VectorQuantizer loss in eval mode, (1 + beta) x mean |nearest codebook entry - h|^2 (a scalar),
        computed on the device beside the decode (h a torch tensor anywhere, or a torchax tensor)."""
        codebook = self._engine.weights["quantize"]["embedding.weight"]
        return convert.like(_commit_loss(codebook, self._source(h.detach()).take()), h)

    def forward(self, sample: torch.Tensor, return_dict: bool = True):
        """Encode then decode (quantized), as diffusers' `VQModel.forward`."""
        out = self.decode(self.encode(sample).latents)
        return out if return_dict else (out.sample, out.commit_loss)

    __call__ = forward

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("use_tiling", "tiled_encode", "tiled_decode", "_tiled_encode", "unpack_latents")

    enable_tiling = refused("tiling")

    enable_slicing = refused("slicing")


@functools.partial(jax.jit, static_argnames=("shape",))
def _lookup(codebook, indices, *, shape):
    """The codebook rows of `indices`, as `shape` (B, H, W, C), then [B, C, H, W] (diffusers' get_codebook_entry)."""
    return codebook[indices].reshape(shape).transpose(0, 3, 1, 2)


@jax.jit
def _commit_loss(codebook, latents):
    """(1 + beta) x the mean squared distance of the latents [B, C, H, W] to their nearest codebook entries (beta
    0.25: VQModel builds its VectorQuantizer so), as diffusers' VectorQuantizer computes it in eval mode."""
    flat = latents.transpose(0, 2, 3, 1).reshape(-1, codebook.shape[1]).astype(jnp.float32)
    table = codebook.astype(jnp.float32)
    distances = (flat**2).sum(1, keepdims=True) - 2 * flat @ table.T + (table**2).sum(1)
    nearest = table[jnp.argmin(distances, axis=1)]
    return ((1 + 0.25) * jnp.mean((nearest - flat) ** 2)).astype(latents.dtype)


def _zeros(count: int, like: torch.Tensor) -> torch.Tensor:
    """diffusers' zero commit loss [count] in like's dtype, where like is (a torchax tensor: on the device)."""
    if convert.is_torchax(like):
        return convert.like(jnp.zeros((count,), jnp.float32), like)
    return torch.zeros(count, dtype=like.dtype, device=like.device)
