"""A decode as a stream of final frame chunks (`TorchaxVAE.decode_stream`).

Every video family's decode loop is a generator of frame chunks (`Family.decode_chunks`), each yielded as soon as
it is final: the feat_cache families' latent frames, CogVideoX's frame batches, each frame window's kept frames once
it has faded in from the window before. A decode is one prepared call (`TorchaxVAE._decode_call`: every check, the
timestep, the generator) whose chunk iterator `decode` joins on the frame axis and `decode_stream` hands out here,
so a stream's chunks, joined, are `decode`'s output bit for bit: the same programs, in the same order. Families
whose loop is one call (images, Stable Video Diffusion, the whole-clip classes, Allegro's 3-D tiles) give one chunk.

Only the chunks in flight live on the device: the one the consumer holds and the next, which JAX computes
while the consumer copies the one before (`LOOKAHEAD`). Closing the stream (`close()`, `break`, or the
iterator being dropped) closes the family's generator, which drops its caches at once.
"""

__all__ = ["DecodeStream", "LOOKAHEAD"]

from torchax_vae.engine.arrays import LOOKAHEAD


class DecodeStream:
    """An iterator over one decode's frame chunks, as torch tensors like `decode`'s output (or uint8).

    chunks: the family's chunk generator (JAX arrays); convert: a JAX chunk -> the tensor handed out.
    Iterate it, or use it as a context manager; `close()` stops the decode and frees its device memory.
    """

    def __init__(self, chunks, convert):
        self._chunks = chunks
        self._convert = convert
        self._ahead: list = []
        self._closed = False

    def __iter__(self):
        return self

    def __next__(self):
        if self._closed:
            raise StopIteration
        try:
            while len(self._ahead) <= LOOKAHEAD:
                self._ahead.append(next(self._chunks))
        except StopIteration:
            if not self._ahead:
                self.close()
                raise
        except BaseException:
            self.close()
            raise
        return self._convert(self._ahead.pop(0))

    def close(self) -> None:
        """Stops the decode: the family's loop ends at once and its caches and queued chunks are dropped."""
        if self._closed:
            return
        self._closed = True
        self._ahead.clear()
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
