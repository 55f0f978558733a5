"""Live sessions over the network: `WebSocket /session/{name}`, a decode (or encode) fed chunk by chunk, its causal
state kept on the device between chunks (serve/live_sessions.py steps the sessions of every connection together).

    ws://HOST/session/wan?kind=decode&output=uint8      (kind: decode | encode; output: uint8 | float32)

The server's first message is JSON text: `{"session": ID, "model": NAME, "kind": ..., "output": ...}`, or an
`{"error": ...}` and a close when the session cannot open. Then, per chunk, the client sends one binary message, a
record: a little-endian uint32 n, n bytes of JSON `{"shape": [B, C, f, h, w], "dtype": "float32"}` (or "float16",
"bfloat16"), then the tensor's little-endian C-order bytes (the latents as `decode` takes them, the pipeline's
normalization undone; an encode's frames in [-1, 1]). The answer is a record of the same form: the chunk's final
frames (uint8 [B, f, H, W, C] as diffusers' processors round, or the decoder's float32 [B, C, f, H, W]), or an
encode's latents (float32, the posterior's mode). The text `{"finish": true}` ends the video: the answer is its last
frames (MiniMax H3's last clip; none for the others), then `{"end": true, "frames": N}` and a normal close.

Errors: a chunk the session cannot take (another shape, channel count or dtype than the first, a chunking the family
cannot keep exact, NaN values) is answered `{"error": ..., "status": 400}`, and the session stays usable. Closes:
1008 without the token (before the handshake completes), 4404 an unknown model, 4400 a family without causal state
(the message names those with one), 1013 too many sessions open, 4408 no message for `session_idle_s`, 1001 the
server is shutting down. A connection that drops frees its session's state at the worker's next turn.
"""

import asyncio
import contextlib
import json
import math
import struct
import time

import numpy as np
from starlette.websockets import WebSocket, WebSocketDisconnect

from torchax_vae.facade.session import families_with_state
from torchax_vae.serve import protocol
from torchax_vae.serve.protocol import RequestError
from torchax_vae.serve.streams import frames_of, record

__all__ = ["session_endpoint"]

OUTPUTS = ("uint8", "float32")
HEADER_BYTES = 4096  # a chunk's JSON header is a few dozen bytes


def parse_record(message: bytes) -> tuple[dict, memoryview]:
    """(header, payload) of a chunk record; 400 for a malformed one."""
    if len(message) < 4:
        raise RequestError(400, "a chunk is a record: uint32 n, n bytes of JSON, the tensor's bytes")
    (size,) = struct.unpack_from("<I", message)
    if size > HEADER_BYTES or 4 + size > len(message):
        raise RequestError(400, f"a chunk's header of {size} bytes does not fit its message of {len(message)}")
    try:
        header = json.loads(bytes(message[4:4 + size]))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise RequestError(400, "a chunk's header is not JSON") from None
    if not isinstance(header, dict):
        raise RequestError(400, "a chunk's header is a JSON object: {\"shape\": [...], \"dtype\": ...}")
    return header, memoryview(message)[4 + size:]


def chunk_of(header: dict, payload, max_pixels: int, vae, kind: str):
    """The chunk a record carries, as a float32 tensor, checked against the wire format and the pixel cap."""
    shape = header.get("shape")
    if not isinstance(shape, list) or len(shape) != 5 or not all(isinstance(d, int) and d > 0 for d in shape):
        raise RequestError(400, f"a session chunk's shape is 5 positive integers [B, C, f, h, w], got "
                                f"{json.dumps(shape)[:80]}")
    dtype = protocol.TENSOR_DTYPES.get(header.get("dtype"))
    if dtype is None:
        raise RequestError(400, f"dtype must be one of {sorted(protocol.TENSOR_DTYPES)}, got "
                                f"{json.dumps(header.get('dtype'))[:40]}")
    expected = math.prod(shape) * dtype.itemsize
    if len(payload) != expected:
        raise RequestError(400, f"the chunk holds {len(payload)} bytes; shape {shape} of {header['dtype']} needs "
                                f"{expected}")
    protocol.check_chunk_pixels(vae, kind, tuple(shape), max_pixels)
    return protocol.tensor_of(bytearray(payload), tuple(shape), dtype)


async def session_endpoint(websocket: WebSocket) -> None:
    service = websocket.app.state.service
    name = websocket.path_params["name"]
    if not service.authorized(websocket):
        await websocket.close(code=1008, reason="a token is required (Authorization: Bearer)")
        return
    await websocket.accept()
    refusal = _refusal(service, name, websocket.query_params)
    if refusal is not None:
        await _close(websocket, *refusal)
        return
    kind, output = websocket.query_params.get("kind", "decode"), websocket.query_params.get("output", "uint8")
    try:
        live = service.worker.sessions.open(name, kind)
    except RequestError as e:
        service.metrics.rejected.labels("sessions_full").inc()
        await _close(websocket, 1013, str(e))
        return
    service.metrics.sessions_open.inc()
    how = "disconnect"
    try:
        await websocket.send_json({"session": live.id, "model": name, "kind": kind, "output": output})
        how = await _serve(websocket, service, live, output)
    except (WebSocketDisconnect, OSError):  # the client went away mid-chunk (its answer had no reader)
        how = "disconnect"
    finally:
        service.worker.sessions.close(live)  # the worker frees the state at its next turn
        service.metrics.sessions_open.dec()
        service.metrics.sessions_closed.labels(how).inc()


def _refusal(service, name: str, params) -> tuple[int, str] | None:
    """(close code, message) for a session that cannot open, before anything is taken."""
    if service.draining:
        return 1001, "the server is shutting down"
    if not service.ready.is_set():
        return 1013, service.load_error or "the models are loading; retry later"
    vae = service.models.get(name)
    if vae is None:
        return 4404, f"no model {json.dumps(name)[:60]}; this server has {', '.join(service.models)}"
    kind, output = params.get("kind", "decode"), params.get("output", "uint8")
    if kind not in ("decode", "encode"):
        return 4400, f"kind must be decode or encode, got {json.dumps(kind)[:40]}"
    if output not in OUTPUTS or (kind == "encode" and output != "float32"):
        return 4400, (f"output must be one of {', '.join(OUTPUTS)} for a decode, float32 for an encode; got "
                      f"{json.dumps(output)[:40]}")
    if not vae._family.carries_state:
        return 4400, (f"{vae.model_class.__name__} carries no causal state between chunks, so it has no session; "
                      f"sessions are for {families_with_state()} (POST /{kind}/{name} for whole videos)")
    return None


async def _serve(websocket: WebSocket, service, live, output: str) -> str:
    """The session's chunks, one at a time, until the video's end, a drop, or the idle timeout; how it ended."""
    vae, frames = service.models[live.model], 0
    while True:
        try:
            message = await asyncio.wait_for(websocket.receive(), timeout=service.limits.session_idle_s)
        except asyncio.TimeoutError:
            await _close(websocket, 4408, f"no message for {service.limits.session_idle_s:g} s: the session is closed")
            return "timeout"
        if message["type"] == "websocket.disconnect":
            return "disconnect"
        if service.draining:
            await _close(websocket, 1001, "the server is shutting down")
            return "shutting_down"
        text, data = message.get("text"), message.get("bytes")
        finishing = text is not None
        try:
            if finishing:
                if _json(text) != {"finish": True}:
                    raise RequestError(400, 'a text message ends the video: {"finish": true}; chunks are binary records')
                chunk = None
            else:
                chunk = chunk_of(*parse_record(data), service.limits.max_pixels, vae, live.kind)
                await asyncio.to_thread(_check, vae, live, chunk)
        except RequestError as e:
            await websocket.send_json({"error": str(e), "status": e.status})
            continue
        start = time.monotonic()
        out, error = await _device(service, live, chunk, finishing)
        if error is not None:
            await websocket.send_json({"error": f"{type(error).__name__}: {error}", "status": 400 if isinstance(error, ValueError) else 500})
            if finishing:
                await _close(websocket, 1011, "the session's end failed")
                return "error"
            continue
        answer = await asyncio.to_thread(_answer, out, output, live.kind, vae)
        frames += out.shape[2]
        service.metrics.total.labels("session", live.model).observe(time.monotonic() - start)
        await websocket.send_bytes(answer)
        if finishing:
            await websocket.send_json({"end": True, "frames": frames})
            await websocket.close(code=1000)
            return "finished"


def _check(vae, live, chunk) -> None:
    """The in-process session's own checks (its first chunk's shape, the family's chunkings), as a 400; a session
    not yet made on the device is checked as a fresh one."""
    session = live.session or (vae.decode_session() if live.kind == "decode" else vae.encode_session())
    try:
        session.check(chunk)
    except (ValueError, RuntimeError) as e:
        raise RequestError(400, str(e)) from None


async def _device(service, live, chunk, finishing: bool):
    """(output, error) of the chunk's turn on the device worker."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def deliver(out, error):
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
            loop.call_soon_threadsafe(lambda: future.done() or future.set_result((out, error)))

    service.worker.sessions.submit(live, chunk, deliver, finishing)
    return await future


def _answer(out, output: str, kind: str, vae) -> bytes:
    if kind == "decode" and output == "uint8":
        values = np.ascontiguousarray(frames_of(out, vae._family))
        return record({"shape": list(values.shape), "dtype": "uint8"}, values.tobytes())
    values = np.ascontiguousarray(out.float().numpy())
    return record({"shape": list(values.shape), "dtype": "float32"}, values.tobytes())


def _json(text: str):
    with contextlib.suppress(json.JSONDecodeError):
        return json.loads(text)
    return None


async def _close(websocket: WebSocket, code: int, message: str) -> None:
    with contextlib.suppress(Exception):  # (the client may be gone already)
        await websocket.send_json({"error": message, "code": code})
        await websocket.close(code=code, reason=message.encode()[:120].decode(errors="ignore"))
