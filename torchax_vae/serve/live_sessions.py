"""The service's live sessions on the device worker: a table of open sessions, each with at most one chunk waiting,
stepped together.

A WebSocket handler (serve/live.py) opens a `Live` for its connection (refused past `max_sessions`, before any device
memory is taken: a session holds nothing on the device until its first chunk has run), hands the worker one chunk at
a time (`submit`) and waits for that chunk's output before it reads the next, so a client never has more than one
chunk on the server, and a reader slower than the decode makes the decode wait, not memory grow. The worker's
thread takes every waiting chunk at once (`take`) and steps them through `TorchaxVAE.decode_sessions` (or
`encode_sessions`): the sessions of one model whose chunks agree run as one batched program call, their causal
states stacked on the device (torchax_vae/facade/session_batch.py). A connection that ends marks its `Live` closed;
the worker frees its state at its next turn (the other sessions of its batch go on as they were).
"""

import dataclasses
import itertools
import threading
import time
from typing import Callable

import torch

from torchax_vae.serve.protocol import RequestError

__all__ = ["Live", "SessionTable", "step"]

_ids = itertools.count(1)


@dataclasses.dataclass(eq=False)
class Live:
    """One network session: its model, its in-process session (made on first use, on the worker's thread), and the
    chunk waiting for the device, if any."""

    model: str
    kind: str  # "decode" or "encode"
    id: int = dataclasses.field(default_factory=lambda: next(_ids))
    session: object = None  # the TorchaxVAE's DecodeSession or EncodeSession
    chunk: torch.Tensor | None = None
    deliver: Callable | None = None  # deliver(output, error), from the worker's thread
    submitted: float = 0.0
    finishing: bool = False  # the chunk is the video's end: `finish()`, then the session closes
    closed: bool = False  # the connection ended: the worker frees the state at its next turn


class SessionTable:
    """The open sessions (at most `max_sessions`) and their waiting chunks, shared by the app's handlers and the
    worker's thread under one lock."""

    def __init__(self, max_sessions: int, wake: Callable[[], None]):
        self.max_sessions, self._wake = max_sessions, wake
        self._lock = threading.Lock()
        self._open: dict[int, Live] = {}
        self._closing: list[Live] = []

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)

    def open(self, model: str, kind: str) -> Live:
        """A new session, or the refusal (503) when `max_sessions` are open."""
        with self._lock:
            if len(self._open) >= self.max_sessions:
                raise RequestError(503, f"this server holds {self.max_sessions} live sessions, all open; retry later "
                                        f"(--max-sessions)", reason="sessions_full")
            live = Live(model, kind)
            self._open[live.id] = live
            return live

    def submit(self, live: Live, chunk: torch.Tensor | None, deliver: Callable, finishing: bool = False) -> None:
        """The session's next chunk (None with `finishing`: the video ended), for the worker's next turn."""
        with self._lock:
            if live.closed or live.chunk is not None or live.finishing:
                raise RequestError(409, "this session has a chunk on the device already; send the next once its "
                                        "frames have come", reason="bad_request")
            live.chunk, live.deliver, live.finishing, live.submitted = chunk, deliver, finishing, time.monotonic()
        self._wake()

    def close(self, live: Live) -> None:
        """The connection ended: the worker frees the session's state at its next turn."""
        with self._lock:
            if self._open.pop(live.id, None) is not None:
                live.closed = True
                self._closing.append(live)
        self._wake()

    def has_work(self) -> bool:
        with self._lock:
            return bool(self._closing) or any(live.chunk is not None or live.finishing for live in self._open.values())

    def take(self) -> tuple[list[Live], list[Live]]:
        """(the sessions with a chunk waiting, the sessions closed since the last turn), each taken once."""
        with self._lock:
            waiting = [live for live in self._open.values() if live.chunk is not None or live.finishing]
            closing, self._closing = self._closing, []
            return waiting, closing


def step(table: SessionTable, models: dict, metrics, max_batch: int) -> bool:
    """One turn of the worker for the sessions: frees the closed ones, then runs every waiting chunk, each model's
    and direction's sessions stepped together. Whether anything ran."""
    waiting, closing = table.take()
    for live in closing:
        if live.session is not None:
            live.session.close()  # the causal state on the device goes now
            live.session = None
    groups = {}
    for live in waiting:
        groups.setdefault((live.model, live.kind, live.finishing), []).append(live)
    for (model, kind, finishing), lives in groups.items():
        vae = models[model]
        for live in lives:
            if live.session is None:
                live.session = vae.decode_session() if kind == "decode" else vae.encode_session()
        start = time.perf_counter()
        try:
            if finishing:
                outputs = {live.session: live.session.finish() for live in lives}
            else:
                occupancy = []
                chunks = {live.session: live.chunk for live in lives}
                step_sessions = vae.decode_sessions if kind == "decode" else vae.encode_sessions
                outputs = step_sessions(chunks, max_batch=max_batch, occupancy=occupancy)
                for sessions in occupancy:
                    metrics.session_occupancy.observe(sessions)
            error = None
        except Exception as e:  # this group's chunks are answered with it; the worker and other sessions go on
            outputs, error = {}, e
        metrics.device.labels(model, f"session {kind}").observe(time.perf_counter() - start)
        now = time.monotonic()
        for live in lives:
            deliver, live.chunk, live.deliver, live.finishing = live.deliver, None, None, False
            out = outputs.get(live.session)
            if kind == "encode" and out is not None:
                out = out.latent_dist.mode()
            metrics.session_chunk.observe(now - live.submitted)
            deliver(None if out is None else out.detach().cpu(), error)
    return bool(waiting or closing)

