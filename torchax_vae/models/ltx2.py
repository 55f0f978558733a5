"""The LTX-2 family: diffusers' AutoencoderKLLTX2Video (LTX-2 and 2.3; the LTX2 and Sana-Video pipelines).

Built as LTX-Video 0.9.x is (models/ltx.py: frame windows, a decoder that may take a
timestep and inject noise from torch's global generator, `latents_mean` /
`latents_std` buffers), with what diffusers' LTX-2 class does its own way:

- `encode(x, causal=None)` and `decode(z, temb=None, causal=None)`: the
  encoder and decoder run causally when `causal` or their config's
  `encoder_causal` / `decoder_causal` says so (diffusers' `causal or
  is_causal`). That is part of the program (its name says `+causal=True`),
  so a released decoder (decoder_causal=False) asked for causal decoding
  compiles its own programs.
- Its compression ratios are diffusers' attributes (`spatial_compression_ratio`
  in the config, or patch size x 2 ^ the number of scaling blocks), which the
  windows and tiles use as diffusers does; the latents' shape comes from the
  blocks themselves (`downsample_type`), which is what the encoder makes.
- Its pipelines hand over the VAE's own latents: `LTX2Pipeline(output_type=
  "latent")` returns them denormalized and unpacked, [B, C, F, H, W]. So
  `scale_latents` / `unscale_latents` change nothing, and the decode timestep's
  noise is mixed into the normalized latents, as the pipeline does before it
  denormalizes.

diffusers has the class from 0.37 on; with an older diffusers this module is not imported
(its registry row's `since`: torchax_vae/registry.py) and TorchaxVAE serves the others without it.
"""

import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.ltx2", "LTX2VideoVAE"] entry by looking
# the base class up in this module.
from diffusers import AutoencoderKLLTX2Video, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_ltx2 import LTX2VideoCausalConv3d, LTX2VideoResnetBlock3d
from diffusers.models.autoencoders.vae import DecoderOutput, DiagonalGaussianDistribution
from diffusers.models.modeling_outputs import AutoencoderKLOutput

from torchax_vae.models.ltx import TimestepWindows, TimestepWindowVAE
from torchax_vae.facade.family import with_config

_SPATIAL = {"spatial": 1, "temporal": 0, "spatiotemporal": 1, "conv": 1}  # downsample_type -> halves H and W
_TEMPORAL = {"spatial": 0, "temporal": 1, "spatiotemporal": 1, "conv": 1}  # ... halves the frames


def _scaling(config) -> tuple[bool, ...]:
    scaling = config.spatio_temporal_scaling
    return (scaling,) * (len(config.layers_per_block) - 1) if isinstance(scaling, bool) else tuple(scaling)


def latent_shape(config, video_shape) -> tuple[int, ...]:
    """[B, latent_channels, F, H, W] of the latents of a [B, C, frames, height, width] video under `config`.

    From the encoder's blocks, not diffusers' ratio attributes: with `downsample_type` mixing spatial and
    temporal blocks and no ratios in the config (diffusers' test config), those overstate the compression.
    """
    batch, _, frames, height, width = video_shape
    kinds = [kind for kind, on in zip(config.downsample_type, _scaling(config)) if on]
    spatial = config.patch_size * 2 ** sum(_SPATIAL[kind] for kind in kinds)
    temporal = config.patch_size_t * 2 ** sum(_TEMPORAL[kind] for kind in kinds)
    return (batch, config.latent_channels, (frames - 1) // temporal + 1, height // spatial, width // spatial)


class LTX2Video(TimestepWindows):
    """diffusers' `AutoencoderKLLTX2Video`, as diffusers runs it (module docstring)."""

    model_class = AutoencoderKLLTX2Video
    marked = (LTX2VideoCausalConv3d, LTX2VideoResnetBlock3d)

    latent_shape = with_config(latent_shape)

    def _program_options(self, kind: str, conditioning: dict) -> dict:
        return {"causal": conditioning.pop("causal")} if "causal" in conditioning else {}

    # ----- the latents: its pipelines hand over the VAE's own (denormalized) latents -----

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """Unchanged: `LTX2Pipeline` takes 5-D `latents=` denormalized (it normalizes them itself)."""
        return latents

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """Unchanged: `LTX2Pipeline(output_type="latent")` returns them denormalized."""
        return latents

    def decode_inputs(self, latents: torch.Tensor, *, timestep=None, noise_scale=None, seed: int = 0):
        """As `LTX2Pipeline` before `vae.decode`, on its denormalized latents: the decoder's timestep, and the
        latents normalized, mixed with `noise_scale` (default: the timestep) of noise from a generator seeded
        with `seed`, and denormalized again. Without timestep conditioning nothing changes and a timestep is
        refused. The timestep (default 0.0) is made in this VAE's dtype."""
        if not self.config.timestep_conditioning:
            return super().decode_inputs(latents, timestep=timestep, noise_scale=noise_scale)
        mixed, timestep = self._decode_noise(self._normalize(latents), timestep, noise_scale, seed)
        return self._denormalize(mixed), (timestep,)


class LTX2VideoVAE(TimestepWindowVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLLTX2Video` (module docstring)."""

    family = LTX2Video

    # ----- encode / decode with diffusers' `causal` -----

    def encode(self, x: torch.Tensor, causal: bool | None = None, return_dict: bool = True):
        """As diffusers' `encode(x, causal=None)`: causal when `causal` or the config's `encoder_causal` says so."""
        posterior = DiagonalGaussianDistribution(self._encode_with(x, "encode", **self._causal("encode", causal)))
        return AutoencoderKLOutput(latent_dist=posterior) if return_dict else (posterior,)

    def tiled_encode(self, x: torch.Tensor, causal: bool | None = None) -> torch.Tensor:
        return self._encode_with(x, "tiled_encode", tiled=True, **self._causal("encode", causal))

    def decode(self, z: torch.Tensor, temb: torch.Tensor | None = None, causal: bool | None = None,
               return_dict: bool = True, *, generator: torch.Generator | None = None):
        """As diffusers' `decode(z, temb=None, causal=None)`: `temb` as LTX-Video's (one timestep per video,
        required when the decoder is timestep-conditioned); causal as `encode`'s, with `decoder_causal`."""
        return self._decoder_output(self._decode_call(z, temb, causal, generator=generator), return_dict)

    def _decode_call(self, z: torch.Tensor, temb: torch.Tensor | None = None, causal: bool | None = None, *,
                     generator: torch.Generator | None = None):
        return self._decode_with(z, temb, "decode", generator=generator, **self._causal("decode", causal))

    def tiled_decode(self, z: torch.Tensor, temb: torch.Tensor | None = None, causal: bool | None = None,
                     return_dict: bool = True, *, generator: torch.Generator | None = None):
        call = self._decode_with(z, temb, "tiled_decode", tiled=True, generator=generator,
                                 **self._causal("decode", causal))
        return self._decoder_output(call, return_dict)

    def forward(self, sample, temb=None, sample_posterior: bool = False, encoder_causal: bool | None = None,
                decoder_causal: bool | None = None, return_dict: bool = True, generator=None):
        """Encode then decode, as diffusers' `AutoencoderKLLTX2Video.forward`."""
        posterior = self.encode(sample, causal=encoder_causal).latent_dist
        z = posterior.sample(generator=generator) if sample_posterior else posterior.mode()
        dec = self.decode(z, temb, causal=decoder_causal, generator=generator).sample
        return DecoderOutput(sample=dec) if return_dict else (dec,)

    __call__ = forward

    def _causal(self, kind: str, causal) -> dict:
        """{"causal": True} when the call asks for causal where the config's default is not (diffusers' `causal
        or is_causal`: asking for False changes nothing); else {} (the default programs)."""
        default = self.config.encoder_causal if kind == "encode" else self.config.decoder_causal
        return {"causal": True} if (causal or default) and not default else {}
