"""Request bodies under one memory budget, read against a deadline (issue 55: clients that would push the
server over).

Every body is sized before a byte of it is read: a tensor's by its `shape` and `dtype` query parameters (a
Content-Length that disagrees is refused at once), an image's by its Content-Length, and a body with neither
(chunked) by the largest body allowed. That size is taken from `BodyBudget`, the bytes of all bodies held at
once across the server; a request that would pass it is answered 503 with Retry-After before it is read, and
its bytes are given back when its answer is done. The body is read into one buffer of that size, anonymous
memory whose pages the host commits as bytes arrive (a body that declared 300 MB and sent 1 MB holds 1 MB), and
the tensor is a view of it: no second copy.

A body's deadline follows its progress (`too_slow`): it is answered 408, its connection closed and its memory
released, once nothing has come for `IDLE_SECONDS`, or once it falls behind `MIN_RATE` by more than `GRACE_SECONDS`
(by t seconds in, at least MIN_RATE x (t - GRACE_SECONDS) bytes must have come). A stalled large body so holds
its budget for about GRACE_SECONDS plus what it sent at MIN_RATE, not for its declared size at that rate.
"""

import asyncio
import math
import mmap
import threading
import time

from starlette.requests import ClientDisconnect, Request

from torchax_vae.media.checks import shown
from torchax_vae.serve.protocol import TENSOR_DTYPES, RequestError, shape_of

__all__ = ["BodyBudget", "read_body", "too_slow"]

MIN_RATE = 1 << 20  # bytes per second a body must arrive at, on average, at least
GRACE_SECONDS = 10.0  # how far behind that rate a body may fall (a small body's whole deadline)
IDLE_SECONDS = 10.0  # the longest a body may send nothing
RETRY_AFTER = "1"  # seconds, in a 503 for a full budget


class BodyBudget:
    """Bytes of request bodies held at once, across every request of the server."""

    def __init__(self, limit: int):
        self.limit, self.held = limit, 0
        self._lock = threading.Lock()

    def take(self, size: int) -> bool:
        with self._lock:
            if self.held + size > self.limit:
                return False
            self.held += size
            return True

    def give(self, size: int) -> None:
        with self._lock:
            self.held -= size


def too_slow(started: float, last: float, got: int) -> float:
    """When (time.monotonic()) a body that started at `started`, whose last bytes came at `last` and `got` bytes in
    all, is too slow unless more comes: nothing for IDLE_SECONDS, or behind MIN_RATE by more than GRACE_SECONDS."""
    return min(last + IDLE_SECONDS, started + GRACE_SECONDS + got / MIN_RATE)


def _declared(request: Request) -> int | None:
    length = request.headers.get("content-length")
    if length is None:
        return None
    if not length.isdigit():
        raise RequestError(400, f"Content-Length must be a number of bytes, got {shown(length)}")
    return int(length)


# The query parameters whose tensors the body holds, in its order
TENSOR_KEYS = ("shape", "audio_shape", "image_shape", "mask_shape")


def _tensor_bytes(params) -> int | None:
    """A tensor body's size from its shape (and audio_shape: serve/sounds.py; image_shape and mask_shape:
    serve/conditions.py) and dtype parameters (None: the body is an image)."""
    keys = [key for key in TENSOR_KEYS if params.get(key) is not None]
    if not keys:
        return None
    name = params.get("dtype")
    if name not in TENSOR_DTYPES:
        raise RequestError(400, f"dtype must be one of {sorted(TENSOR_DTYPES)}, got {shown(name)}")
    return sum(math.prod(shape_of(params, key)) for key in keys) * TENSOR_DTYPES[name].itemsize


def body_size(request: Request, limit: int) -> int:
    """The bytes to set aside for the body, known before reading it; 413 above `limit`, 400 where the
    Content-Length disagrees with the tensor's shape and dtype."""
    declared, needed = _declared(request), _tensor_bytes(request.query_params)
    size = needed if needed is not None else declared
    if size is not None and size > limit:
        raise RequestError(413, f"the body is {size} bytes, larger than this server's limit of {limit / 2**20:g} MB "
                                "(--max-body-mb)", reason="too_large")
    if needed is not None and declared is not None and declared != needed:
        params = request.query_params
        shapes = " and ".join(f"{key} {list(shape_of(params, key))}" for key in TENSOR_KEYS
                              if params.get(key) is not None)
        raise RequestError(400, f"Content-Length is {declared} bytes; {shapes} of {params.get('dtype')} needs {needed}")
    return limit if size is None else size


async def read_body(request: Request, size: int, exact: bool):
    """The body, read into one buffer of `size` bytes whose memory is committed as bytes arrive (a view trimmed to
    what came when not `exact`: a chunked or image body); 408 when it is too slow (`too_slow`), 400/413 when it is
    longer or shorter."""
    buffer = mmap.mmap(-1, size) if size else bytearray()  # (anonymous: pages are zero and untouched until written)
    view, got = memoryview(buffer), 0
    started = last = time.monotonic()
    chunks = request.stream().__aiter__()
    try:
        while True:
            try:
                chunk = await asyncio.wait_for(anext(chunks), max(0.0, too_slow(started, last, got) - time.monotonic()))
            except StopAsyncIteration:
                break
            last = time.monotonic()
            if got + len(chunk) > size:
                status = 400 if exact else 413
                raise RequestError(status, f"the body is longer than the {size} bytes it was sized at"
                                           f"{' (shape and dtype)' if exact else ' (--max-body-mb)'}",
                                   reason="bad_request" if exact else "too_large")
            view[got:got + len(chunk)] = chunk
            got += len(chunk)
    except TimeoutError:
        raise RequestError(408, f"the body came too slowly ({got} of {size} bytes in {time.monotonic() - started:.3g} "
                                f"s): a body must send something every {IDLE_SECONDS:g} s and arrive at "
                                f"{MIN_RATE >> 20} MB/s on average, after {GRACE_SECONDS:g} s of grace",
                           {"Connection": "close"}, reason="slow_body") from None
    except ClientDisconnect:  # it went away mid-body: nothing to answer
        raise RequestError(499, "the client went away", reason="client_gone") from None
    finally:
        view.release()
    if exact and got != size:
        raise RequestError(400, f"the body holds {got} bytes; its shape and dtype need {size}")
    return memoryview(buffer)[:got] if got < size else buffer
