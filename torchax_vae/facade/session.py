"""Sessions: a video fed chunk by chunk, as a chunk-by-chunk generator (or a camera, or a file read in order)
makes it.

Self-Forcing, Krea Realtime and LongLive generate a video's latents a few frames at a time and decode each
chunk as it comes, carrying the VAE's causal state from chunk to chunk. `TorchaxVAE.decode_session()` does
that on the device: `session.decode(latent_chunk)` returns the frames that chunk completes, and the family's
state (Wan's feat_cache, CogVideoX's conv_cache) stays on the device for the next chunk.
`TorchaxVAE.encode_session()` is the same for the encoder: `session.encode(frames)` returns the posterior of
the latent frames those video frames complete (what `torchax-vae encode` streams a video file through).

The chunks' outputs, joined, are the whole video's: a session runs the same programs as a whole call, on the
same frame groups (`Family.session_chunks` refuses chunkings that would group frames otherwise, and says
which it accepts). So a session of any length compiles the programs of its first chunk and of one later
chunk size, and nothing after. A session runs untiled, and is one stream's: it refuses a second thread while
a chunk runs, and any call after `close()`.

MiniMax H3 carries no causal state: it decodes clips of 7 latent frames every 5 with a non-causal decoder, the
last latent repeated to fill the last clip, and fades each clip into the one before. Its session decodes each
clip as soon as its latents have all come, holds back the rest (a clip's latents, the last clip's tail) on the
device, and `finish()` decodes what the video's end leaves (its encode session likewise, clip by clip). Its
chunks may have any length, and it tiles as its decode does (each clip is tiled alone). Every session has
`finish()`: for the families that carry causal state it is empty, their chunks' outputs being final.
"""

import threading

import jax.numpy as jnp
import torch

from torchax_vae import registry
from torchax_vae.engine import convert, validation
from torchax_vae.facade.session_batch import step_together

__all__ = ["DecodeSession", "EncodeSession"]


def families_with_state() -> str:
    """The diffusers classes whose encode and decode carry state between chunks (a session's families), as words."""
    return ", ".join(row.diffusers_class for row in registry.served() if registry.facade(row).family.carries_state)


class _Session:
    """One chunk-by-chunk encode or decode (`kind`) on a TorchaxVAE; see the module docstring."""

    kind = ""
    what = ""  # the chunks' frames, as words

    def __init__(self, vae):
        family = vae._family
        if not family.carries_state:
            raise ValueError(f"{vae.model_class.__name__} {self.kind}s a whole video per call and carries no causal "
                             f"state between chunks, so it has no {self.kind} session; sessions are for "
                             f"{families_with_state()} (use {self.kind} on the whole video)")
        if vae.tiling_mode == "on" and not family.session_tiles:
            raise ValueError(f"a {self.kind} session runs untiled; tiling is on (enable_tiling): call "
                             f"disable_tiling() first, or {self.kind} whole videos")
        self._vae = vae
        self._state = None  # the family's causal state on the device, None before the first chunk
        self._shape = None  # (batch, channels, height, width) of the first chunk
        self._lock = threading.Lock()
        self._closed = False
        self.frames = 0  # frames (latent frames for a decode, video frames for an encode) taken so far
        self._reference = None  # the last chunk, whose device and dtype `finish()` answers in

    def _run(self, x: torch.Tensor):
        """The family's output for the chunk x, checked and with the state carried: a batch of one
        (torchax_vae/facade/session_batch.py, the one path of every session step)."""
        return step_together({self: x}, max_batch=1)[self]

    def check(self, x: torch.Tensor) -> None:
        """Raises the error this session would raise for the chunk x, without running it: a closed session, a
        wrong shape, channel count or dtype, a chunking the family cannot keep exact (what a server checks before
        it queues a client's chunk)."""
        if self._closed:
            raise RuntimeError(f"this {self.kind} session is closed; open a new one with vae.{self.kind}_session()")
        vae, family = self._vae, self._vae._family
        name = "the session's first chunk" if self._state is None else "a later session chunk"
        if self.kind == "decode":
            validation.check_video(x, name="session chunk", channels=vae.latent_channels, role="decoder", rank=vae.rank,
                                      dtype=vae.dtype)
            if not family.holds_back:  # else the whole video's latents are checked at `finish()`
                family.check_latents(tuple(x.shape), "session chunk")
        else:
            validation.check_video(x, name="session chunk", channels=vae.video_channels, role="encoder", rank=vae.rank,
                                      dtype=vae.dtype)
            family.check_video(tuple(x.shape), "session chunk")
        shape = (x.shape[0], x.shape[1], x.shape[3], x.shape[4])
        if self._shape is not None and shape != self._shape:
            first = "x".join(map(str, self._shape))
            raise ValueError(f"session chunk has shape {tuple(x.shape)}; this session's chunks are [B, C, F, h, w] "
                             f"with B x C x h x w = {first}, as its first chunk's")
        accepts = family.session_chunks(x.shape[2], first=self._state is None, kind=self.kind)
        if accepts is not None:
            raise ValueError(f"{name} has {x.shape[2]} {self.what}; {vae.model_class.__name__} {self.kind}s "
                             f"exactly in a session with {accepts}")
        if x.requires_grad and torch.is_grad_enabled():
            raise ValueError(f"a {self.kind} session yields no gradients: pass the chunk detached (torch.no_grad())")
        vae._check_weights()
        family.check_training()

    def _took(self, x: torch.Tensor, out, state) -> torch.Tensor:
        """The step's output for chunk x as the session's answer, its new state kept for the next chunk."""
        self._last_shape, self._reference = tuple(x.shape), x  # (the last chunk: what `finish()` answers like)
        self._state, self._shape = state, (x.shape[0], x.shape[1], x.shape[3], x.shape[4])
        self.frames += x.shape[2]
        return self._or_empty(out, x)

    def _or_empty(self, out, x: torch.Tensor) -> torch.Tensor:
        """`out` as a tensor like x (on its device, a torchax tensor for one); where a chunk completes nothing (a
        family that holds back its unfinished clip), no frames: an empty one with the outputs' other dimensions."""
        if out is None:
            vae = self._vae
            batch, _, _, height, width = self._last_shape
            ratio = vae.spatial_compression_ratio
            if self.kind == "decode":
                shape = (batch, vae.video_channels, 0, height * ratio, width * ratio)
            else:
                shape = (batch, 2 * vae.latent_channels, 0, height // ratio, width // ratio)
            out = jnp.zeros(shape, convert.jax_dtype(x.dtype))
        return convert.like(out, x)

    def _finish(self) -> torch.Tensor:
        """What the session still holds at the video's end (nothing, for families that carry causal state:
        their chunks' outputs are final), then the session is closed."""
        if not self._lock.acquire(blocking=False):
            raise RuntimeError(f"this {self.kind} session is running a chunk in another thread; finish it after "
                               f"that chunk")
        try:
            if self._closed:
                raise RuntimeError(f"this {self.kind} session is closed; open a new one with "
                                   f"vae.{self.kind}_session()")
            if self._state is None:
                raise ValueError(f"this {self.kind} session has had no chunk: there is nothing to finish")
            out = self._vae._family.session_finish(self._state, kind=self.kind) if self._vae._family.holds_back else None
            return self._or_empty(out, self._reference)
        finally:
            self.close()
            self._lock.release()

    def close(self) -> None:
        """Frees the session's state on the device; later calls raise."""
        self._closed = True
        self._state = self._reference = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class DecodeSession(_Session):
    """A chunk-by-chunk decode (`TorchaxVAE.decode_session()`). Its chunks are latents as `decode` takes them
    ([B, C, F, h, w], the pipeline's normalization undone), each of the same batch, channels, height and width
    as the first."""

    kind, what = "decode", "latent frames"

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """The frames the latent chunk `z` completes, as a tensor like `decode`'s output (on z's device)."""
        return self._run(z)

    def finish(self) -> torch.Tensor:
        """The video's last frames, which no chunk completed (MiniMax H3 decodes its last clip once it knows it is
        the last; other families have decoded every frame already, and this is empty); then closes the session.
        The chunks' frames and these, joined, are `decode` of the whole video's latents."""
        return self._finish()

    @property
    def latent_frames(self) -> int:
        """Latent frames decoded so far."""
        return self.frames


class EncodeSession(_Session):
    """A chunk-by-chunk encode (`TorchaxVAE.encode_session()`). Its chunks are videos as `encode` takes them
    ([B, C, F, H, W] in [-1, 1]), each of the same batch, channels, height and width as the first."""

    kind, what = "encode", "video frames"

    def encode(self, x: torch.Tensor, return_dict: bool = True):
        """The posterior of the latent frames the video chunk `x` completes, as `encode` returns it (an
        `AutoencoderKLOutput`, or a tuple without `return_dict`). Its parameters, joined over the chunks on the
        frame axis, are the whole video's posterior's."""
        from diffusers.models.modeling_outputs import AutoencoderKLOutput


        posterior = self._vae.posterior_class(self._run(x))
        return AutoencoderKLOutput(latent_dist=posterior) if return_dict else (posterior,)

    def finish(self, return_dict: bool = True):
        """The posterior of the video's last latent frames, which no chunk completed (MiniMax H3 encodes its last
        clip once it knows it is the last; empty for other families); then closes the session."""
        from diffusers.models.modeling_outputs import AutoencoderKLOutput

        posterior = self._vae.posterior_class(self._finish())
        return AutoencoderKLOutput(latent_dist=posterior) if return_dict else (posterior,)
