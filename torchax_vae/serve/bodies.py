"""Request bodies under one memory budget, read against a deadline (issue 55: clients that would push the
server over).

Every body is sized before a byte of it is read: a tensor's by its `shape` and `dtype` query parameters (a
Content-Length that disagrees is refused at once), an image's by its Content-Length, and a body with neither
(chunked) by the largest body allowed. That size is taken from `BodyBudget`, the bytes of all bodies held at
once across the server; a request that would pass it is answered 503 with Retry-After before it is read, and
its bytes are given back when its answer is done. The body is read into one buffer of that size (the tensor
is a view of it: no second copy). A body that does not arrive within `deadline(size)` (a minimum rate, and a
floor for small ones) is answered 408 and its connection closed.
"""

import asyncio
import math
import threading

from starlette.requests import ClientDisconnect, Request

from torchax_vae.media.checks import shown
from torchax_vae.serve.protocol import TENSOR_DTYPES, RequestError, shape_of

__all__ = ["BodyBudget", "read_body", "deadline"]

MIN_RATE = 1 << 20  # bytes per second a body must arrive at, at least
MIN_SECONDS = 10.0  # the deadline of a small body
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


def deadline(size: int) -> float:
    """Seconds a body of `size` bytes may take to arrive."""
    return max(MIN_SECONDS, size / MIN_RATE)


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


async def read_body(request: Request, size: int, exact: bool) -> bytearray:
    """The body, read into one buffer of `size` bytes (trimmed to what came when not `exact`: a chunked or
    image body); 408 when it does not arrive by `deadline(size)`, 400/413 when it is longer or shorter."""
    buffer, got = bytearray(size), 0
    view = memoryview(buffer)
    try:
        async with asyncio.timeout(deadline(size)):
            async for chunk in request.stream():
                if got + len(chunk) > size:
                    status = 400 if exact else 413
                    raise RequestError(status, f"the body is longer than the {size} bytes it was sized at"
                                               f"{' (shape and dtype)' if exact else ' (--max-body-mb)'}",
                                       reason="bad_request" if exact else "too_large")
                view[got:got + len(chunk)] = chunk
                got += len(chunk)
    except TimeoutError:
        raise RequestError(408, f"the body did not arrive within {deadline(size):g} s ({got} of {size} bytes "
                                f"came; bodies must arrive at {MIN_RATE >> 20} MB/s at least)",
                           {"Connection": "close"}, reason="slow_body") from None
    except ClientDisconnect:  # it went away mid-body: nothing to answer
        raise RequestError(499, "the client went away", reason="client_gone") from None
    finally:
        view.release()
    if exact and got != size:
        raise RequestError(400, f"the body holds {got} bytes; its shape and dtype need {size}")
    if got < size:
        del buffer[got:]
    return buffer
