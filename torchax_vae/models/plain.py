"""A VAE of your own: a PyTorch autoencoder that diffusers does not ship, run as diffusers' own are (docs/guide/api.md).

A research decoder, or the tiny preview decoders realtime video generators use (TAEHV), has no diffusers class and
no diffusers config. `PlainFamily` runs a model whose `encoder` and `decoder` children each take a whole input (a
video [B, C, F, H, W] or images [B, C, H, W]) as one program per input shape. A subclass says what diffusers'
config would: the model class, its channels and compression, and how the model is built from a folder
(`load_model`). Registered (`torchax_vae.facade.plugins.register_family`, or `--plugin module:Family` on the
command line), it gets `TorchaxVAE(model)`, `decode`, `decode_stream`, sessions where its frames decode alone
(`frame_wise`), the command and the service.
"""

import torch
from torch import nn

from torchax_vae.engine.lowering import OneChildLowered
from torchax_vae.facade.family import Family

__all__ = ["PlainFamily"]


class PlainFamily(Family):
    """A model with `encoder` and `decoder` children, one call each; subclasses set the class attributes below and
    `load_model`."""

    model_class: type = None
    rank = 5  # 5: videos [B, C, F, H, W]; 4: images [B, C, H, W]
    pipeline_layout = decoded_layout = "BCFHW"
    video_channels: int = 3  # what `encode` takes and `decode` gives
    latent_channels: int = 4  # what `decode` takes (the encoder gives twice as many: mean and log-variance)
    spatial_compression_ratio: int = 8
    temporal_compression_ratio: int = 1  # video frames per latent frame
    # Whether each latent frame decodes (and each video frame encodes) alone: then a session takes chunks of any
    # length and carries no state, its chunks' outputs being exactly the whole video's.
    frame_wise: bool = False

    @classmethod
    def load_model(cls, name_or_path: str, subfolder: str | None, **kwargs) -> nn.Module:
        raise NotImplementedError(f"{cls.__name__} does not say how its model is built from a folder (load_model)")

    def lower(self, vae: nn.Module):
        return self.lowering_on(OneChildLowered, vae, self.marked, self.spatial_compression_ratio, rank=self.rank)

    def latent_shape(self, video_shape) -> tuple[int, ...]:
        ratio = self.spatial_compression_ratio
        *outer, height, width = video_shape
        if self.rank == 4:
            return (outer[0], self.latent_channels, height // ratio, width // ratio)
        return (outer[0], self.latent_channels, outer[2] // self.temporal_compression_ratio, height // ratio,
                width // ratio)

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents  # (no pipeline normalizes them)

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents

    def encode(self, source, tiled: bool | None = None):
        return self._run("encoder", self.lowered.encode_step, source, None)

    def decode(self, source, tiled: bool | None = None):
        return self._run("decoder", self.lowered.decode_step, source, None)

    def _run(self, child: str, step, source, frames):
        return self.engine.run_batch(child, step, {child: self.engine.weights[child]}, source.take(frames))

    # ----- sessions, where frames are independent: each chunk is one call, and no state carries -----

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.carries_state = cls.frame_wise and cls.rank == 5  # (a session's family: `Family.carries_state`)

    def call_ranges(self, frames: int, first: bool, kind: str = "decode") -> list[tuple[int, int]]:
        return [(0, frames)]

    def chunk_loop(self, kind: str, source, ranges, state):
        child, step = ("decoder", self.lowered.decode_step) if kind == "decode" else ("encoder", self.lowered.encode_step)
        for frames in ranges:
            yield self._run(child, step, source, frames)
        return ()  # (no state: the next chunk is a later one, nothing more)
