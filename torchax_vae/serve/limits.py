"""The service's limits (`create_app`'s `limits`, the command's `serve` options): plain data, loaded without starlette
so that `torchax-vae serve` checks its arguments first."""

import dataclasses

__all__ = ["DEFAULT_MAX_PIXELS", "Limits"]

# A 10 s 720p video at 24 fps (241 frames of 1280x720 is 2.2e8 pixels), with room to spare.
DEFAULT_MAX_PIXELS = 300_000_000


@dataclasses.dataclass(frozen=True)
class Limits:
    max_batch: int | None = None  # requests (batch rows) per device call; None: the backend's (backends.py)
    max_queue: int = 64  # requests waiting for the device; more are answered 429
    max_wait_ms: float = 5.0  # how long a request waits for others of its shape to batch with
    max_body_mb: float = 512.0  # request bodies above this are answered 413
    timeout_s: float = 600.0  # a request not answered by then is dropped and answered 504
    max_active: int = 4  # batches the device worker advances in turn, a chunk each (1: one request at a time)
    max_inflight_mb: float | None = None  # request bodies held at once, all requests together; None: from the host
    max_pixels: int = DEFAULT_MAX_PIXELS  # output (decode) or input (encode) pixels x frames of one request
    max_sessions: int = 16  # live sessions open at once (WebSocket /session/NAME); more are refused
    session_idle_s: float = 30.0  # a live session with no message for this long is closed
    session_batch: int = 8  # live sessions' rows per device call (their steps batched: serve/live_sessions.py)
