"""Progress of one call: who is told of each encoder or decoder call as it is queued.

A call's observer is the caller's, not the model's: `with reporting(on_batch):`
around `encode`, `decode` or `precompile` hands `on_batch` each frame batch's
output (a JAX array or pytree, or its shapes when planning) as the family's loop
queues it. It lives in a context variable, so calls in other threads (or other
asyncio tasks) sharing the same TorchaxVAE report to their own observers, or to none.
"""

import contextlib
import contextvars
from collections.abc import Callable

__all__ = ["reporting", "ran_batch"]

# A context variable, not an argument: the observer is the caller's (`reporting`), and diffusers' signatures, which
# `decode` keeps, have no place for it; per thread and per task, so two callers never see each other's batches.
_ON_BATCH: contextvars.ContextVar = contextvars.ContextVar("torchax_vae_on_batch", default=None)


@contextlib.contextmanager
def reporting(on_batch: Callable | None):
    """Inside: this thread's calls hand each queued batch's output to `on_batch` (None: to nobody)."""
    token = _ON_BATCH.set(on_batch)
    try:
        yield
    finally:
        _ON_BATCH.reset(token)


def ran_batch(output) -> None:
    """What a family's loop calls with each encoder/decoder call's output as it queues it."""
    on_batch = _ON_BATCH.get()
    if on_batch is not None:
        on_batch(output)
