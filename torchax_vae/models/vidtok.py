"""VidTok: diffusers' AutoencoderVidTok (Microsoft's video tokenizer; continuous (`regularizer="kl"`) or discrete
(`"fsq"`: finite scalar quantization) latents; no diffusers pipeline uses it).

How diffusers runs it, and how this adapter does:

- `encode(x)` runs the encoder on the whole clip [B, C, F, H, W] in one call (F >= the temporal ratio; latents of
  F // ratio frames and H // 8 x W // 8, floor division, as its strided convolutions give). "kl": the posterior of
  those moments (`AutoencoderKLOutput`). "fsq": `(quant_z, indices)`, diffusers' tuple: the quantized latents and
  their codebook indices [B, f, h, w] (int32). Here diffusers' own `_encode` is one program of (weights, clip) per
  clip shape, traced from the model; FSQ's quantization is a program of its own (weights, latents).
- `decode(z, decode_from_indices=False)` returns the frames as a tensor (not a `DecoderOutput`: diffusers' class
  returns it so). Causal models drop the first ratio - 1 decoded frames ((f - 1) x ratio + 1 frames); non-causal ones
  decode whole groups of `num_latent_frames_batch_size` latent frames (at least one group). Here diffusers'
  `_decode` and that crop are one program per latent shape; indices become latents in a program of their own
  (`indices_to_latent`, the same values diffusers' tiled `tile_indices_to_latent` gives).
- Tiling (`enable_tiling`: `tile_sample_min_height`/`_width` and the overlap factors; diffusers applies it to every
  input once on): diffusers' `tiled_encode`/`tiled_decode` loop (models/vidtok_tiles.py): spatial tiles, each in
  causal frame chunks (16 frames, 4 latent frames) whose modules' `causal_cache` goes from chunk to chunk on the
  device, one program per chunk kind and tile shape, whatever the length; blended as diffusers blends. "auto" tiles
  an input larger than a tile that would not fit untiled.
- `forward(sample, sample_posterior=True, encoder_mode=False)` pads the frames as diffusers' does (replicate, to
  1 + k x ratio when causal, then ratio - 1 frames in front; to whole frame batches when not) and crops the output.
- Slicing as diffusers' (one video at a time). No sessions or frame streaming: each call sees the whole clip, as
  diffusers' untiled calls do (the chunked causal caches exist only inside its tiled path).
"""

import functools

import jax
import torch
from torch import nn
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.vidtok", "VidTokVAE"] entry by looking the base
# class up in this module.
from diffusers import AutoencoderVidTok, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_vidtok import (
    VidTokAttnBlock, VidTokCausalConv3d, VidTokDownsample3D, VidTokLayerNorm, VidTokResnetBlock, VidTokUpsample3D,
)
from diffusers.models.autoencoders.vae import DecoderOutput, DiagonalGaussianDistribution, IdentityDistribution
from diffusers.models.modeling_outputs import AutoencoderKLOutput

from torchax_vae.engine import convert, memory, validation
from torchax_vae.facade.family import Family, config_value, of_config, with_config
from torchax_vae.engine.lowering import Lowered
from torchax_vae.engine.arrays import apply
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.models import vidtok_tiles

__all__ = ["VidTok", "VidTokVAE", "latent_shape", "video_channels"]

# diffusers' attributes that its tiled calls read
TILE_SETTINGS = ("tile_sample_min_height", "tile_sample_min_width", "tile_latent_min_height", "tile_latent_min_width",
                 "tile_overlap_factor_height", "tile_overlap_factor_width", "num_sample_frames_batch_size",
                 "num_latent_frames_batch_size")


def video_channels(config) -> int:
    return config.in_channels


def _ratios(config) -> tuple[int, int]:
    """(temporal, spatial) compression, as the class computes them from its encoder's levels."""
    levels = len(config.ch_mult)
    spatial = len(list(range(levels - 1)) if config.spatial_ds is None else config.spatial_ds)
    temporal = len([levels - 2, levels - 3] if config.tempo_ds is None else config.tempo_ds)
    return 2 ** temporal, 2 ** spatial


def latent_shape(config, video_shape) -> tuple[int, ...]:
    """[B, z_channels, F // temporal, H // spatial, W // spatial] of an encoded [B, C, F, H, W] clip."""
    batch, _, frames, height, width = video_shape
    temporal, spatial = _ratios(config)
    return (batch, config.z_channels, frames // temporal, height // spatial, width // spatial)


class Method(nn.Module):
    """A function of the model as a module's forward, so that `torch.func.functional_call` runs it with given
    weights (diffusers' `_encode` and `_decode` read children across the whole model; RAE's and VidTok's)."""

    def __init__(self, model: nn.Module, fn):
        super().__init__()
        self.model, self.fn = model, fn

    def forward(self, *args):
        return self.fn(self.model, *args)


def _quantized(model, z):
    """FSQ's quantized latents (its projections are identities: `z_channels` levels of 8)."""
    return model.regularization(z)[0]


def _indices(model, quant_z):
    """The codebook indices [B, f, h, w] of quantized latents, as diffusers' FSQ computes them from its codes (the
    quantized latents themselves: its projections are identities)."""
    return model.regularization.codes_to_indices(quant_z.permute(0, 2, 3, 4, 1))


class VidTokLowered(Lowered):
    """diffusers' `_encode` and `_decode` (untiled: one call on the whole clip), one encoder or decoder call on a
    tiled chunk with the modules' causal caches as arguments and results, FSQ's quantization, its indices and their
    inverse: each a program of (weights, input[, cache])."""

    def encode_step(self, weights, clip):
        return self._step(lambda model, x: model._encode(x), weights, clip, self.spatial_ratio)

    def decode_step(self, weights, latents):
        return self._step(lambda model, z: model._decode(z), weights, latents, 1)

    def quantize_step(self, weights, latents):
        return self._step(_quantized, weights, latents, 1)

    def codes_step(self, weights, quant_z):
        return self._step(_indices, weights, quant_z, 1)

    def indices_step(self, weights, indices):
        return self._step(lambda model, i: model.indices_to_latent(i), weights, indices, 1)

    def _step(self, fn, weights, x, ratio: int):
        model = self.model
        dtype = x.dtype
        weights, x = self.env.j2t_iso((weights, x))
        flat = {f"model.{child}" + (f".{rest}" if rest else ""): t
                for child, group in weights.items() for rest, t in group.items()}
        model.use_tiling = model.use_slicing = False
        try:
            with self._tracing(dtype, x.shape, ratio):
                out = torch.func.functional_call(Method(model, fn), flat, (x,))
        finally:
            self._reset(model)
        return self.env.t2j_iso(out)

    def chunk_step(self, weights, chunk, cache, *, role: str):
        """One call of the encoder or decoder (`role`) on a tiled chunk of frames, as diffusers' tiled loop makes
        it: the first chunk of a tile (cache None) pads its first frame; a later one continues from `cache`, what
        each causal module kept of the chunk before (`causal_cache`), trimmed to what the next chunk reads. The
        decoder's modules keep their cache short of the frames its overlapping chunk adds (diffusers'
        `cache_offset`s: `vidtok_tiles.decoder_offsets`). (out, cache)."""
        model = self.model
        module = getattr(model, role)
        stateful = [m for m in module.modules() if hasattr(m, "causal_cache")]
        dtype = chunk.dtype
        weights, chunk, cache = self.env.j2t_iso((weights, chunk, cache))
        try:
            for m in module.modules():
                if hasattr(m, "is_first_chunk"):
                    m.is_first_chunk = cache is None
            if role == "decoder" and model.is_causal:
                vidtok_tiles.decoder_offsets(model)
            for m, kept in zip(stateful, cache or (None,) * len(stateful)):
                m.causal_cache = kept
            with self._tracing(dtype, chunk.shape, self.spatial_ratio if role == "encoder" else 1):
                out = self._call(role, weights, chunk)
                kept = tuple(vidtok_tiles.read_part(m) for m in stateful)
        finally:
            self._reset(model)
        return self.env.t2j_iso((out, kept))

    @staticmethod
    def _reset(model):
        """The modules' chunk state as a fresh model has it (a trace leaves its tracers there)."""
        for module in model.modules():
            if hasattr(module, "causal_cache"):
                module.causal_cache = None
            if hasattr(module, "cache_offset"):
                module.cache_offset = 0
            if hasattr(module, "is_first_chunk"):
                module.is_first_chunk = True


class VidTok(Family):
    """diffusers' `AutoencoderVidTok`, as diffusers runs it (the module docstring)."""

    model_class = AutoencoderVidTok
    settings = TILE_SETTINGS
    # "kl"; an "fsq" model's facade reports IdentityDistribution (its encode's latents are the quantized ones)
    posterior_class = DiagonalGaussianDistribution
    # the layers whose activations get sharding marks on a mesh (torchax_vae/patches/sharding_marks.py marks the video's
    # [B, C, T, H, W]; marking the frames [B * T, C, H, W] and the time series [B * H * W, C, T] too, tried
    # 2026-11-30, changed no figure below)
    marked = (VidTokCausalConv3d, VidTokDownsample3D, VidTokUpsample3D, VidTokAttnBlock, VidTokResnetBlock,
              VidTokLayerNorm)
    # the time series fold the width into their first axis, which stays one contiguous block per device only where
    # the width is whole: a height split (with the width split, each of two H100s held 1.00x of one's encoder temp)
    rows_only = True

    def __init__(self, vae, engine=None):
        super().__init__(vae, engine)
        self.is_causal = vae.is_causal
        self.regularizer = vae.regularizer

    def lower(self, vae):
        return self.lowering_on(VidTokLowered, vae, self.marked, self.spatial_compression_ratio,
                                rows_only=self.engine.placement.rows_only)

    # ----- what the family says -----

    video_channels = of_config(video_channels)

    latent_channels = config_value("z_channels")

    spatial_compression_ratio = of_config(lambda config: _ratios(config)[1])

    temporal_compression_ratio = of_config(lambda config: _ratios(config)[0])

    latent_shape = with_config(latent_shape)

    def check_video(self, shape, name: str) -> None:
        temporal, spatial = self.temporal_compression_ratio, self.spatial_compression_ratio
        if shape[2] < temporal:
            raise ValueError(f"{name} has {shape[2]} frames (shape {tuple(shape)}); AutoencoderVidTok encodes at "
                             f"least {temporal} (its temporal compression)")
        if shape[3] < spatial or shape[4] < spatial:
            raise ValueError(f"{name} is {shape[3]}x{shape[4]} (shape {tuple(shape)}); AutoencoderVidTok encodes at "
                             f"least {spatial}x{spatial} pixels")

    def check_latents(self, shape, name: str) -> None:
        group = self.num_latent_frames_batch_size
        if not self.is_causal and shape[2] < group:
            raise ValueError(f"{name} has {shape[2]} latent frames (shape {tuple(shape)}); this non-causal "
                             f"AutoencoderVidTok decodes whole groups of {group} (num_latent_frames_batch_size)")

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents  # (no pipeline normalizes them)

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents

    # ----- encode / decode: one program each untiled; tiled, chunk programs (vidtok_tiles.py) -----

    def _tiles(self, kind: str, source, tiled, weights, step) -> bool:
        """Whether to tile: diffusers tiles every input when tiling is on; "auto" tiles one larger than a tile that
        would not fit untiled."""
        if tiled is not None:
            return tiled
        ratio = self.spatial_compression_ratio if kind == "decode" else 1
        tile = (self.tile_sample_min_height // ratio, self.tile_sample_min_width // ratio)
        if source.shape[3] <= tile[0] and source.shape[4] <= tile[1] and self.engine.tiling_mode != "on":
            return False

        def need() -> int:
            with self.engine.programs.recording() as used:
                self.engine.programs.run(kind + "r", step, weights, self.engine.shapes(source.shape).take())
            return memory.call_bytes(used)

        return self.engine.should_tile(kind + "r", need, source.shape, tile)

    def encode(self, source, tiled: bool | None = None) -> jax.Array:
        """The encoder's moments ("kl"), or FSQ's quantized latents."""
        out = self._run("encode", self.lowered.encode_step, source, tiled, unused="decoder")
        if self.regularizer == "fsq" and tiled is not True:  # (diffusers' tiled_encode gives the encoder's output)
            out = self.engine.programs.run("fsq", self.lowered.quantize_step, self._fsq_weights(), out)
        return out

    def decode(self, source, tiled: bool | None = None, crop: bool = True) -> jax.Array:
        """diffusers' `decode`: `_decode`, then the causal crop (`crop=False`: its `tiled_decode`, uncropped)."""
        out = self._run("decode", self.lowered.decode_step, source, tiled, unused="encoder")
        return apply(_drop_frames, out, count=self.temporal_compression_ratio - 1) if self.is_causal and crop else out

    def decode_chunks(self, source, tiled: bool | None = None):
        yield self.decode(source, tiled)  # the whole clip in one call (or its tiles)

    def _run(self, kind: str, step, source, tiled, unused: str) -> jax.Array:
        weights = {child: group for child, group in self.engine.weights.items() if child != unused}
        if self._tiles(kind, source, tiled, weights, step):
            out = vidtok_tiles.tiled(self, kind, source)
            self.engine.ran_batch(out)
            return out
        return self.engine.run_batch(kind + "r", step, weights, source.take())

    def _fsq_weights(self) -> dict:
        return {"regularization": self.engine.weights["regularization"]}

    def indices(self, quant_z: jax.Array) -> jax.Array:
        """FSQ's codebook indices [B, f, h, w] (int32) of quantized latents."""
        return self.engine.programs.run("fsq-indices", self.lowered.codes_step, self._fsq_weights(), quant_z)

    def indices_to_latent(self, indices: jax.Array) -> jax.Array:
        """The quantized latents of codebook indices [B, f, h, w]."""
        return self.engine.programs.run("fsq-latents", self.lowered.indices_step, self._fsq_weights(), indices)


class VidTokVAE(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderVidTok`, as diffusers runs it (the module docstring)."""

    family = VidTok

    @property
    def temporal_compression_ratio(self) -> int:
        return self._family.temporal_compression_ratio

    @property
    def is_causal(self) -> bool:
        return self._family.is_causal

    @property
    def regularizer(self) -> str:
        return self._family.regularizer

    def __init__(self, vae, **kwargs):
        super().__init__(vae, **kwargs)
        if vae.regularizer == "fsq":  # its encode's latents are FSQ's quantized ones (the command's, the service's)
            self.posterior_class = IdentityDistribution

    def encode(self, x: torch.Tensor):
        """"kl": `AutoencoderKLOutput(latent_dist=...)`; "fsq": `(quant_z, indices)`, as diffusers' encode."""
        if self.regularizer == "kl":
            return AutoencoderKLOutput(latent_dist=self._posterior(x))
        quant_z = self._encode_with(x, "encode")
        engine = self._engine
        indices = self._family.indices(convert.to_jax(quant_z, engine.jax_dtype,
                                                      engine.placement.activation(tuple(quant_z.shape))))
        return quant_z, convert.to_torch(indices, device=quant_z.device)

    def decode(self, z: torch.Tensor, decode_from_indices: bool = False) -> torch.Tensor:
        """The frames of latents [B, C, f, h, w] (or, `decode_from_indices`, of FSQ indices [B, f, h, w]), as a
        tensor, as diffusers' decode returns them."""
        return self._joined(self._decode_call(z, decode_from_indices))

    def _decode_call(self, z: torch.Tensor, decode_from_indices: bool = False):
        return super()._decode_call(self._latents_of(z) if decode_from_indices else z)

    def tiled_decode(self, z: torch.Tensor) -> torch.Tensor:
        """diffusers' `tiled_decode`: the tiled decoder's frames, before `decode`'s causal crop (a tensor)."""
        validation.check_video(z, name="tiled_decode input", channels=self.latent_channels, role="decoder",
                               rank=self.rank, dtype=self._input_dtype)
        self._family.check_latents(tuple(z.shape), "tiled_decode input")
        return self._compute(functools.partial(self._family.decode, tiled=True, crop=False), z)

    def _latents_of(self, indices: torch.Tensor) -> torch.Tensor:
        if self.regularizer != "fsq":
            raise ValueError("decode_from_indices takes FSQ codebook indices; this AutoencoderVidTok's regularizer is "
                             f"{self.regularizer!r}")
        if indices.ndim != 4 or indices.is_floating_point() or indices.is_complex():
            raise ValueError(f"decode_from_indices takes integer indices [B, f, h, w], got {indices.dtype} of shape "
                             f"{tuple(indices.shape)}")
        size = self._family.config.z_channels
        codebook = 8 ** size
        if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= codebook):
            raise ValueError(f"FSQ indices must lie in [0, {codebook}); got {int(indices.min())} to "
                             f"{int(indices.max())}")
        placement = self._engine.placement
        latents = self._family.indices_to_latent(convert.to_jax(indices.to(torch.int32), None, placement.replicated))
        return convert.to_torch(latents, device=indices.device, dtype=self.dtype)

    def forward(self, sample: torch.Tensor, sample_posterior: bool = True, encoder_mode: bool = False,
                return_dict: bool = True, generator: torch.Generator | None = None):
        """diffusers' `forward`: the frames padded as it pads them, encoded, decoded, cropped (module docstring)."""
        x, ratio, group = sample, self.temporal_compression_ratio, self._family.num_sample_frames_batch_size
        padding = 0
        if self.is_causal:
            if x.shape[2] % ratio != 1:
                padding = ratio - x.shape[2] % ratio + 1
                x = _pad_frames(x, 0, padding)
            x = _pad_frames(x, ratio - 1, 0)
        elif x.shape[2] % group:
            if not encoder_mode:
                padding = group - x.shape[2] % group
                x = _pad_frames(x, 0, padding)
            else:
                if x.shape[2] < group:
                    raise ValueError(f"Too short video. At least {group} frames.")
                x = x[:, :, : x.shape[2] // group * group]
        if self.regularizer == "kl":
            posterior = self.encode(x).latent_dist
            z = posterior.sample(generator=generator) if sample_posterior else posterior.mode()
            if encoder_mode:
                return z
        else:
            z, indices = self.encode(x)
            if encoder_mode:
                return z, indices
        dec = self.decode(z)
        if padding:
            dec = dec[:, :, :-padding]
        return DecoderOutput(sample=dec) if return_dict else (dec,)

    __call__ = forward

    def enable_tiling(self, tile_sample_min_height: int | None = None, tile_sample_min_width: int | None = None,
                      tile_overlap_factor_height: float | None = None,
                      tile_overlap_factor_width: float | None = None) -> None:
        """Tiling on (mode "on"), with diffusers' arguments and arithmetic for this class."""
        self.tiling_mode = "on"
        ratio = self.spatial_compression_ratio
        self.tile_sample_min_height = tile_sample_min_height or self.tile_sample_min_height
        self.tile_sample_min_width = tile_sample_min_width or self.tile_sample_min_width
        self.tile_latent_min_height = int(self.tile_sample_min_height / ratio)
        self.tile_latent_min_width = int(self.tile_sample_min_width / ratio)
        self.tile_overlap_factor_height = tile_overlap_factor_height or self.tile_overlap_factor_height
        self.tile_overlap_factor_width = tile_overlap_factor_width or self.tile_overlap_factor_width


def _drop_frames(out, *, count: int):
    return out[:, :, count:]


def _pad_frames(x: torch.Tensor, before: int, after: int) -> torch.Tensor:
    """x with its first frame repeated `before` times in front and its last `after` times behind (replicate)."""
    parts = [x[:, :, :1].expand(-1, -1, before, -1, -1)] if before else []
    parts += [x] + ([x[:, :, -1:].expand(-1, -1, after, -1, -1)] if after else [])
    return torch.cat(parts, dim=2) if len(parts) > 1 else x
