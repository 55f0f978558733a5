"""A small client for the service's streamed frames (`output_type=frames`, serve/streams.py has the framing), for
its decodes with sound (serve/sounds.py) and its conditioned decodes (serve/conditions.py), which diffusers'
`remote_decode` cannot send.

    from torchax_vae.serve.client import decode_with_sound, stream_frames
    for frames in stream_frames("http://127.0.0.1:8000/decode/wan", latents):
        ...  # uint8 [B, f, H, W, C], as each chunk of final frames arrives
    mp4 = decode_with_sound("http://127.0.0.1:8000/decode/ltx2", video, audio)  # LTX-2's (video, audio) latents
    images = decode_with_condition("http://127.0.0.1:8000/decode/sd-inpaint", latents, image, mask)  # [B, 3, H, W]

    with session("http://127.0.0.1:8000", "wan") as s:   # a live session (serve/client_session.py)
        frames = s.decode(latent_chunk)

urllib and numpy only (no HTTP library, no torch needed), so it runs where the latents are made, beside any torch
or none; a live session also uses `websockets`' client (installed with the service).
"""

import json
import struct
import urllib.error
import urllib.parse
import urllib.request

import numpy as np

from torchax_vae.serve.client_session import LiveSession, SessionError, array_of as _array, session

__all__ = ["decode_with_condition", "decode_with_sound", "LiveSession", "session", "SessionError", "stream_frames",
           "StreamError"]


class StreamError(RuntimeError):
    """The server refused the request, or the stream failed or was cut short."""


def _query(params) -> list:
    return [(k, "true" if v is True else "false" if v is False else v) for k, v in params.items() if v is not None]


def _open(endpoint: str, query: list, body: bytes, token: str | None, timeout: float):
    request = urllib.request.Request(f"{endpoint}?{urllib.parse.urlencode(query)}", data=body, method="POST",
                                     headers={"Content-Type": "tensor/binary"})
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        return urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as e:
        try:
            message = json.loads(e.read()).get("error", e.reason)
        except ValueError:
            message = e.reason
        raise StreamError(f"{e.code}: {message}") from None


def decode_with_sound(endpoint: str, latents=None, audio=None, *, output_type: str | None = None,
                      token: str | None = None, timeout: float = 600, **params) -> bytes:
    """An MP4 with sound from a video's latents and its audio latents (LTX2Pipeline's `output_type="latent"`
    pair), or a WAV of the audio latents alone (`latents` None), as the service answers them (docs/guide/serve.md).

    output_type: "mp4" (with both; the default) or, for the audio alone, "wav" (the default) or "pt" (the
    waveform's raw float bytes). params: the service's other query parameters (`fps`, ...). Raises StreamError
    with the server's message on a refusal.
    """
    if audio is None:
        raise TypeError("decode_with_sound needs the audio latents (audio=)")
    sound, dtype = _array(audio, "audio latents")
    query = [("audio_shape", n) for n in sound.shape] + [("dtype", dtype)]
    body = sound.tobytes()
    if latents is not None:
        video, video_dtype = _array(latents, "latents")
        if video_dtype != dtype:
            raise TypeError(f"latents and audio latents must share a dtype, got {video_dtype} and {dtype}")
        query += [("shape", n) for n in video.shape]
        body = video.tobytes() + body
    query.append(("output_type", output_type or ("mp4" if latents is not None else "wav")))
    with _open(endpoint, query + _query(params), body, token, timeout) as response:
        return response.read()


def decode_with_condition(endpoint: str, latents, image, mask, *, token: str | None = None, timeout: float = 600,
                          **params) -> np.ndarray:
    """The decoder's output [B, 3, H, W] (float32, the decoder's values) of latents conditioned on the image being
    inpainted and its mask, as SD inpainting's pipeline calls its AsymmetricAutoencoderKL: `image` [B, 3, H, W] in
    [-1, 1] and `mask` [B, 1, H, W] as its processors make them, at the decoded size (docs/guide/serve.md).

    params: the service's other query parameters (`do_scaling`, `scaling_factor`, ...), as `remote_decode` sends
    them. Raises StreamError with the server's message on a refusal.
    """
    arrays = [_array(t, what) for t, what in ((latents, "latents"), (image, "image"), (mask, "mask"))]
    dtypes = {dtype for _, dtype in arrays}
    if len(dtypes) != 1:
        raise TypeError(f"latents, image and mask must share a dtype, got {[dtype for _, dtype in arrays]}")
    (z, dtype), (picture, _), (holes, _) = arrays
    query = ([("shape", n) for n in z.shape] + [("image_shape", n) for n in picture.shape]
             + [("mask_shape", n) for n in holes.shape] + [("dtype", dtype), ("output_type", "pt")])
    with _open(endpoint, query + _query(params), z.tobytes() + picture.tobytes() + holes.tobytes(), token,
               timeout) as response:
        shape, answered, data = json.loads(response.headers["shape"]), response.headers["dtype"], response.read()
    if answered == "bfloat16":  # (a bf16 model's answer; numpy has no bfloat16: its bits are float32's upper half)
        return (np.frombuffer(data, np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)
    return np.frombuffer(data, {"float32": np.float32, "float16": np.float16}[answered]).reshape(shape)


def stream_frames(endpoint: str, latents, *, token: str | None = None, timeout: float = 600, **params):
    """Yields the decoded frames of `latents` (a float32 or float16 torch tensor or numpy array, as the pipeline
    hands them to `remote_decode`) chunk by chunk: uint8 arrays [B, f, H, W, C].

    params: the service's other query parameters (`do_scaling`, `scaling_factor`, `height`, `width`, ...), as
    diffusers' `remote_decode` sends them. Raises StreamError with the server's message on a refusal, an
    error mid-way, or a stream cut short.
    """
    array, dtype = _array(latents, "latents")
    query = [("shape", n) for n in array.shape] + [("dtype", dtype), ("output_type", "frames")] + _query(params)
    with _open(endpoint, query, array.tobytes(), token, timeout) as response:
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
