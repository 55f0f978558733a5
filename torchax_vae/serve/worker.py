"""One device worker behind a bounded queue: requests of one model, direction, shape and options run together as
one batch, up to `max_batch`, waiting at most `max_wait` for company.

The worker is a single thread, the only one that calls the models: one device runs one program at a time, and
the programs of a shape compile once (batches are padded to a few sizes, so the compiles stay bounded). The
queue is bounded; a full one refuses at once (the app answers 429). Jobs whose client went away or whose
deadline passed are dropped before they reach the device.
"""

import collections
import dataclasses
import logging
import threading
import time
from typing import Callable

import torch

from .protocol import Parsed, RequestError, scaled_latents

log = logging.getLogger("torchax_vae.serve")


@dataclasses.dataclass(eq=False)
class Job:
    model: str
    parsed: Parsed
    deliver: Callable  # deliver(result, error): called once, from the worker thread
    deadline: float  # time.monotonic() after which nobody waits for it
    accepted: float = dataclasses.field(default_factory=time.monotonic)
    cancelled: bool = False  # the client went away, or its handler stopped waiting

    @property
    def batch(self) -> int:
        return self.parsed.tensor.shape[0]


def batch_sizes(max_batch: int, dp: int = 1) -> list[int]:
    """The batch sizes programs are compiled for: powers of two up to `max_batch`, and `max_batch`; on a mesh
    with dp rows, multiples of dp (so a batch always splits over 'dp')."""
    sizes = {1 << k for k in range(max_batch.bit_length()) if 1 << k <= max_batch} | {max_batch}
    return sorted({-(-s // dp) * dp for s in sizes})


class DeviceWorker:
    """Runs jobs on the models, one batch at a time, on its own thread."""

    def __init__(self, models: dict, metrics, *, max_batch: int = 4, max_queue: int = 64, max_wait: float = 0.005):
        self.models = models  # name -> TorchaxVAE (filled by `load` when it runs on the worker's thread)
        self.metrics = metrics
        self.max_batch, self.max_queue, self.max_wait = max_batch, max_queue, max_wait
        self._pending: collections.deque[Job] = collections.deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._running = 0  # jobs taken and not yet delivered
        self._thread: threading.Thread | None = None

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
        while (batch := self._take()) is not None:
            try:
                self._run(batch)
            finally:
                with self._cond:
                    self._running -= len(batch)

    def _live(self, job: Job) -> bool:
        if job.cancelled or time.monotonic() > job.deadline:
            job.cancelled = True
            self.metrics.rejected.labels("dropped").inc()
            job.deliver(None, RequestError(503, "the request waited past its deadline", reason="deadline"))
            return False
        return True

    def _take(self) -> list[Job] | None:
        with self._cond:
            while True:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if not self._pending:
                    return None  # stopping, and nothing left
                first = self._pending.popleft()
                if self._live(first):
                    break
            batch, key = [first], self._key(first)
            until = time.monotonic() + self.max_wait
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
            self.metrics.queue_length.set(len(self._pending))
            return batch

    def _key(self, job: Job):
        """What jobs must share to run as one batch; None: this one runs alone."""
        parsed, vae = job.parsed, self.models[job.model]
        if parsed.decode_args or (parsed.kind == "decode" and vae.decode_draws_noise):
            return None  # per-video timesteps and noise drawn from the request's own generator
        return job.model, parsed.kind, tuple(parsed.tensor.shape[1:])

    def _run(self, batch: list[Job]) -> None:
        now = time.monotonic()
        for job in batch:
            self.metrics.queue_wait.observe(now - job.accepted)
        self.metrics.batch_size.observe(len(batch))
        model, kind = batch[0].model, batch[0].parsed.kind
        vae = self.models[model]
        compiled = len(vae.compile_stats())
        start = time.perf_counter()
        try:
            outputs = self._call(vae, batch)
        except Exception as e:  # a failure of this batch answers its jobs; the worker goes on
            log.exception("%s %s failed", kind, model)
            for job in batch:
                job.deliver(None, e)
            return
        finally:
            self.metrics.device.labels(model, kind).observe(time.perf_counter() - start)
            self.metrics.compiles.labels(model).inc(max(0, len(vae.compile_stats()) - compiled))
        for job, output in zip(batch, outputs):
            job.deliver(output, None)

    def _call(self, vae, batch: list[Job]) -> list[torch.Tensor]:
        """The batch's outputs, one per job: decoded videos, or encode's latents as the request asked."""
        x = torch.cat([job.parsed.tensor for job in batch])
        rows = x.shape[0]
        padded = next((s for s in batch_sizes(self.max_batch, _dp(vae)) if s >= rows), rows)
        if padded > rows and not vae.batch_is_frames:  # the last row again: the compiled sizes stay few, and
            # padding cannot overflow (a batch of one video's frames is that video: never padded)
            x = torch.cat([x, x[-1:].expand(padded - rows, *x.shape[1:])])
        first = batch[0].parsed
        if first.kind == "decode":
            noise = {"generator": torch.Generator().manual_seed(first.seed)} if vae.decode_draws_noise else {}
            out = vae.decode(x, *first.decode_args, **noise).sample
            if vae.decoded_layout == "BFCHW":  # as every other family: [B, C, F, H, W]
                out = out.permute(0, 2, 1, 3, 4)
            if vae.batch_is_frames:  # one video's frames [F, C, H, W] (it ran alone): [1, C, F, H, W]
                return [out.permute(1, 0, 2, 3)[None]]
            return list(out[:rows].split([job.batch for job in batch]))
        moments = vae._posterior(x).parameters[:rows]
        outputs = []
        for job, part in zip(batch, moments.split([job.batch for job in batch])):
            posterior = vae.posterior_class(part)
            seed = job.parsed.seed
            z = posterior.mode() if seed is None else posterior.sample(generator=torch.Generator().manual_seed(seed))
            outputs.append(scaled_latents(vae, z.float(), job.parsed))
        return outputs


def _dp(vae) -> int:
    mesh = vae.mesh
    return 1 if mesh is None else mesh.shape["dp"]
