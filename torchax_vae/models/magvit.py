"""The EasyAnimate family: diffusers' AutoencoderKLMagvit (EasyAnimatePipeline and its control and inpaint
variants).

How diffusers runs it: the encoder sees the first frame alone, then batches of `num_sample_frames_batch_size`
(4) frames; the decoder the first latent frame alone, then batches of `num_latent_frames_batch_size` (1). The
batches continue from a cache that lives in the modules themselves: each `EasyAnimateCausalConv3d` keeps its
last input frames in `prev_features` (replicate padding on the first call, those frames on the next), and each
temporally upsampling `EasyAnimateUpsampler3D` keeps its first output there, only to know that the next call is
not the first (it then doubles the frames). `_clear_conv_cache()` empties them after each encode or decode (and
each tile). quant_conv and post_quant_conv are pointwise `nn.Conv3d`s, run once on the whole clip.

Here a batch is one program of (weights, frames, cache): the cache is the tuple of the causal convolutions'
`prev_features`, set on the private copy's modules before the trace and read back after it (the upsamplers
are told only that a cache exists), so it stays on the device between batches. Programs: the first batch
(no cache) and the steady batch each way (a clip is 1 + 4k frames: diffusers' encoder fails on others); the
pointwise quant convolutions inside.

Tiling is diffusers' (`tile_sample_min_*`, `tile_sample_stride_*`), with its arithmetic as it is: the tiling
threshold compares the width with the minimum height and the height with the minimum width, and
`tiled_encode` keeps each blended tile whole (up to the latents' size), not a stride's worth, before cropping.
Per-frame GroupNorm (`spatial_group_norm`, frames folded into the batch) is traced as diffusers writes it.
Pipelines scale latents by `scaling_factor`.
"""


import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.magvit", "MagvitVAE"] entry by looking the
# base class up in this module.
from diffusers import AutoencoderKLMagvit, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_magvit import (
    EasyAnimateCausalConv3d,
    EasyAnimateDownsampler3D,
    EasyAnimateResidualBlock3D,
    EasyAnimateUpsampler3D,
)

from torchax_vae.placement import tiling
from torchax_vae.patches.group_norm import TorchaxGroupNorm
from torchax_vae.patches.sharding_marks import mark
from torchax_vae.engine.arrays import apply, join
from torchax_vae.models.windows import WindowLowered, Windows, WindowVAE
from torchax_vae.facade.family import of_config, with_config

__all__ = ["MagvitVAE", "frame_batches", "latent_shape", "video_channels"]


def video_channels(config) -> int:
    return config.in_channels


def _ratios(config) -> tuple[int, int]:
    """(temporal, spatial) compression, as the class computes them from its blocks."""
    levels = len(config.block_out_channels)
    return 2 ** (levels - 2), 2 ** (levels - 1)


def latent_shape(config, video_shape) -> tuple[int, ...]:
    """[B, latent_channels, F, H, W] of the latents of a [B, C, 1 + kT frames, height, width] video."""
    batch, _, frames, height, width = video_shape
    temporal, spatial = _ratios(config)
    return (batch, config.latent_channels, (frames - 1) // temporal + 1, height // spatial, width // spatial)


def frame_batches(frames: int, size: int) -> list[tuple[int, int]]:
    """The (start, end) frames of diffusers' calls: the first frame alone, then `size` at a time."""
    return [(0, min(1, frames))] + [(start, min(start + size, frames)) for start in range(1, frames, size)]


class MagvitLowered(WindowLowered):
    """The private, patched copy's encoder and decoder calls, with the modules' cache as arguments and results."""

    dot_statistics = True  # libtpu 0.0.42 failed on its GroupNorms' reductions (docs/limits.md)

    def _stateful(self, role: str):
        module = getattr(self.model, role)
        convs = [m for m in module.modules() if isinstance(m, EasyAnimateCausalConv3d)]
        upsamplers = [m for m in module.modules() if isinstance(m, EasyAnimateUpsampler3D)]
        return convs, upsamplers

    def _with_cache(self, role: str, cache, call):
        """`call()` with the role's causal convolutions holding `cache` (None: the first batch); its result and the
        cache it leaves. The modules are emptied afterwards, as diffusers' `_clear_conv_cache`."""
        convs, upsamplers = self._stateful(role)
        try:
            for conv, features in zip(convs, cache or (None,) * len(convs)):
                conv.prev_features = features
            for upsampler in upsamplers:  # read only as "not the first call"
                upsampler.prev_features = None if cache is None else True
            out = call()
            # marked as activations: every batch's program then takes the cache split alike (compiled once)
            return out, tuple(mark(conv.prev_features) for conv in convs)
        finally:
            for module in (*convs, *upsamplers):
                module.prev_features = None

    def encode_step(self, weights, frames, cache):
        """One encoder call on a frame batch, then quant_conv (pointwise): (moments, cache)."""
        dtype = frames.dtype
        weights, frames, cache = self.env.j2t_iso((weights, frames, cache))
        with self._tracing(dtype, frames.shape, self.spatial_ratio):
            h, cache = self._with_cache("encoder", cache, lambda: self._call("encoder", weights, frames))
            h = self._call("quant_conv", weights, h)
        return self.env.t2j_iso((h, cache))

    def decode_step(self, weights, latents, cache):
        """post_quant_conv (pointwise), then one decoder call on a latent frame batch: (frames, cache)."""
        dtype = latents.dtype
        weights, latents, cache = self.env.j2t_iso((weights, latents, cache))
        with self._tracing(dtype, latents.shape, 1):
            z = self._call("post_quant_conv", weights, latents)
            out, cache = self._with_cache("decoder", cache, lambda: self._call("decoder", weights, z))
        return self.env.t2j_iso((out, cache))


class Magvit(Windows):
    """diffusers' `AutoencoderKLMagvit`, as diffusers runs it (module docstring)."""

    model_class = AutoencoderKLMagvit
    lowered_class = MagvitLowered
    # the blocks, samplers and norms; not the causal convolutions themselves, whose input in a downsampler is
    # padded by one row and column (a level's 32 x 128 as 33 x 129, which no grid divides)
    marked = (EasyAnimateResidualBlock3D, EasyAnimateDownsampler3D, EasyAnimateUpsampler3D, TorchaxGroupNorm)
    frame_windows = False
    settings = ("tile_sample_min_height", "tile_sample_min_width", "tile_sample_stride_height",
                "tile_sample_stride_width", "num_sample_frames_batch_size", "num_latent_frames_batch_size")

    video_channels = of_config(video_channels)

    spatial_compression_ratio = of_config(lambda config: _ratios(config)[1])

    temporal_compression_ratio = of_config(lambda config: _ratios(config)[0])

    latent_shape = with_config(latent_shape)

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents * self.config.scaling_factor

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents / self.config.scaling_factor  # as EasyAnimatePipeline before decoding

    check_video = Windows._check_clip

    def _tile_threshold(self, kind: str) -> tuple[int, int]:
        # diffusers compares the width (shape[-1]) with the minimum height and the height with the minimum width
        sample = (self.tile_sample_min_width, self.tile_sample_min_height)
        return sample if kind == "encode" else tuple(t // self.spatial_compression_ratio for t in sample)

    def _tile_layout(self, kind: str, size: tuple[int, int]) -> tiling.TileLayout:
        lay = super()._tile_layout(kind, size)
        if kind == "encode":  # tiled_encode keeps each blended tile whole, up to the latents' `size`
            lay = tiling.TileLayout(**{**lay.__dict__, "keep_height": size[0], "keep_width": size[1]})
        return lay

    def _call(self, kind: str, source, span, block=None, conditioning=None):
        """diffusers' frame batches over frames `span` of the source (or of a (row, col, height, width) block),
        the modules' cache carried on the device; the batches' outputs joined."""
        encode = kind == "encode"
        children = ("encoder", "quant_conv") if encode else ("decoder", "post_quant_conv")
        weights = {k: self.engine.weights[k] for k in children}
        step = self.lowered.encode_step if encode else self.lowered.decode_step
        size = self.num_sample_frames_batch_size if encode else self.num_latent_frames_batch_size
        name = ("encoder" if encode else "decoder") + ("" if block is None else "/tile")
        cache, outs = None, []
        for start, end in frame_batches(span[1] - span[0], size):
            frames = (span[0] + start, span[0] + end)
            chunk = source.take(frames) if block is None else source.take(frames, block[::2], block[1::2])
            program = name if cache is None else f"{name}+cache"
            out, cache = self.engine.programs.run(program, step, weights, chunk, cache)
            outs.append(out)
        return outs[0] if len(outs) == 1 else apply(join, outs, axis=2)


class MagvitVAE(WindowVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLMagvit` (module docstring)."""

    family = Magvit

    def enable_tiling(
        self,
        tile_sample_min_height: int | None = None,
        tile_sample_min_width: int | None = None,
        tile_sample_min_num_frames: int | None = None,
        tile_sample_stride_height: float | None = None,
        tile_sample_stride_width: float | None = None,
        tile_sample_stride_num_frames: float | None = None,
    ) -> None:
        """Spatial tiling (mode "on"), with the same arguments and meaning as diffusers' for this class (the frame
        arguments are stored there and never read)."""
        self.tiling_mode = "on"
        self.tile_sample_min_height = tile_sample_min_height or self.tile_sample_min_height
        self.tile_sample_min_width = tile_sample_min_width or self.tile_sample_min_width
        self.tile_sample_stride_height = tile_sample_stride_height or self.tile_sample_stride_height
        self.tile_sample_stride_width = tile_sample_stride_width or self.tile_sample_stride_width
