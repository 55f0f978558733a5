"""The LTX-Video family: diffusers' AutoencoderKLLTXVideo (LTX-Video 0.9.x; the LTX pipelines).

A frame-window VAE (torchax_vae/models/windows.py says how those run), with
what diffusers' LTX class does its own way:

- From 0.9.1 on (`timestep_conditioning`) the decoder takes a timestep:
  `decode(z, temb)`, one value per video, which `LTXPipeline` sets from
  `decode_timestep`. Here it is an argument of the decoder programs (data, not
  part of the program), split with the latents when slicing. diffusers'
  `decode` with slicing and a timestep fails (it zips the wrong tuples); here
  it decodes each video with its own timestep.
- 0.9.1's decoder injects noise (`decoder_inject_noise`) from torch's global
  generator. The same draws are made here on the host, in PyTorch's order and
  shapes, and handed to the programs (torchax_vae/patches/ltx_noise.py): with the same
  `torch.manual_seed`, the same noise as PyTorch on the CPU.
- Its `_encode` turns on frame windows with `use_framewise_decoding` (not
  `..._encoding`), and a decoded window after the first drops its last frame.
  Both as diffusers does.
- Latents are normalized with the `latents_mean` / `latents_std` buffers and
  `scaling_factor` (`LTXPipeline._normalize_latents`); its pipelines' latents
  (`output_type="latent"`) are packed into tokens [B, frames x height x width, C].
"""

import functools
import threading

import jax
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.ltx", "LTXVideoVAE"] entry by looking
# the base class up in this module.
from diffusers import AutoencoderKLLTXVideo, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_ltx import LTXVideoCausalConv3d, LTXVideoResnetBlock3d
from diffusers.models.autoencoders.vae import DecoderOutput

from torchax_vae.engine import convert, validation
from torchax_vae.facade.config import LatentStatistics
from torchax_vae.engine.lowering import private_copy
from torchax_vae.patches import ltx_noise
from torchax_vae.models.windows import WindowLowered, Windows, WindowVAE
from torchax_vae.facade.family import of_config, with_config


def video_channels(config) -> int:
    return config.in_channels


def compression(config) -> tuple[int, int]:
    """(temporal, spatial) compression ratios, as AutoencoderKLLTXVideo.__init__ works them out."""
    scaling = sum(config.spatio_temporal_scaling)
    spatial = config.spatial_compression_ratio or config.patch_size * 2**scaling
    temporal = config.temporal_compression_ratio or config.patch_size_t * 2**scaling
    return temporal, spatial


def latent_shape(config, video_shape) -> tuple[int, ...]:
    """[B, latent_channels, F, H, W] of the latents of a [B, C, frames, height, width] video under `config`."""
    batch, _, frames, height, width = video_shape
    temporal, spatial = compression(config)
    return (batch, config.latent_channels, (frames - 1) // temporal + 1, height // spatial, width // spatial)


class LTXLowered(WindowLowered):
    """The decoder call with LTX's timestep and the injected noise as arguments."""

    def __init__(self, vae, *args, **kwargs):
        super().__init__(vae, *args, **kwargs)
        # diffusers' decoder alone, on the meta device: where the noise shapes of a call come from
        self._shapes_decoder = private_copy(vae.decoder)
        ltx_noise.patch(self._shapes_decoder)
        self._noise_shapes: dict[tuple, tuple[tuple[int, ...], ...]] = {}
        self._shapes_lock = threading.Lock()  # the meta decoder's forward keeps state in its modules

    def noise_shapes(self, latent_shape: tuple[int, ...], dtype: torch.dtype) -> tuple[tuple[int, ...], ...]:
        """The shapes of the noise one decoder call on latents of `latent_shape` draws, in PyTorch's order."""
        key = (tuple(latent_shape), dtype)
        with self._shapes_lock:
            if key not in self._noise_shapes:
                latents = torch.empty(latent_shape, dtype=dtype, device="meta")
                timestep = torch.zeros(latent_shape[0], dtype=dtype, device="meta")
                with ltx_noise.recording() as feed, torch.no_grad():
                    self._shapes_decoder.to(dtype)(latents, timestep)
                self._noise_shapes[key] = tuple(shape for shape, _ in feed.shapes)
            return self._noise_shapes[key]

    def decode_step(self, weights, latents, timestep=None, noise=(), **options):
        dtype = latents.dtype
        weights, latents, timestep, noise = self.env.j2t_iso((weights, latents, timestep, noise))
        with self._tracing(dtype, latents.shape, 1), ltx_noise.feeding(noise):
            out = self._call("decoder", weights, latents, timestep, **options)
        return self.env.t2j_iso(out)


class TimestepWindows(Windows):
    """What diffusers' LTX classes share (AutoencoderKLLTXVideo here, AutoencoderKLLTX2Video in ltx2.py):
    a decoder that may take a timestep and inject noise, `use_framewise_decoding` for both directions, a
    later decoded window dropping its last frame, and `latents_mean` / `latents_std` buffers."""

    decode_draws_noise = True

    lowered_class = LTXLowered
    encode_window_flag = "use_framewise_decoding"  # sic: diffusers' LTX classes' _encode
    decode_window_drop = "last"

    video_channels = of_config(video_channels)

    spatial_compression_ratio = of_config(lambda config: compression(config)[1])

    temporal_compression_ratio = of_config(lambda config: compression(config)[0])

    latent_shape = with_config(latent_shape)

    # ----- the latents' normalization (the model's buffers) -----

    def _statistics(self, latents: torch.Tensor):
        return tuple(self.buffer(name).view(1, -1, 1, 1, 1).to(latents.device, latents.dtype)
                     for name in ("latents_mean", "latents_std"))

    def _normalize(self, latents: torch.Tensor) -> torch.Tensor:
        mean, std = self._statistics(latents)
        return (latents - mean) * self.config.scaling_factor / std

    def _denormalize(self, latents: torch.Tensor) -> torch.Tensor:
        mean, std = self._statistics(latents)
        return latents * std / self.config.scaling_factor + mean

    def _decode_noise(self, latents: torch.Tensor, timestep, noise_scale, seed: int):
        """(latents mixed with noise_scale of a seeded generator's noise, the timestep tensor): the LTX
        pipelines' decode-timestep step, on the latents as given."""
        from diffusers.utils.torch_utils import randn_tensor

        timestep = 0.0 if timestep is None else timestep
        noise_scale = timestep if noise_scale is None else noise_scale
        batch = latents.shape[0]
        noise = randn_tensor(latents.shape, generator=torch.Generator().manual_seed(seed), dtype=latents.dtype)
        scale = torch.tensor([noise_scale] * batch, dtype=latents.dtype)[:, None, None, None, None]
        latents = (1 - scale) * latents + scale * noise
        return latents, torch.tensor([timestep] * batch, dtype=self.engine.dtype)

    def _decoder_args(self, chunk, timestep=None, generator=None) -> tuple:
        """(timestep, noise) for one decoder call on `chunk`: the noise drawn now from `generator` (None: torch's
        global one), as PyTorch would draw it."""
        abstract = isinstance(chunk, jax.ShapeDtypeStruct)
        dtype, replicated = self.engine.dtype, self.engine.placement.replicated
        if timestep is None and self.config.timestep_conditioning:  # precompile / lower: the shape only
            timestep = torch.empty(chunk.shape[0], dtype=dtype, device="meta")
        temb = None if timestep is None else _as_jax(timestep, abstract, replicated)
        shapes = self.lowered.noise_shapes(tuple(chunk.shape), dtype) if self._injects_noise else ()
        if abstract:
            noise = tuple(jax.ShapeDtypeStruct(s, convert.jax_dtype(dtype), sharding=replicated) for s in shapes)
        else:  # the call's generator, or torch's global one on the CPU as diffusers' decoder draws (generator=None)
            noise = tuple(convert.to_jax(torch.randn(s, dtype=dtype, generator=generator), None, replicated)
                          for s in shapes)
        return temb, noise

    @functools.cached_property
    def _injects_noise(self) -> bool:
        inject = self.config.decoder_inject_noise
        return inject if isinstance(inject, bool) else any(inject)


class LTXVideo(TimestepWindows):
    """diffusers' `AutoencoderKLLTXVideo`, as diffusers runs it (module docstring)."""

    model_class = AutoencoderKLLTXVideo
    marked = (LTXVideoCausalConv3d, LTXVideoResnetBlock3d)

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """As `LTXPipeline._normalize_latents`: (latents - mean) * scaling_factor / std, per channel."""
        return self._normalize(latents)

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """As `LTXPipeline._denormalize_latents`, before decoding."""
        return self._denormalize(latents)

    def decode_inputs(self, latents: torch.Tensor, *, timestep=None, noise_scale=None, seed: int = 0):
        """As `LTXPipeline` before `vae.decode` (denormalized latents in): the decoder's timestep, and the latents
        mixed with `noise_scale` (default: the timestep) of noise from a generator seeded with `seed`.

        Without timestep conditioning (0.9.0) nothing changes and a timestep is refused, as the pipeline
        ignores it. The timestep (default 0.0, the pipeline's) is made in this VAE's dtype.
        """
        if not self.config.timestep_conditioning:
            return super().decode_inputs(latents, timestep=timestep, noise_scale=noise_scale)
        latents, timestep = self._decode_noise(latents, timestep, noise_scale, seed)
        return latents, (timestep,)


class TimestepWindowVAE(LatentStatistics, WindowVAE):
    """The facade of diffusers' LTX classes: `decode(z, temb=None)` takes the timestep as diffusers' does, a tensor
    of one value per video, required when the decoder is timestep-conditioned; `latents_mean` / `latents_std`."""

    # ----- decode with a timestep -----

    def decode(self, z: torch.Tensor, temb: torch.Tensor | None = None, return_dict: bool = True, *,
               generator: torch.Generator | None = None):
        """Decodes latents [B, C, F, H, W] into videos, as diffusers' `decode(z, temb)`.

        temb: the timestep, one value per video (a tensor of B values, or of one when B is 1); required
        when the decoder is timestep-conditioned, unused otherwise (as diffusers).
        generator: a CPU `torch.Generator` the injected noise is drawn from (this call's own: calls from
        several threads each get theirs); None: torch's global generator, as diffusers' decoder draws it.
        """
        return self._decoder_output(self._decode_call(z, temb, generator=generator), return_dict)

    def _decode_call(self, z: torch.Tensor, temb: torch.Tensor | None = None, *,
                     generator: torch.Generator | None = None):
        return self._decode_with(z, temb, "decode", generator=generator)

    def tiled_decode(self, z: torch.Tensor, temb: torch.Tensor | None = None, return_dict: bool = True, *,
                     generator: torch.Generator | None = None):
        """diffusers' `tiled_decode(z, temb)`: decoded in tiles whatever its size or the settings (no slicing)."""
        return self._decoder_output(self._decode_with(z, temb, "tiled_decode", tiled=True, generator=generator),
                                    return_dict)

    def forward(self, sample, temb=None, sample_posterior: bool = False, return_dict: bool = True, generator=None):
        """Encode then decode, as diffusers' `AutoencoderKLLTXVideo.forward(sample, temb, ...)`."""
        posterior = self.encode(sample).latent_dist
        z = posterior.sample(generator=generator) if sample_posterior else posterior.mode()
        dec = self.decode(z, temb, generator=generator).sample
        return DecoderOutput(sample=dec) if return_dict else (dec,)

    __call__ = forward

    def _decode_with(self, z: torch.Tensor, temb, name: str, tiled: bool | None = None, generator=None,
                     **options):
        """The prepared decode (`DecodeCall`) of `z` at timestep `temb` (checked first), sliced per video unless
        `tiled` (as diffusers' tiled_decode), its noise drawn from `generator` (None: torch's global one); options:
        the decoder's program options (LTX-2's `causal`)."""
        validation.check_video(z, name=f"{name} input", channels=self.latent_channels, role="decoder", rank=self.rank,
                                  dtype=self.dtype)
        if generator is not None and not (isinstance(generator, torch.Generator) and generator.device.type == "cpu"):
            raise TypeError(f"generator must be a CPU torch.Generator (the noise is drawn on the host, as PyTorch "
                            f"draws it on the CPU), got {generator!r}")
        timestep = self._timestep(temb, z.shape[0])
        decode = functools.partial(self._family.decode_chunks, generator=generator, **options)
        if tiled:
            return self._prepare(functools.partial(decode, tiled=True, timestep=timestep), z)
        return self._prepare(functools.partial(self._per_sample, decode, timestep=timestep), z)

    def _timestep(self, temb, batch: int) -> torch.Tensor | None:
        """temb checked at the boundary: a floating tensor of `batch` values on the CPU, or None when unused."""
        if not self.config.timestep_conditioning:
            return None  # diffusers' decoder ignores it
        if temb is None:
            raise ValueError(
                f"this {self.model_class.__name__}'s decoder is timestep-conditioned (timestep_conditioning=True): "
                "pass temb, one timestep per video, e.g. torch.tensor([0.05]) (the pipeline's decode_timestep)"
            )
        temb = torch.as_tensor(temb)
        if not temb.is_floating_point() or temb.numel() != batch:
            raise ValueError(
                f"temb must be a floating-point tensor of one timestep per video ({batch} values), got "
                f"{temb.dtype} with shape {tuple(temb.shape)}"
            )
        return temb.detach().reshape(batch).cpu()


class LTXVideoVAE(TimestepWindowVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLLTXVideo` (module docstring)."""

    family = LTXVideo

    def unpack_latents(self, latents: torch.Tensor, height: int, width: int) -> torch.Tensor:
        """The pipelines' packed latents [B, frames x h x w, C] of height x width videos as [B, C, frames, h, w].

        As `LTXPipeline._unpack_latents` with the transformer's patch size 1 (what `output_type="latent"` returns).
        """
        from diffusers import LTXPipeline

        batch, tokens, channels = latents.shape
        ratio = self.spatial_compression_ratio
        rows, cols = int(height) // ratio, int(width) // ratio
        if channels != self.latent_channels or rows * cols == 0 or tokens % (rows * cols):
            raise ValueError(
                f"packed latents {tuple(latents.shape)} do not fit {height}x{width} videos: expected "
                f"[B, frames x {rows * cols}, {self.latent_channels}] ({rows}x{cols} latents per frame)"
            )
        return LTXPipeline._unpack_latents(latents, tokens // (rows * cols), rows, cols, 1, 1)


def _as_jax(tensor: torch.Tensor, abstract: bool, sharding):
    if abstract or tensor.is_meta:
        return jax.ShapeDtypeStruct(tuple(tensor.shape), convert.jax_dtype(tensor.dtype), sharding=sharding)
    return convert.to_jax(tensor, None, sharding)
