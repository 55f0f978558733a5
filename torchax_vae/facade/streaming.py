"""TorchaxVAE's streamed decode and its sessions, as methods of the facade (a mixin of `TorchaxVAE`).

`decode_stream` takes the facade's own prepared decode (`_decode_call`: `decode`'s arguments and checks) and hands
out the chunks `decode` would join (torchax_vae/facade/stream.py); the sessions are in torchax_vae/facade/session.py.
"""

import torch

from torchax_vae.engine import convert
from torchax_vae.engine.arrays import chunks_of
from torchax_vae.facade import stream
from torchax_vae.facade.session import DecodeSession, EncodeSession
from torchax_vae.facade.session_batch import step_together
from torchax_vae.media import pixels


class Streaming:
    """decode_stream, decode_session and encode_session of a TorchaxVAE (`self` is the facade)."""

    def decode_stream(self, z: torch.Tensor, *args, frames: str = "float", **kwargs) -> stream.DecodeStream:
        """`decode(z, *args, **kwargs)` (its arguments less `return_dict`) as an iterator over frame chunks, each as
        soon as it is final.

        The chunks are tensors in `decoded_layout`, like `decode`'s output; joined on the frame axis they are
        `decode(z, *args, **kwargs).sample`, bit for bit (the same programs). Only the chunks in flight stay
        on the device; `close()` (or `break`, or a `with` block's end) stops the decode and frees them.
        Image families, and families whose decode is one call, yield one chunk. No gradients flow through it.

        frames: "float" (the decoder's values, in its dtype) or "uint8" (made on the device as diffusers'
        video processor rounds [-1, 1] to 0..255, a quarter of the bytes to copy to the host).
        """
        if frames not in ("float", "uint8"):
            raise ValueError(f"frames must be 'float' or 'uint8', got {frames!r}")
        if z.requires_grad and torch.is_grad_enabled():
            raise ValueError("decode_stream yields no gradients: call decode for a differentiable output, or "
                             "pass z detached (torch.no_grad())")
        call = self._decode_call(z, *args, **kwargs)
        x = call.x
        chunks = chunks_of(call.chunks(self._source(x)))

        def as_tensor(chunk):
            if frames == "uint8":  # the family's pixels (torchax_vae/media/pixels.py), rounded on the device
                family = self._family
                return convert.uint8_like(pixels.to_uint8(chunk, family, family.decoded_layout.index("C")), x)
            return convert.like(chunk, x, own_dtype=self._family.casts_inputs)

        return stream.DecodeStream(chunks, as_tensor)

    def decode_session(self):
        """A decode fed latents chunk by chunk, as a generator makes them (torchax_vae/facade/session.py):
        `session.decode(latent_chunk)` returns the frames that chunk completes; `session.close()` frees it."""

        return DecodeSession(self)

    def encode_session(self):
        """An encode fed video chunk by chunk, as a camera or a file read in order gives it (torchax_vae/facade/session.py):
        `session.encode(frames)` returns the posterior of the latent frames those frames complete."""

        return EncodeSession(self)

    def decode_sessions(self, chunks: dict, *, max_batch: int = 8, occupancy: list | None = None) -> dict:
        """Several decode sessions' next latent chunks at once ({session: latent_chunk} -> {session: frames}): the
        sessions whose chunks and states agree but for the batch run as one batched program call per step, their
        causal states stacked on the device, padded to a few batch sizes up to `max_batch` so that sessions may
        join and leave at any chunk without compiling (torchax_vae/facade/session_batch.py). Each session's frames
        are those its own `decode` would give. Every chunk is checked before anything runs. `occupancy`, a list,
        gets the number of sessions of each program call appended."""
        return self._step_sessions(chunks, DecodeSession, max_batch, occupancy)

    def encode_sessions(self, chunks: dict, *, max_batch: int = 8, occupancy: list | None = None) -> dict:
        """Several encode sessions' next video chunks at once ({session: frames} -> {session: AutoencoderKLOutput}),
        batched as `decode_sessions`."""
        from diffusers.models.modeling_outputs import AutoencoderKLOutput  # (as session.py: diffusers on use)

        moments = self._step_sessions(chunks, EncodeSession, max_batch, occupancy)
        return {session: AutoencoderKLOutput(latent_dist=self.posterior_class(out)) for session, out in moments.items()}

    def _step_sessions(self, chunks: dict, kind: type, max_batch: int, occupancy: list | None) -> dict:
        for session in chunks:
            if not isinstance(session, kind) or session._vae is not self:
                raise ValueError(f"{kind.kind}_sessions takes this TorchaxVAE's own "
                                 f"{kind.__name__}s (vae.{kind.kind}_session()); got {session!r}")
        return step_together(dict(chunks), max_batch, occupancy)
