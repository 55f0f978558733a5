"""Streamed decode answers: a fragmented MP4 (`output_type=mp4`) and raw uint8 frames (`output_type=frames`), sent
as the device worker finishes each chunk of final frames, with chunked transfer.

The frames framing (docs/guide/serve.md; `torchax_vae.serve.client.stream_frames` reads it): a sequence of records, each
a 4-byte little-endian length N, N bytes of a UTF-8 JSON header, then the header's payload:
- `{"shape": [B, f, H, W, C], "dtype": "uint8"}`: f more frames of each of the B videos, channels last, C-order;
- `{"end": true, "frames": F}`: the last record (F frames per video in all); a stream without it was cut short;
- `{"error": "..."}`: the decode failed mid-way; nothing follows.

A reader that falls behind holds up only its own batch (the worker takes a chunk for it once fewer than
`AHEAD` wait); one that goes away stops its batch at the next chunk.
"""

import asyncio
import contextlib
import json
import logging
import os
import struct
import subprocess

import numpy as np

from torchax_vae.media import files, pixels
from torchax_vae.serve.outputs import _channels_last, _uint8
from torchax_vae.serve.protocol import RequestError
from torchax_vae.serve.worker import Job

log = logging.getLogger("torchax_vae.serve")

AHEAD = 2  # chunks decoded ahead of what the reader (ffmpeg, or the client) has taken
MEDIA_FRAMES = "application/x-torchax-vae-frames"


class ChunkFeed:
    """The worker-to-handler hand-over of one streamed job: `on_chunk`/`deliver` (worker thread) and `next`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, wake, family=None):
        self.loop, self.wake, self.family = loop, wake, family  # family: whose pixels the chunks are
        self.queue: asyncio.Queue = asyncio.Queue()
        self.waiting = 0  # chunks handed over and not yet taken

    def on_chunk(self, piece) -> None:
        self.waiting += 1
        self._put(("chunk", piece))

    def deliver(self, result, error) -> None:
        self._put(("end", error))

    def ready(self) -> bool:
        return self.waiting < AHEAD

    def _put(self, item) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody reads
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)

    async def next(self):
        """("chunk", frames uint8 [B, f, H, W, C]) or ("end", error or None)."""
        kind, value = await self.queue.get()
        if kind == "chunk":
            self.waiting -= 1
            self.wake()
            value = await asyncio.to_thread(frames_of, value, self.family)
        return kind, value


def frames_of(piece, family=None) -> np.ndarray:
    """A decoded piece [B, C, f, H, W] (the family's pixels: torchax_vae/media/pixels.py) as uint8 frames [B, f, H, W, C],
    as diffusers' processors round."""
    return _uint8(_channels_last(pixels.to_unit(piece, family, 1).clamp(0, 1))).numpy()


def record(header: dict, payload: bytes = b"") -> bytes:
    """A record of the frames framing (and of a live session's messages, serve/live.py): a little-endian uint32 n,
    n bytes of JSON, the payload."""
    data = json.dumps(header).encode()
    return struct.pack("<I", len(data)) + data + payload


async def frames_body(feed: ChunkFeed, first):
    """The frames framing's records, from the first item on."""
    kind, value, total = *first, 0
    while kind == "chunk":
        total += value.shape[1]
        yield record({"shape": list(value.shape), "dtype": "uint8"}, np.ascontiguousarray(value).tobytes())
        kind, value = await feed.next()
    if value is not None:
        log.warning("a streamed decode failed mid-way: %s", value)
        yield record({"error": f"the decode failed mid-way: {type(value).__name__}: {value}"})
        return
    yield record({"end": True, "frames": total})


async def mp4_body(feed: ChunkFeed, first, fps: float, audio=None):
    """A fragmented MP4 (H.264, CRF 12, as `torchax-vae decode` writes), ffmpeg's output sent as it comes; audio: a
    WAV file of its sound (AAC in the MP4), which the caller removes.

    Playable as it arrives: each fragment starts with a keyframe and ends at a chunk boundary once it holds at least
    `files.MIN_FRAGMENT_FRAMES` frames (`files.fragment_starts`: the first chunk's frames and the next one's give
    the boundaries), and goes out when the next fragment's first frame is encoded, or at the end."""
    kind, value = first
    height, width = value.shape[2:4]
    pad_h, pad_w = height % 2, width % 2
    second = await feed.next() if kind == "chunk" else None  # (the boundaries' step: the second chunk's frames)
    step = second[1].shape[1] if second is not None and second[0] == "chunk" else 0
    keyframes = files.fragment_starts(value.shape[1], step)
    command = files.mp4_command("pipe:1", height + pad_h, width + pad_w, fps, fragmented=True, audio=audio,
                                keyframes=keyframes)
    # close_fds=False lets Python spawn it (posix_spawn) rather than fork a process holding JAX's threads, which
    # JAX warns of (uvloop's own subprocesses fork); Python's descriptors are not inherited either way (PEP 446).
    # Its pipes are worked from threads, whatever the event loop.
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            close_fds=False)

    async def feed_ffmpeg(kind, value):
        held = second
        try:
            while kind == "chunk":
                frames = value[0]  # one video (checked at the boundary)
                if pad_h or pad_w:
                    frames = np.pad(frames, ((0, 0), (0, pad_h), (0, pad_w), (0, 0)), mode="edge")
                await asyncio.to_thread(proc.stdin.write, np.ascontiguousarray(frames).tobytes())
                await asyncio.to_thread(proc.stdin.flush)
                (kind, value), held = (held if held is not None else await feed.next()), None
            if value is not None:
                raise value
        finally:
            with contextlib.suppress(OSError):
                await asyncio.to_thread(proc.stdin.close)

    writer = asyncio.ensure_future(feed_ffmpeg(kind, value))
    try:
        while data := await asyncio.to_thread(proc.stdout.read1, 1 << 16):
            yield data
        await writer
        if await asyncio.to_thread(proc.wait) != 0:
            log.warning("ffmpeg failed while streaming an MP4 (exit status %s)", proc.returncode)
    except Exception as e:  # the decode failed mid-way: the MP4 ends here (the status was sent already)
        log.warning("a streamed MP4 ended early: %s", e)
    finally:
        writer.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()


async def answer(request, service, name: str, parsed, deadline: float, done, audio=None):
    """The streamed answer of a decode job: a JSON error if it fails before its first chunk, else a streaming
    response whose body ends the job's accounting (`done(status)`) when it ends, however it ends. audio: a
    temporary WAV of an MP4's sound (serve/sounds.py), removed when the answer ends, however it ends."""
    try:
        return await _answer(request, service, name, parsed, deadline, done, audio)
    except BaseException:
        _remove(audio)
        raise


def _remove(path) -> None:
    if path is not None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


async def _answer(request, service, name: str, parsed, deadline: float, done, audio):
    from starlette.responses import StreamingResponse

    feed = ChunkFeed(asyncio.get_running_loop(), service.worker.wake, service.models[name]._family)
    job = Job(name, parsed, feed.deliver, deadline, on_chunk=feed.on_chunk, ready=feed.ready)
    service.worker.submit(job)
    try:
        first = await asyncio.wait_for(feed.next(), max(0.0, deadline - _now()))
    except asyncio.TimeoutError:
        job.cancelled = True
        service.worker.wake()
        raise RequestError(504, "no first chunk within the request's timeout; the request was dropped",
                           reason="timeout") from None
    except BaseException:
        job.cancelled = True
        service.worker.wake()
        raise
    if first[0] == "end" and first[1] is not None:
        raise first[1]
    output = parsed.output
    inner = mp4_body(feed, first, output.fps, audio) if output.kind == "mp4" else frames_body(feed, first)

    async def body():
        status = 200
        try:
            async for data in inner:
                yield data
        except BaseException:
            status = 499  # the client went away mid-stream
            raise
        finally:
            job.cancelled = True  # a no-op once the job has ended; else its batch stops at the next chunk
            service.worker.wake()
            _remove(audio)
            done(status)

    media = "video/mp4" if output.kind == "mp4" else MEDIA_FRAMES
    return StreamingResponse(body(), media_type=media)


def _now() -> float:
    import time

    return time.monotonic()
