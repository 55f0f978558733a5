"""A decode as a stream of final frame chunks (`TorchaxVAE.decode_stream`).

Every video family's decode loop is a generator of frame chunks (`Family.decode_chunks`), each yielded as
soon as it is final: the feat_cache families' latent frames, CogVideoX's frame batches, each frame window's
kept frames once it has faded in from the window before. `Family.decode` is the same generator joined on the frame axis,
so a stream's chunks, joined, are `decode`'s output bit for bit: the same programs, in the same order.

`decode_stream(z, *args, **kwargs)` takes `decode`'s own arguments. It runs the facade's `decode` as far as
its `_compute` (every check, the timestep, the generator: the same code as `decode`), where `capturing()`
makes `_compute` hand back what it would run instead of running it (`Captured`). That computation then
runs with `chunked()` on, in which `Family.decode` returns its generator instead of joining it, and the
facade's slicing walks the batch's generators side by side. Families whose loop is one call (images,
Stable Video Diffusion, the whole-clip classes, Allegro's 3-D tiles) give one chunk.

Only the chunks in flight live on the device: the one the consumer holds and the next, which JAX computes
while the consumer copies the one before (`LOOKAHEAD`). Closing the stream (`close()`, `break`, or the
iterator being dropped) closes the family's generator, which drops its caches at once.
"""

import contextlib
import contextvars

import jax

__all__ = ["Captured", "DecodeStream", "capturing", "chunked", "is_chunked", "join_chunks", "run_out"]

_CHUNKED = contextvars.ContextVar("torchax_vae_chunked", default=False)
_CAPTURING = contextvars.ContextVar("torchax_vae_capturing", default=False)

# Chunks computed ahead of the one the consumer holds: JAX runs the next while the host copies this one.
LOOKAHEAD = 1


@contextlib.contextmanager
def _switched_on(var: contextvars.ContextVar):
    token = var.set(True)
    try:
        yield
    finally:
        var.reset(token)


def chunked():
    """Inside: this context's `Family.decode` returns its generator of chunks instead of the joined video."""
    return _switched_on(_CHUNKED)


def is_chunked() -> bool:
    return _CHUNKED.get()


class Captured(Exception):
    """Raised by `TorchaxVAE._compute` while `capturing()`: the computation a call would run, and its input."""

    def __init__(self, run, x):
        super().__init__("captured")
        self.run, self.x = run, x


def capturing():
    """Inside: `TorchaxVAE._compute` raises `Captured` instead of computing."""
    return _switched_on(_CAPTURING)


def is_capturing() -> bool:
    return _CAPTURING.get()


def run_out(steps) -> tuple[list, object]:
    """A generator run to its end: (what it yielded, what it returned), as a session step reads a family's loop
    (its outputs, and the causal state it ends with)."""
    outputs = []
    while True:
        try:
            outputs.append(next(steps))
        except StopIteration as done:
            return outputs, done.value


def join_chunks(chunks, axis: int):
    """A family's chunks joined on the frame axis (`Family.decode`'s output), arrays or their shapes."""
    from .vae import apply, join

    chunks = list(chunks)
    return chunks[0] if len(chunks) == 1 else apply(join, chunks, axis=axis)


def chunks_of(out):
    """A computation's output in chunked mode as an iterator: a family's generator, or one array as one chunk."""
    if isinstance(out, (jax.Array, jax.ShapeDtypeStruct)):
        return iter((out,))
    return out


def side_by_side(generators, axis: int = 0):
    """Slicing's per-sample generators walked together: each step's chunks joined on the batch axis."""
    from .vae import apply, join

    iterators = [chunks_of(g) for g in generators]
    try:
        for pieces in zip(*iterators):
            yield pieces[0] if len(pieces) == 1 else apply(join, list(pieces), axis=axis)
    finally:
        for it in iterators:
            close = getattr(it, "close", None)
            if close is not None:
                close()


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
