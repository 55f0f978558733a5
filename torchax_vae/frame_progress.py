"""The decode command's progress: frames written, as a streamed decode hands them to ffmpeg.

A bar on a terminal ("bar"), a line every tenth of the frames with a rate and an ETA ("log"), or nothing (None).
A run whose first chunk says it will take longer than `long_run_seconds` gets one line up front with the
estimate (the frames of the first chunk, and the time they took, include compiling nothing: the programs are
compiled before).
"""

import contextlib
import math
import sys
import time


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
