"""The commands' progress: frames written, as a streamed decode hands them to ffmpeg; frame batches finished, as
an encode (or a decode to images) runs them.

A bar on a terminal ("bar"), a line every tenth of the frames with a rate and an ETA ("log"), or nothing (None).
A run whose first chunk says it will take longer than `long_run_seconds` gets one line up front with the
estimate (the frames of the first chunk, and the time they took, include compiling nothing: the programs are
compiled before).
"""

import collections
import contextlib
import math
import sys
import time

import jax

from torchax_vae import progress as progress_of


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


@contextlib.contextmanager
def frames_written(total: int, desc: str, mode, long_run_seconds: float):
    """Yields `wrote(n)`, to call as each chunk's n frames (per video) are written."""
    from tqdm import tqdm

    start, done, every = time.perf_counter(), [0], max(1, math.ceil(total / 10))

    def wrote(count: int) -> None:
        before = done[0]
        done[0] += count
        bar.update(count)
        if mode is None:
            return
        elapsed = time.perf_counter() - start
        rate = done[0] / elapsed if elapsed > 0 else math.inf
        if before == 0 and done[0] < total and elapsed * total / done[0] > long_run_seconds:
            print(f"torchax-vae {desc}: this will take about {duration(elapsed * total / done[0])} ({total} frames; "
                  f"the first {done[0]} took {elapsed:.2f} s); Ctrl-C stops it and writes nothing",
                  file=sys.stderr, flush=True)
        if mode == "log" and (done[0] // every > before // every or done[0] == total):
            eta = (total - done[0]) / rate if rate else 0.0
            print(f"torchax-vae {desc}: {done[0]} of {total} frames written ({100 * done[0] // total}%), "
                  f"{rate:.2f} frames/s, ETA {duration(eta)}", file=sys.stderr, flush=True)

    with tqdm(total=total, desc=desc, unit="frame", disable=mode != "bar", leave=False) as bar:
        yield wrote


# Frame batches queued on the device ahead of the one being waited for. More would not run faster (one device
# runs one program at a time); fewer in flight means the progress counts finished frames and Ctrl-C stops at once.
IN_FLIGHT = 2


@contextlib.contextmanager
def batches_finished(total: int, desc: str, mode, frames: int, long_run_seconds: float):
    """Counts finished frame batches while a call (encode, or a decode to images) runs: a bar ("bar", a terminal), a
    line every tenth with an ETA ("log"); mode None: neither.

    JAX dispatches asynchronously, so a batch counts when its output is ready: at most IN_FLIGHT batches are
    queued past the oldest unfinished one, which is waited for before the next is queued (and the rest when the
    call has queued them all). Either way, a run whose first batch says it will take longer than
    `long_run_seconds` gets one line up front with the estimate.
    """
    from tqdm import tqdm

    start, done = time.perf_counter(), [0]
    every = max(1, math.ceil(total / 10))
    queued = collections.deque()

    def finished():
        jax.block_until_ready(queued.popleft())
        done[0] += 1
        bar.update()
        if mode is None:
            return
        elapsed = time.perf_counter() - start
        eta = elapsed / done[0] * (total - done[0])
        if done[0] == 1 and total > 1 and elapsed * total > long_run_seconds:
            print(f"torchax-vae {desc}: this will take about {duration(elapsed * total)} ({total} frame batches; "
                  f"the first took {elapsed:.2f} s); Ctrl-C stops it and writes nothing", file=sys.stderr, flush=True)
        if mode == "log" and (done[0] % every == 0 or done[0] == total):
            print(f"torchax-vae {desc}: batch {done[0]}/{total} ({100 * done[0] // total}%), about "
                  f"{frames * done[0] // total} of {frames} frames, {frames * done[0] / total / elapsed:.2f} frames/s, "
                  f"ETA {duration(eta)}", file=sys.stderr, flush=True)

    def step(output):
        queued.append(output)
        while len(queued) > IN_FLIGHT:
            finished()

    with tqdm(total=total, desc=desc, unit="batch", disable=mode != "bar", leave=False) as bar:
        with progress_of.reporting(step):
            yield
            while queued:
                finished()


def progress_mode(progress):
    """True (the old flag) -> "bar"; False -> None; "bar", "log" or None as given."""
    if progress is True:
        return "bar"
    if progress is False or progress is None:
        return None
    if progress not in ("bar", "log"):
        raise ValueError(f"progress must be 'bar', 'log', True, False or None, got {progress!r}")
    return progress


def precompile_counting(vae, kind: str, shape, progress=None) -> tuple[float, int, list]:
    """Compiles every program the call needs; (seconds, frame batches it will run, program stats)."""
    if progress == "bar":
        print(f"compiling the {kind} programs for input {tuple(shape)} (cached after the first run) ...",
              file=sys.stderr, flush=True)
    count = [0]
    start = time.perf_counter()
    with progress_of.reporting(lambda output: count.__setitem__(0, count[0] + 1)):
        stats = vae.precompile(kind, shape)
    return time.perf_counter() - start, count[0], stats
