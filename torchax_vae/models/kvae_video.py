"""Kandinsky's video VAE: diffusers' AutoencoderKLKVAEVideo (KVAE 3D; no diffusers pipeline uses it).

How diffusers runs it, and how this adapter does: as Kandinsky 6's SR VAE (models/kandinsky6_sr.py), whose scheme
it is: segments of 16 frames (the first 17; `_encode`'s and `_decode`'s `seg_len`), one encoder or decoder call
each, every causal convolution carrying the frames the next segment needs in a cache dict diffusers mutates in
place. Here each segment is a program of (weights, frames, state), the state those carried frames in the cache's
order (`_make_encoder_cache()` / `_make_decoder_cache()`, built by the model), rebuilt into the dict inside the
trace: a first, a steady and a last-segment program per resolution and direction, whatever the length; the decode
streams segment by segment, and sessions carry the state between chunks. What this class does its own way:

- Its cache dicts also mark each group norm as past its first segment (`mean` / `var` set to 1): carried here as
  one flag each, beside the paddings.
- Its group norms take their statistics over a segment, so a session follows diffusers' segments: a first chunk of
  1 + 16k frames (latents: 1 + 16k / the temporal ratio), then multiples of 16; only the last chunk may end
  elsewhere (a further one is refused, naming the sizes that work).
- `encode` keeps the mean half of each segment's encoder output and gives a posterior of zero log-variance (std 1),
  as diffusers' `encode` builds it.
- Slicing as diffusers' (one video per call); `enable_tiling` sets a flag that nothing reads, as diffusers'.
- No latent normalization: no pipeline scales its latents.
"""

import inspect

import jax
import jax.numpy as jnp
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.kvae_video", "KVAEVideoVAE"] entry by looking
# the base class up in this module.
from diffusers import AutoencoderKLKVAEVideo, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_kvae_video import (KVAECachedCausalConv3d, KVAECachedPXSDownsample,
                                                                     KVAECachedPXSUpsample, KVAECachedResnetBlock3D)

from torchax_vae import patches
from torchax_vae.engine.arrays import apply
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.models.kandinsky6_sr import SEGMENT_FRAMES, Kandinsky6SR, Kandinsky6SRLowered
from torchax_vae.facade.family import config_value

__all__ = ["KVAEVideo", "KVAEVideoVAE"]

# diffusers' segment length for this class (`_encode(x, seg_len=16)`), the one Kandinsky 6's SR VAE uses too; a
# diffusers whose default differs is not served (this module refuses to import: `registry.loaded`), rather
# than served with another segmentation
if inspect.signature(AutoencoderKLKVAEVideo._encode).parameters["seg_len"].default != SEGMENT_FRAMES:
    raise ImportError(f"this diffusers' AutoencoderKLKVAEVideo segments by other than {SEGMENT_FRAMES} frames")


def _state(cache) -> list:
    """What a cache carries to the next segment, in its dicts' and lists' order: each causal convolution's padding
    (None where the segment did not use it), and a flag per group norm (a scalar once past its first segment)."""
    if isinstance(cache, dict):
        if "padding" in cache:
            return [cache["padding"]]
        if "mean" in cache:
            return [None if cache["mean"] is None else torch.ones(())]
        return [leaf for value in cache.values() for leaf in _state(value)]
    if isinstance(cache, list):
        return [leaf for value in cache for leaf in _state(value)]
    return []


def _restore(cache, state) -> None:
    """A fresh cache filled with a later segment's state (`_state`'s order)."""
    if isinstance(cache, dict):
        if "padding" in cache:
            cache["padding"] = next(state)
        elif "mean" in cache:
            past = next(state) is not None
            cache["mean"] = cache["var"] = 1 if past else None
        else:
            for value in cache.values():
                _restore(value, state)
    elif isinstance(cache, list):
        for value in cache:
            _restore(value, state)


class KVAEVideoLowered(Kandinsky6SRLowered):
    """One encoder or decoder call of a segment, pure in JAX arrays: (weights, frames, state) -> (output, state)."""

    def _segment(self, child: str, weights, x, state, ratio: int):
        dtype = x.dtype
        weights, x, state = self.env.j2t_iso((weights, x, state))
        with self._tracing(dtype, x.shape, ratio):
            cache = self.model._make_encoder_cache() if child == "encoder" else self.model._make_decoder_cache()
            if state is not None:
                _restore(cache, iter(state))
            out = self._call(child, weights, x, cache)
            if child == "encoder":
                out = out.chunk(2, dim=1)[0]  # diffusers' `_encode` keeps the mean half
            carried = tuple(None if leaf is None else patches.sharding_marks.mark(leaf) if leaf.ndim == 5 else leaf
                            for leaf in _state(cache))
        return self.env.t2j_iso((out, carried))


def _with_zero_logvar(mean):
    return jnp.concatenate([mean, jnp.zeros_like(mean)], axis=1)


class KVAEVideo(Kandinsky6SR):
    """diffusers' `AutoencoderKLKVAEVideo`, as diffusers runs it (the module docstring)."""

    model_class = AutoencoderKLKVAEVideo
    marked = (KVAECachedCausalConv3d, KVAECachedResnetBlock3D, KVAECachedPXSDownsample, KVAECachedPXSUpsample)
    pixel_mean = pixel_std = None  # (pixels in [-1, 1], as diffusers' VAEs take them)

    def lower(self, vae):
        return self.lowering_on(KVAEVideoLowered, vae, self.marked, self.spatial_compression_ratio)

    latent_channels = config_value("z_channels")

    @property
    def spatial_compression_ratio(self) -> int:
        return 2 ** (len(self.config.ch_mult) - 1)

    temporal_compression_ratio = config_value("temporal_compress_times")

    def check_video(self, shape, name: str) -> None:
        spatial = self.spatial_compression_ratio
        if shape[3] % spatial or shape[4] % spatial:
            raise ValueError(f"{name} is {shape[3]}x{shape[4]} (shape {tuple(shape)}); AutoencoderKLKVAEVideo encodes "
                             f"heights and widths that are multiples of {spatial}")

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents  # (no pipeline normalizes its latents)

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents

    def encode(self, source, tiled: bool | None = None) -> jax.Array:
        """The posterior's moments: the segments' means, and a zero log-variance, as diffusers' `encode`."""
        frames, temporal = source.shape[2], self.temporal_compression_ratio
        if (frames - 1) % temporal:  # before any program runs
            raise ValueError(f"the video has {frames} frames (shape {tuple(source.shape)}); AutoencoderKLKVAEVideo "
                             f"encodes 1 + {temporal}k frames (1, {1 + temporal}, {1 + 2 * temporal}, ...)")
        return apply(_with_zero_logvar, super().encode(source, tiled))

    def session_step(self, source, state, kind: str = "decode"):
        """Kandinsky 6 SR's session step, continued only from the end of one of diffusers' segments: the group
        norms take their statistics over a segment, so a chunk cut elsewhere is a segment diffusers never makes (its
        frames differ by ~0.2 on the test's random model). The state is (carried frames, frames so far)."""
        carried, position = (None, 0) if state is None else state
        size = SEGMENT_FRAMES // self.temporal_compression_ratio if kind == "decode" else SEGMENT_FRAMES
        what = "latent frames" if kind == "decode" else "frames"
        if position and (position <= size or (position - 1) % size):
            raise ValueError(f"the session's chunks so far end at {position} {what}, inside one of diffusers' "
                             f"segments (1 + {size}, then {size} at a time): AutoencoderKLKVAEVideo's group norms "
                             f"take their statistics over a segment, so only the last chunk may end elsewhere; give a "
                             f"first chunk of 1 + {size}k {what} and later ones of multiples of {size}")
        out, carried = super().session_step(source, carried, kind)
        return (apply(_with_zero_logvar, out) if kind == "encode" else out), (carried, position + source.shape[2])


class KVAEVideoVAE(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLKVAEVideo` (the module docstring)."""

    family = KVAEVideo

    def enable_tiling(self) -> None:
        """Accepted and changes nothing, as diffusers' (its class sets a flag that its encode and decode never
        read)."""

    def disable_tiling(self) -> None:
        """As `enable_tiling`."""

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("tiled_encode", "tiled_decode")
