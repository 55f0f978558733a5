"""The Mochi family: diffusers' AutoencoderKLMochi (MochiPipeline).

A whole-clip VAE on the frame-window scheme (torchax_vae/models/windows.py) without the windows, like
HunyuanVideo 1.5: diffusers' `_encode` and `_decode` run the encoder and decoder once on the whole clip
(their conv_cache is returned and dropped), so here each is one program per clip length and resolution. What
is Mochi's own:

- the encoder takes the video's Fourier features (3 channels become `in_channels` = 15 inside it), so a video
  has `in_channels` / 5 channels;
- the decoder returns `temporal_compression_ratio` frames per latent frame, of which diffusers drops the first
  ratio - 1 (`drop_last_temporal_frames`, on by default; per tile when tiled): dropped here inside the decoder's
  program, which is named for it;
- per-frame GroupNorm in chunks of 8 frames (`MochiChunkedGroupNorm3D`), run as one per-frame reduction
  (torchax_vae/patches/group_norm.py), and attention over each pixel's frames (frame-causal);
- tiling as HunyuanVideo's (`tile_sample_min_*`, `tile_sample_stride_*`), spatial only;
- MochiPipeline's latent normalization: `latents * latents_std / scaling_factor + latents_mean` before decoding.

diffusers' private frame-batched decoding (`_enable_framewise_decoding`, which switches every causal
convolution to constant padding and carries their conv_cache) is refused when the wrapped model has it on.
"""

import functools

import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.mochi", "MochiVAE"] entry by looking the
# base class up in this module.
from diffusers import AutoencoderKLMochi, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_cogvideox import CogVideoXCausalConv3d
from diffusers.models.autoencoders.autoencoder_kl_mochi import FourierFeatures

from torchax_vae.patches.group_norm import TorchaxFrameGroupNorm
from torchax_vae.models.windows import WindowLowered, Windows, WindowVAE
from torchax_vae.facade.policy import tiling_switch
from torchax_vae.facade.family import causal_latent_shape, of_config, with_config

__all__ = ["MochiVAE", "latent_shape", "video_channels"]


def _product(values) -> int:
    return functools.reduce(lambda a, b: a * b, values, 1)


def video_channels(config) -> int:
    """Channels of the video: the encoder's `in_channels` are the video's and their sines and cosines."""
    features = FourierFeatures()
    return config.in_channels // (1 + 2 * len(range(features.start, features.stop, features.step)))


def latent_shape(config, video_shape) -> tuple[int, ...]:
    """[B, latent_channels, F, H, W] of the latents of a [B, C, frames, height, width] video under `config`.

    Each causal down block's strided convolution (time padded by its stride - 1) keeps (n - 1) // stride + 1
    frames and height // stride rows, so the strides multiply.
    """
    return causal_latent_shape(video_shape, config.latent_channels, _product(config.temporal_expansions), _product(config.spatial_expansions))


class MochiLowered(WindowLowered):
    """The private, patched copy's encoder and decoder calls (each returns its conv_cache too: dropped)."""

    dot_statistics = True  # libtpu 0.0.42 failed on its GroupNorms' reductions (docs/limits.md)

    def encode_step(self, weights, frames):
        dtype = frames.dtype
        weights, frames = self.env.j2t_iso((weights, frames))
        with self._tracing(dtype, frames.shape, self.spatial_ratio):
            h, _ = self._call("encoder", weights, frames)
        return self.env.t2j_iso(h)

    def decode_step(self, weights, latents, *, drop: int = 0):
        """One decoder call; `drop`: the leading output frames diffusers drops (drop_last_temporal_frames)."""
        dtype = latents.dtype
        weights, latents = self.env.j2t_iso((weights, latents))
        with self._tracing(dtype, latents.shape, 1):
            out, _ = self._call("decoder", weights, latents)
            out = out[:, :, drop:]
        return self.env.t2j_iso(out)


class Mochi(Windows):
    """diffusers' `AutoencoderKLMochi`, as diffusers runs it (module docstring)."""

    model_class = AutoencoderKLMochi
    lowered_class = MochiLowered
    # every causal convolution (its input before diffusers' replicate padding, its output) and norm; not the
    # Linear layers, which work channels-last
    marked = (CogVideoXCausalConv3d, TorchaxFrameGroupNorm)
    frame_windows = False
    settings = ("tile_sample_min_height", "tile_sample_min_width", "tile_sample_stride_height",
                "tile_sample_stride_width", "drop_last_temporal_frames")

    def __init__(self, vae, engine=None):
        if vae.use_framewise_encoding or vae.use_framewise_decoding:
            raise ValueError("this AutoencoderKLMochi has framewise encoding or decoding on (diffusers' private "
                             "_enable_framewise_decoding); TorchaxVAE runs Mochi's default whole-clip calls only: "
                             "use a model without it")
        super().__init__(vae, engine)

    video_channels = of_config(video_channels)

    @property
    def spatial_compression_ratio(self) -> int:
        return _product(self.config.spatial_expansions)

    @property
    def temporal_compression_ratio(self) -> int:
        return _product(self.config.temporal_expansions)

    latent_shape = with_config(latent_shape)

    def _normalization(self, latents: torch.Tensor):
        """The config's per-channel latents_mean and latents_std (0 and 1 where it has none, as MochiPipeline)."""
        shape = (1, self.config.latent_channels, 1, 1, 1)
        mean, std = self.config.latents_mean, self.config.latents_std
        if mean is None or std is None:
            return 0.0, 1.0
        mean = torch.tensor(mean).view(shape).to(latents.device, latents.dtype)
        std = torch.tensor(std).view(shape).to(latents.device, latents.dtype)
        return mean, std

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        mean, std = self._normalization(latents)
        return (latents - mean) * self.config.scaling_factor / std

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        mean, std = self._normalization(latents)
        return latents * std / self.config.scaling_factor + mean  # as MochiPipeline before decoding

    def _program_options(self, kind: str, conditioning: dict) -> dict:
        if kind == "decode" and self.drop_last_temporal_frames:
            return {"drop": self.temporal_compression_ratio - 1}
        return {}


class MochiVAE(WindowVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLMochi` (module docstring)."""

    family = Mochi

    enable_tiling = tiling_switch(
        "tile_sample_min_height", "tile_sample_min_width", "tile_sample_stride_height", "tile_sample_stride_width")
