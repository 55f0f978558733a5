"""One device worker behind a bounded queue, advancing its jobs a chunk at a time.

Requests of one model, direction, shape and options run together as one batch, up to `max_batch`, waiting at
most `max_wait` for company when the device is otherwise idle. A decode runs as a stream
(`TorchaxVAE.decode_stream`): the worker advances up to `max_active` batches in turn, one chunk of frames each, so
a small request behind a long video waits about one chunk, not the whole video; and a batch whose clients all
went away, or whose deadline passed, stops at its next chunk, its device memory freed. A streamed answer's chunks
go to its handler as they are final (`Job.on_chunk`), and a batch whose reader is behind waits (`Job.ready`).

The worker is a single thread, the only one that calls the models: one device runs one program at a time, and
the programs of a shape compile once (batches are padded to a few sizes, so the compiles stay bounded). The
queue is bounded; a full one refuses at once (the app answers 429).
"""

import collections
import contextlib
import dataclasses
import logging
import threading
import time
from typing import Callable

import torch

from torchax_vae.engine.batching import data_rows, pad_rows, padded_size
from torchax_vae.serve import live_sessions
from torchax_vae.serve.protocol import Parsed, RequestError, scaled_latents
from torchax_vae.serve.sounds import waveform

log = logging.getLogger("torchax_vae.serve")


@dataclasses.dataclass(eq=False)
class Job:
    model: str
    parsed: Parsed
    deliver: Callable  # deliver(result, error): called once, from the worker thread (result None when streamed)
    deadline: float  # time.monotonic() after which nobody waits for it
    accepted: float = dataclasses.field(default_factory=time.monotonic)
    cancelled: bool = False  # the client went away, or its handler stopped waiting
    # A streamed answer: each chunk of this job's frames [b, C, f, H, W] as it is final (from the worker thread),
    # then deliver(None, None); and whether its reader takes another chunk now. None: one answer at the end.
    on_chunk: Callable | None = None
    ready: Callable[[], bool] = lambda: True
    pieces: list = dataclasses.field(default_factory=list)  # an unstreamed answer's chunks so far (on the host)
    answered: bool = False

    @property
    def batch(self) -> int:
        return self.parsed.tensor.shape[0]

    def answer(self, result, error) -> None:
        if not self.answered:
            self.answered = True
            self.deliver(result, error)


@dataclasses.dataclass(eq=False)
class Run:
    """A batch of jobs on the device: `steps` yields each chunk as a list of the jobs' pieces."""

    jobs: list
    steps: object
    chunks: int = 0
    seconds: float = 0.0
    compiled: int = 0


class DeviceWorker:
    """Runs jobs on the models, a chunk at a time, on its own thread."""

    def __init__(self, models: dict, metrics, *, sounds: dict | None = None, max_batch: int = 4, max_queue: int = 64,
                 max_wait: float = 0.005, max_active: int = 4, max_sessions: int = 16,
                 session_batch: int = 8):
        self.models = models  # name -> TorchaxVAE (filled by `load` when it runs on the worker's thread)
        self.sounds = {} if sounds is None else sounds  # name -> sound.Sound: what a job of kind "sound" runs
        self.metrics = metrics
        self.max_batch, self.max_queue, self.max_wait = max_batch, max_queue, max_wait
        self.max_active = max_active  # batches advanced in turn
        self._pending: collections.deque[Job] = collections.deque()
        self._active: collections.deque[Run] = collections.deque()  # only the worker's thread touches it
        self._cond = threading.Condition()
        self._stopping = False
        self._running = 0  # jobs taken and not yet answered
        self._thread: threading.Thread | None = None
        self.sessions = live_sessions.SessionTable(max_sessions, self.wake)  # live sessions (serve/live.py)
        self.session_batch = session_batch

    # ----- the app's side -----

    def start(self, load: Callable[[], None] | None = None) -> None:
        """Starts the thread; it runs `load()` first (models, warm-up) and then the queue."""
        self._thread = threading.Thread(target=self._main, args=(load,), name="torchax-vae-device", daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> None:
        """Queues `job`, or raises RequestError 429 (with Retry-After) when the queue is full, 503 when stopping."""
        with self._cond:
            if self._stopping:
                raise RequestError(503, "the server is shutting down", reason="shutting_down")
            if len(self._pending) >= self.max_queue:
                raise RequestError(429, f"the queue is full ({self.max_queue} requests waiting); retry later",
                                   {"Retry-After": "1"}, reason="queue_full")
            self._pending.append(job)
            self.metrics.queue_length.set(len(self._pending))
            self._cond.notify_all()

    def wake(self) -> None:
        """A streamed answer's reader took a chunk (or left): its batch may go on."""
        with self._cond:
            self._cond.notify_all()

    def idle(self) -> bool:
        with self._cond:
            return not self._pending and not self._running

    def stop(self, timeout: float | None = None) -> None:
        """Lets the queue run empty, then ends the thread."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    # ----- the worker's thread -----

    def _main(self, load) -> None:
        if load is not None:
            load()
        # Each turn: every live session's waiting chunk (stepped together), then one chunk of one request's batch.
        # So a session's chunk waits at most one request chunk, however long that request's video, and a request's
        # chunk at most one step of the sessions (serve/live_sessions.py).
        while (batches := self._take()) is not None:
            for batch in batches:
                self._begin(batch)
            stepped = live_sessions.step(self.sessions, self.models, self.metrics, self.session_batch)
            run = self._next_ready()
            if run is not None:
                self._advance(run)
            elif self._active and not stepped:  # every batch waits for its reader: until one reads, or work comes
                with self._cond:
                    self._cond.wait(0.05)

    def _gone(self, job: Job) -> bool:
        """Whether nobody waits for `job` now (its client went away, or its deadline passed)."""
        if not job.cancelled and time.monotonic() > job.deadline:
            job.cancelled = True
        return job.cancelled

    def _live(self, job: Job) -> bool:
        if self._gone(job):
            self.metrics.rejected.labels("dropped").inc()
            job.answer(None, RequestError(503, "the request waited past its deadline", reason="deadline"))
            return False
        return True

    def _take(self) -> list[list[Job]] | None:
        """New batches to begin, as many as `max_active` leaves room for (waiting for work when there is none);
        None once stopping with nothing left."""
        with self._cond:
            while not self._pending and not self._active and not self.sessions.has_work():
                if self._stopping:
                    return None
                self._cond.wait()
            batches = []
            while self._pending and len(self._active) + len(batches) < self.max_active:
                first = self._pending.popleft()
                if not self._live(first):
                    continue
                batch, key = [first], self._key(first)
                alone = not self._active and not batches  # only then wait for company: others run otherwise
                until = time.monotonic() + (self.max_wait if alone else 0)
                while key is not None and sum(j.batch for j in batch) < self.max_batch:
                    for job in list(self._pending):
                        if self._key(job) == key and sum(j.batch for j in batch) + job.batch <= self.max_batch:
                            self._pending.remove(job)
                            if self._live(job):
                                batch.append(job)
                    remaining = until - time.monotonic()
                    if remaining <= 0 or self._pending or self._stopping:  # others wait: run what is here
                        break
                    self._cond.wait(remaining)
                self._running += len(batch)
                batches.append(batch)
            self.metrics.queue_length.set(len(self._pending))
            return batches

    def _key(self, job: Job):
        """What jobs must share to run as one batch; None: this one runs alone."""
        parsed, vae = job.parsed, self.models[job.model]
        if parsed.kind == "sound":
            return None  # the sound of one request's audio latents, in one turn
        if parsed.decode_args or (parsed.kind == "decode" and vae.decode_draws_noise):
            return None  # per-video timesteps and noise drawn from the request's own generator
        return job.model, parsed.kind, tuple(parsed.tensor.shape[1:]), job.on_chunk is not None

    def _begin(self, batch: list[Job]) -> None:
        now = time.monotonic()
        for job in batch:
            self.metrics.queue_wait.observe(now - job.accepted)
        self.metrics.batch_size.observe(len(batch))
        vae = self.models[batch[0].model]
        run = Run(batch, None, compiled=len(vae.compile_stats()))
        try:
            run.steps = self._steps(vae, batch)
        except Exception as e:
            self._fail(run, e)
            return
        self._active.append(run)

    def _next_ready(self) -> Run | None:
        """The next batch in turn whose streamed readers can take a chunk (or that has nobody left to serve)."""
        for _ in range(len(self._active)):
            run = self._active[0]
            self._active.rotate(-1)
            if all(job.ready() or job.cancelled for job in run.jobs):
                return run
        return None

    def _advance(self, run: Run) -> None:
        """One chunk of `run`, handed to its jobs; the run ends when its chunks do, or nobody waits for it."""
        live = [job for job in run.jobs if not self._gone(job)]
        if not live:  # every client went away or ran out of time: stop here, and free the device
            if run.chunks:
                self.metrics.cancelled.inc(len(run.jobs))
            for job in run.jobs:
                job.answer(None, RequestError(503, "the request was stopped: nobody waits for it", reason="deadline"))
            self._end(run)
            return
        start = time.perf_counter()
        try:
            pieces = next(run.steps)
        except StopIteration:
            for job in run.jobs:
                if job.on_chunk is not None:
                    job.answer(None, None)
                elif not job.cancelled:
                    joined = job.pieces[0] if len(job.pieces) == 1 else torch.cat(job.pieces, dim=2)
                    job.pieces = []
                    job.answer(joined, None)
            self._end(run)
            return
        except Exception as e:  # a failure of this batch answers its jobs; the worker goes on
            self._fail(run, e)
            return
        finally:
            run.seconds += time.perf_counter() - start
        if not run.chunks:
            now = time.monotonic()
            for job in live:
                self.metrics.first_chunk.observe(now - job.accepted)
        run.chunks += 1
        self.metrics.chunks.inc()
        for job, piece in zip(run.jobs, pieces):
            if job.cancelled:
                continue
            if job.on_chunk is not None:
                job.on_chunk(piece)
            else:
                job.pieces.append(piece)

    def _fail(self, run: Run, error: Exception) -> None:
        job = run.jobs[0]
        log.exception("%s %s failed", job.parsed.kind, job.model, exc_info=error)
        for job in run.jobs:
            job.answer(None, error)
        self._end(run)

    def _end(self, run: Run) -> None:
        with contextlib.suppress(ValueError):
            self._active.remove(run)
        close = getattr(run.steps, "close", None)
        if close is not None:
            close()  # a stream stopped mid-way ends its family's loop: its caches go now
        job = run.jobs[0]
        vae = self.models[job.model]
        self.metrics.device.labels(job.model, job.parsed.kind).observe(run.seconds)
        self.metrics.compiles.labels(job.model).inc(max(0, len(vae.compile_stats()) - run.compiled))
        with self._cond:
            self._running -= len(run.jobs)

    def _steps(self, vae, batch: list[Job]):
        """The batch's chunks, each a list of one piece per job: decoded frames [b, C, f, H, W] (images
        [b, C, H, W]: one chunk), encode's latents as the request asked (one chunk), or a sound job's waveform
        (one chunk; it runs alone)."""
        if batch[0].parsed.kind == "sound":
            return _sound_steps(self.sounds[batch[0].model], batch[0].parsed.tensor)
        tensors = [job.parsed.tensor for job in batch]  # one alone is used as it is: torch.cat would copy its body
        x = (tensors[0] if len(tensors) == 1 else torch.cat(tensors)).to(vae.dtype)  # as pipelines cast to vae.dtype
        rows = x.shape[0]
        padded = padded_size(rows, self.max_batch, data_rows(vae.mesh))
        first = batch[0].parsed
        args = first.decode_args  # (a job with them runs alone) per-video ones padded as its rows are
        if padded > rows and not vae.batch_is_frames:  # the last row again: the compiled sizes stay few, and
            # padding cannot overflow (a batch of one video's frames is that video: never padded)
            x = pad_rows(x, padded)
            args = tuple(pad_rows(a, padded) if isinstance(a, torch.Tensor) and a.shape[:1] == (rows,) else a for a in args)
        if first.kind == "decode":
            noise = {"generator": torch.Generator().manual_seed(first.seed)} if vae.decode_draws_noise else {}
            return _decode_steps(vae.decode_stream(x, *args, **noise), vae, [job.batch for job in batch])
        return _encode_steps(vae, x, batch)


def _decode_steps(stream, vae, sizes: list[int]):
    with contextlib.closing(stream):  # this generator closed mid-way closes the stream: its caches go now
        for out in stream:
            if vae.decoded_layout == "BFCHW":  # as every other family: [B, C, F, H, W]
                out = out.permute(0, 2, 1, 3, 4)
            if vae.batch_is_frames:  # one video's frames [F, C, H, W] (it ran alone): [1, C, F, H, W]
                yield [out.permute(1, 0, 2, 3)[None]]
            else:
                yield list(out[:sum(sizes)].split(sizes))


def _sound_steps(speaker, audio):

    yield [waveform(speaker, audio)]


def _encode_steps(vae, x, batch: list[Job]):
    rows = sum(job.batch for job in batch)
    moments = vae._posterior(x).parameters[:rows]
    outputs = []
    for job, part in zip(batch, moments.split([job.batch for job in batch])):
        posterior = vae.posterior_class(part)
        seed = job.parsed.seed
        z = posterior.mode() if seed is None else posterior.sample(generator=torch.Generator().manual_seed(seed))
        outputs.append(scaled_latents(vae, z.float(), job.parsed))
    yield outputs
