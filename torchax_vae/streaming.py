"""TorchaxVAE's streamed decode and its sessions, as methods of the facade (a mixin of `TorchaxVAE`).

`decode_stream` runs the facade's own `decode` as far as its checks and captures the loop it would run
(torchax_vae/stream.py), so every family's arguments and checks are `decode`'s; the sessions are in
torchax_vae/session.py.
"""

import torch

from . import convert, pixels, stream


class Streaming:
    """decode_stream, decode_session and encode_session of a TorchaxVAE (`self` is the facade)."""

    def decode_stream(self, z: torch.Tensor, *args, frames: str = "float", **kwargs) -> stream.DecodeStream:
        """`decode(z, *args, **kwargs)` as an iterator over frame chunks, each as soon as it is final.

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
        try:
            with stream.capturing():
                self.decode(z, *args, **kwargs)
        except stream.Captured as captured:
            run, x = captured.run, captured.x
        else:  # a facade whose decode runs without `_compute` would have decoded already
            raise NotImplementedError(f"{type(self).__name__}.decode does not run through _compute")
        with stream.chunked():
            chunks = stream.chunks_of(run(self._source(x)))

        def as_tensor(chunk):
            if frames == "uint8":  # the family's pixels (torchax_vae/pixels.py), rounded on the device
                family = self._family
                return convert.uint8_like(pixels.to_uint8(chunk, family, family.decoded_layout.index("C")), x)
            return convert.like(chunk, x, own_dtype=self._family.casts_inputs)

        return stream.DecodeStream(chunks, as_tensor)

    def decode_session(self):
        """A decode fed latents chunk by chunk, as a generator makes them (torchax_vae/session.py):
        `session.decode(latent_chunk)` returns the frames that chunk completes; `session.close()` frees it."""
        from .session import DecodeSession

        return DecodeSession(self)

    def encode_session(self):
        """An encode fed video chunk by chunk, as a camera or a file read in order gives it (torchax_vae/session.py):
        `session.encode(frames)` returns the posterior of the latent frames those frames complete."""
        from .session import EncodeSession

        return EncodeSession(self)
