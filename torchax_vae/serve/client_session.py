"""The generator's side of a live session (serve/live.py has the protocol): a decode (or encode) fed chunk by
chunk over one WebSocket, the causal state kept on the server's device between chunks.

    from torchax_vae.serve.client import session
    with session("http://127.0.0.1:8000", "wan") as s:
        frames = s.decode(latent_chunk)   # uint8 [B, f, H, W, C], this chunk's final frames
        last = s.finish()                 # what the video's end completes

numpy and `websockets`' synchronous client (installed with the service; no torch needed).
"""

import json
import struct
import urllib.parse

import numpy as np

__all__ = ["LiveSession", "SessionError", "session"]

_DTYPES = {"float32": np.float32, "uint8": np.uint8}


class SessionError(RuntimeError):
    """The server refused the session or a chunk (`status`: 400 for a chunk it cannot take, which leaves the session
    usable), or closed the session (`code`: the WebSocket close code)."""

    def __init__(self, message: str, status: int | None = None, code: int | None = None):
        super().__init__(message)
        self.status, self.code = status, code


def array_of(tensor, what: str) -> tuple[np.ndarray, str]:
    """A float32 or float16 torch tensor or numpy array as a contiguous numpy array and its wire dtype name."""
    array = np.ascontiguousarray(tensor.detach().cpu().numpy() if hasattr(tensor, "detach") else tensor)
    dtype = {np.dtype("<f4"): "float32", np.dtype("<f2"): "float16"}.get(array.dtype.newbyteorder("<"))
    if dtype is None:
        raise TypeError(f"{what} must be float32 or float16, got {array.dtype}")
    return array, dtype


def session(url: str, model: str, *, kind: str = "decode", output: str = "uint8", token: str | None = None,
            timeout: float = 600) -> "LiveSession":
    """A live session with model `model` of the service at `url` (http://HOST:PORT or ws://...): `kind` "decode"
    (latents in, frames out: `output` "uint8" [B, f, H, W, C] or "float32" [B, C, f, H, W]) or "encode" (frames in
    [-1, 1] out, latents out: `output` "float32"). Use it in a `with` block, or call `close()`."""
    from websockets.sync.client import connect  # (on use: importing the client needs only numpy)

    parts = urllib.parse.urlsplit(url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    query = urllib.parse.urlencode({"kind": kind, "output": output})
    address = urllib.parse.urlunsplit((scheme, parts.netloc, f"{parts.path.rstrip('/')}/session/{model}", query, ""))
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    # (entered as a context manager would be, so that websockets >= 17.1 knows the connection is closed by us: the
    # session's own `with` block or `close()` closes it)
    connection = connect(address, additional_headers=headers, max_size=None, open_timeout=timeout).__enter__()
    try:
        opened = _message(connection, timeout)
        if not isinstance(opened, dict) or "session" not in opened:
            raise SessionError(f"the server refused the session: {_said(opened)}", code=_code(connection))
    except BaseException:
        connection.close()
        raise
    return LiveSession(connection, opened, timeout)


class LiveSession:
    """One live session (`session()`): `decode(chunk)` or `encode(chunk)`, then `finish()`."""

    def __init__(self, connection, opened: dict, timeout: float):
        self._connection, self.id, self.kind, self._timeout = connection, opened["session"], opened["kind"], timeout
        self.frames = 0  # frames (latent frames for an encode) received so far

    def decode(self, latents) -> np.ndarray:
        """This latent chunk's final frames (a float32 or float16 array or tensor [B, C, f, h, w])."""
        return self._chunk(latents)

    def encode(self, frames) -> np.ndarray:
        """The latents (the posterior's mode, float32) of the latent frames this video chunk completes."""
        return self._chunk(frames)

    def finish(self) -> np.ndarray:
        """What the video's end completes (MiniMax H3's last clip; empty for the others); then the session ends."""
        self._send(json.dumps({"finish": True}))
        out = self._answer()
        end = _message(self._connection, self._timeout)
        if not (isinstance(end, dict) and end.get("end")):
            raise SessionError(f"the session did not end as it should: {_said(end)}")
        self.close()
        return out

    def close(self) -> None:
        from websockets.exceptions import ConnectionClosed  # (as in `session`)

        try:
            self._connection.close()
        except ConnectionClosed:  # (the server closed it first: its reason was the last answer's)
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _chunk(self, tensor) -> np.ndarray:
        array, dtype = array_of(tensor, "a session chunk")
        header = json.dumps({"shape": list(array.shape), "dtype": dtype}).encode()
        self._send(struct.pack("<I", len(header)) + header + array.tobytes())
        return self._answer()

    def _send(self, message) -> None:
        """Sends, or raises SessionError with the server's reason where it has closed the session."""
        from websockets.exceptions import ConnectionClosed  # (as in `session`)

        try:
            self._connection.send(message)
        except ConnectionClosed as e:
            rcvd = e.rcvd
            raise SessionError(rcvd.reason if rcvd is not None else "the connection closed",
                               code=rcvd.code if rcvd is not None else None) from None

    def _answer(self) -> np.ndarray:
        message = _message(self._connection, self._timeout)
        if not isinstance(message, bytes):
            raise SessionError(_said(message), status=message.get("status") if isinstance(message, dict) else None,
                               code=_code(self._connection))
        (size,) = struct.unpack_from("<I", message)
        header = json.loads(message[4:4 + size])
        out = np.frombuffer(message[4 + size:], _DTYPES[header["dtype"]]).reshape(header["shape"])
        self.frames += out.shape[1 if out.dtype == np.uint8 else 2]
        return out


def _message(connection, timeout: float):
    """The next message: bytes as they are, text as JSON; None once the server has closed."""
    from websockets.exceptions import ConnectionClosed  # (as in `session`)

    try:
        message = connection.recv(timeout=timeout)
    except ConnectionClosed as e:
        rcvd = e.rcvd
        return {"error": rcvd.reason if rcvd is not None else "the connection closed", "code": rcvd and rcvd.code}
    return message if isinstance(message, bytes) else json.loads(message)


def _said(message) -> str:
    return message.get("error", json.dumps(message)) if isinstance(message, dict) else repr(message)


def _code(connection):
    rcvd = getattr(connection, "close_rcvd", None) or getattr(getattr(connection, "protocol", None), "close_rcvd", None)
    return rcvd.code if rcvd is not None else None
