"""Arrays or their shapes: the few operations the loops share, on JAX arrays or on `jax.ShapeDtypeStruct`s alike
(what `lower`, `precompile` and `plan` run the same loops on), and chunk iterators joined."""

import functools

import jax
import jax.numpy as jnp

__all__ = ["LOOKAHEAD", "apply", "chunks_of", "is_abstract", "join", "join_chunks", "run_out", "side_by_side"]

# A stream's chunks computed ahead of the one its consumer holds: JAX runs the next while the host copies this one
# (torchax_vae/facade/stream.py; the planner counts them in a stream's peak).
LOOKAHEAD = 1


def is_abstract(tree) -> bool:
    """Whether a pytree holds shapes (jax.ShapeDtypeStruct) rather than arrays."""
    return any(isinstance(leaf, jax.ShapeDtypeStruct) for leaf in jax.tree_util.tree_leaves(tree))


def join(arrays, *, axis):
    return jnp.concatenate(arrays, axis=axis)


def apply(fn, *args, **static):
    """fn(*args, **static) on arrays, or its output's shape when args are jax.ShapeDtypeStruct."""
    if is_abstract(args):
        return jax.eval_shape(functools.partial(fn, **static), *args)
    return fn(*args, **static)


def chunks_of(out):
    """A loop's output as an iterator of chunks: a generator as it is, one array (or shape) as one chunk."""
    if isinstance(out, (jax.Array, jax.ShapeDtypeStruct)):
        return iter((out,))
    return out


def join_chunks(chunks, axis: int | None):
    """Chunks joined on `axis` (the frame axis), arrays or their shapes; one chunk as it is (axis None: there is no
    frame axis, and there must be one chunk)."""
    chunks = list(chunks_of(chunks))
    if len(chunks) == 1:
        return chunks[0]
    if axis is None:
        raise ValueError(f"{len(chunks)} chunks of an output with no frame axis")
    return apply(join, chunks, axis=axis)


def side_by_side(iterators, axis: int = 0):
    """Several chunk iterators walked together (slicing's one per video): each step's chunks joined on `axis`."""
    iterators = [chunks_of(it) for it in iterators]
    try:
        for pieces in zip(*iterators, strict=True):
            yield pieces[0] if len(pieces) == 1 else apply(join, list(pieces), axis=axis)
    finally:
        for it in iterators:
            close = getattr(it, "close", None)
            if close is not None:
                close()


def run_out(steps) -> tuple[list, object]:
    """A generator run to its end: (what it yielded, what it returned), as a session step reads a family's loop
    (its outputs, and the causal state it ends with)."""
    outputs = []
    while True:
        try:
            outputs.append(next(steps))
        except StopIteration as done:
            return outputs, done.value
