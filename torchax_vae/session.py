"""A decode session: latents fed chunk by chunk, as a chunk-by-chunk generator makes them.

Self-Forcing, Krea Realtime and LongLive generate a video's latents a few frames at a time and decode each
chunk as it comes, carrying the VAE's causal state from chunk to chunk. `TorchaxVAE.decode_session()` does
that on the device: `session.decode(latent_chunk)` returns the frames that chunk completes, and the family's
state (Wan's feat_cache, CogVideoX's conv_cache) stays on the device for the next chunk.

The frames of every chunk, joined, are the decode of the joined latents: a session runs the same programs as
a whole decode, on the same frame groups (`Family.session_chunks` refuses chunkings that would group frames
otherwise, and says which it accepts). So a session of any length compiles the programs of its first chunk
and of one later chunk size, and nothing after. A session runs untiled, and is one stream's: it refuses a
second thread while a chunk decodes, and any call after `close()`.
"""

import threading

import torch

from . import validation

__all__ = ["DecodeSession"]


def families_with_state() -> str:
    """The diffusers classes whose decode carries state between chunks (a session's families), as words."""
    from .models import WRAPPERS

    return ", ".join(w.model_class.__name__ for w in WRAPPERS if w.family.carries_state)


class DecodeSession:
    """One chunk-by-chunk decode on a TorchaxVAE (`TorchaxVAE.decode_session()`); see the module docstring.

    Its chunks are latents as `decode` takes them ([B, C, F, h, w], the pipeline's normalization undone),
    each of the same batch, channels, height and width as the first.
    """

    def __init__(self, vae):
        family = vae._family
        if not family.carries_state:
            raise ValueError(f"{vae.model_class.__name__} decodes a whole video per call and carries no causal "
                             f"state between chunks, so it has no decode session; sessions are for "
                             f"{families_with_state()} (use decode_stream for a stream of a whole video)")
        if vae.tiling_mode == "on":
            raise ValueError("a decode session runs untiled; tiling is on (enable_tiling): call disable_tiling() "
                             "first, or decode whole videos with decode_stream")
        self._vae = vae
        self._state = None  # the family's causal state on the device, None before the first chunk
        self._shape = None  # (batch, channels, height, width) of the first chunk
        self._lock = threading.Lock()
        self._closed = False
        self.latent_frames = 0  # latent frames decoded so far

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """The frames the latent chunk `z` completes, as a tensor like `decode`'s output (on z's device)."""
        if not self._lock.acquire(blocking=False):
            raise RuntimeError("this decode session is decoding a chunk in another thread; a session is one "
                               "stream's: open one per stream (vae.decode_session())")
        try:
            return self._decode(z)
        finally:
            self._lock.release()

    def _decode(self, z: torch.Tensor) -> torch.Tensor:
        if self._closed:
            raise RuntimeError("this decode session is closed; open a new one with vae.decode_session()")
        vae, family = self._vae, self._vae._family
        name = "the session's first chunk" if self._state is None else "a later session chunk"
        validation.check_video(z, name="session chunk", channels=vae.latent_channels, role="decoder", rank=vae.rank)
        family.check_latents(tuple(z.shape), "session chunk")
        shape = (z.shape[0], z.shape[1], z.shape[3], z.shape[4])
        if self._shape is not None and shape != self._shape:
            first = "x".join(map(str, self._shape))
            raise ValueError(f"session chunk has shape {tuple(z.shape)}; this session's chunks are [B, C, F, h, w] "
                             f"with B x C x h x w = {first}, as its first chunk's")
        accepts = family.session_chunks(z.shape[2], first=self._state is None)
        if accepts is not None:
            raise ValueError(f"{name} has {z.shape[2]} latent frames; {vae.model_class.__name__} decodes exactly "
                             f"in a session with {accepts}")
        if z.requires_grad and torch.is_grad_enabled():
            raise ValueError("a decode session yields no gradients: pass the chunk detached (torch.no_grad())")
        vae._check_weights()
        family.check_training()
        from .vae import _like

        out, state = family.session_step(vae._source(z), self._state)
        self._state, self._shape = state, shape
        self.latent_frames += z.shape[2]
        return _like(out, z)

    def close(self) -> None:
        """Frees the session's state on the device; later calls raise."""
        self._closed = True
        self._state = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
