"""A small client for the service's streamed frames (`output_type=frames`, serve/streams.py has the framing).

    from torchax_vae.serve.client import stream_frames
    for frames in stream_frames("http://127.0.0.1:8000/decode/wan", latents):
        ...  # uint8 [B, f, H, W, C], as each chunk of final frames arrives

Standard library only (urllib), so it runs where the latents are made, beside any torch or none.
"""

import json
import struct
import urllib.error
import urllib.parse
import urllib.request

import numpy as np

__all__ = ["stream_frames", "StreamError"]



class StreamError(RuntimeError):
    """The server refused the request, or the stream failed or was cut short."""


def stream_frames(endpoint: str, latents, *, token: str | None = None, timeout: float = 600, **params):
    """Yields the decoded frames of `latents` (a float32 or float16 torch tensor or numpy array, as the pipeline
    hands them to `remote_decode`) chunk by chunk: uint8 arrays [B, f, H, W, C].

    params: the service's other query parameters (`do_scaling`, `scaling_factor`, `height`, `width`, ...), as
    diffusers' `remote_decode` sends them. Raises StreamError with the server's message on a refusal, an
    error mid-way, or a stream cut short.
    """
    array = np.ascontiguousarray(latents.detach().cpu().numpy() if hasattr(latents, "detach") else latents)
    dtype = {np.dtype("<f4"): "float32", np.dtype("<f2"): "float16"}.get(array.dtype.newbyteorder("<"))
    if dtype is None:
        raise TypeError(f"latents must be float32 or float16, got {array.dtype}")
    query = [("shape", n) for n in array.shape] + [("dtype", dtype), ("output_type", "frames")]
    query += [(k, "true" if v is True else "false" if v is False else v) for k, v in params.items() if v is not None]
    request = urllib.request.Request(f"{endpoint}?{urllib.parse.urlencode(query)}", data=array.tobytes(),
                                     method="POST", headers={"Content-Type": "tensor/binary"})
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as e:
        try:
            message = json.loads(e.read()).get("error", e.reason)
        except ValueError:
            message = e.reason
        raise StreamError(f"{e.code}: {message}") from None
    with response:
        while True:
            size = _exactly(response, 4)
            if size is None:
                raise StreamError("the stream was cut short (no end record)")
            header = json.loads(_exactly(response, struct.unpack("<I", size)[0]) or b"{}")
            if "error" in header:
                raise StreamError(header["error"])
            if header.get("end"):
                return
            shape = header["shape"]
            data = _exactly(response, int(np.prod(shape)))
            if data is None:
                raise StreamError("the stream was cut short mid-chunk")
            yield np.frombuffer(data, np.uint8).reshape(shape)


def _exactly(response, count: int) -> bytes | None:
    """`count` bytes, or None at the end of the stream."""
    parts, left = [], count
    while left:
        part = response.read(left)
        if not part:
            return None
        parts.append(part)
        left -= len(part)
    return b"".join(parts)
