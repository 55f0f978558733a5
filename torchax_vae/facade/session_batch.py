"""Sessions stepped together: several streams' next chunks as one batched program call per family step.

A process that runs several live streams (a realtime generator's, or the service's session endpoint) hands
`step_together` each open session's next chunk. Sessions whose chunks and states agree in everything but the batch
(the same chunk shape and dtype, the same state structure and per-row shapes, and equal values where a state leaf
is not per row: MiniMax H3's clip counters, KVAE video's group-norm flags) run as one batch: their chunks are
joined on the batch axis, their causal states stacked on it on the device, the family's session step runs once,
and each session gets its rows of the output and of the new state back. The rest run in groups of their own.

A batch's rows are one of a few sizes up to `max_batch` (powers of two: `engine.batching`), so that sessions may
join and leave at any chunk and nothing compiles after the warm-up of those sizes: the agreeing sessions are split
into batches of those sizes (five as four and one), and padded (the last row repeated) only where their own rows
leave no other way. Every sample's
computation in a VAE is its own (convolutions, per-sample group norms, per-frame attention), so each session's
frames are its own decode's: equal up to the float rounding of a program compiled for another batch size (the tests
hold them within 1e-6 of a session run alone).

One path: a single session's `decode(chunk)` is `step_together({session: chunk}, max_batch=1)`, a group of one,
unpadded, its state passed as it is.
"""

import jax
import jax.numpy as jnp
import numpy as np
import torch

from torchax_vae.engine import convert
from torchax_vae.engine.batching import batch_sizes, data_rows, is_batched, pad_rows, padded_size

__all__ = ["step_together"]


def step_together(chunks: dict, max_batch: int = 8, occupancy: list | None = None) -> dict:
    """Each session's output for its chunk ({session: chunk} -> {session: frames, or an encode's moments}), the
    sessions batched where they agree (the module docstring); every chunk is checked before anything runs.
    `occupancy` (a list), where given, gets each program call's number of sessions appended."""
    if not chunks:
        return {}
    if max_batch < 1:
        raise ValueError(f"max_batch must be at least 1, got {max_batch}")
    sessions = list(chunks)  # (one TorchaxVAE's sessions of one kind: `decode_sessions` checks it)
    first = sessions[0]
    locked = []
    try:
        for session in sessions:
            if not session._lock.acquire(blocking=False):
                raise RuntimeError(f"a {session.kind} session is running a chunk in another thread; a session is "
                                   f"one stream's: open one per stream (vae.{session.kind}_session())")
            locked.append(session)
        for session, x in chunks.items():  # every chunk's errors before any program runs
            session.check(x)
        results = {}
        items = list(chunks.items())  # (one session is its own group: no key to read, no state value fetched)
        for group in [items] if len(items) == 1 else _groups(items, max_batch, data_rows(first._vae.mesh)):
            if occupancy is not None:
                occupancy.append(len(group))
            for (session, x), out, state in zip(group, *_run(group, max_batch)):
                results[session] = session._took(x, out, state)
        return {session: results[session] for session in sessions}
    finally:
        for session in locked:
            session._lock.release()


def _key(session, x: torch.Tensor) -> tuple:
    """What sessions must share to run as one batch: the chunk's shape past the batch, dtype and kind of tensor,
    and the state's structure, per-row leaves' shapes past the batch, and every other leaf's value."""
    leaves, tree = jax.tree_util.tree_flatten(session._state)
    rows = x.shape[0]
    return (tuple(x.shape[1:]), x.dtype, convert.is_torchax(x), tree,
            tuple(("rows", leaf.shape[1:], str(leaf.dtype)) if is_batched(leaf, rows) else ("value", _value(leaf))
                  for leaf in leaves))


def _value(leaf):
    if isinstance(leaf, jax.Array):  # a 0-d flag or counter on the device: its value, read back (a few bytes)
        return (str(leaf.dtype), tuple(leaf.shape), np.asarray(leaf).tobytes())
    return leaf


def _groups(items: list, max_batch: int, dp: int = 1) -> list:
    """The (session, chunk) pairs in batches: equal keys, each batch's rows one of `batch_sizes` where the sessions'
    rows allow (5 sessions of one row run as 4 and 1, not padded to 8: a padded row costs a real row's compute), at
    most `max_batch` rows (a session with more, alone)."""
    by_key = {}
    for session, x in items:
        by_key.setdefault(_key(session, x), []).append((session, x))
    sizes = batch_sizes(max_batch, dp)
    groups = []
    for members in by_key.values():
        members = sorted(members, key=lambda item: -item[1].shape[0])  # the widest sessions first
        while members:
            target = max([s for s in sizes if s <= sum(x.shape[0] for _, x in members)], default=sizes[0])
            group, taken = [], 0
            for item in list(members):
                width = item[1].shape[0]
                if taken + width <= target or not group:  # (a session wider than the target runs alone)
                    group.append(item)
                    members.remove(item)
                    taken += width
            groups.append(group)
    return groups


def _run(group: list, max_batch: int):
    """The family's session step on the group's chunks as one batch: ([each session's output], [its state])."""
    vae, kind = group[0][0]._vae, group[0][0].kind
    sizes = [x.shape[0] for _, x in group]
    rows = padded_size(sum(sizes), max_batch, data_rows(vae.mesh))
    if len(group) == 1 and rows == sizes[0]:  # alone: as it is
        session, x = group[0]
        out, state = vae._family.session_step(vae._source(x), session._state, kind=kind)
        return [out], [state]
    tensors = [x for _, x in group]
    if convert.is_torchax(tensors[0]):
        x = tensors[0]._env.j2t_iso(pad_rows(jnp.concatenate([t._elem for t in tensors]), rows))  # (on the device)
    else:
        x = pad_rows(torch.cat(tensors), rows)
    state = _stacked([session._state for session, _ in group], sizes, rows, vae)
    out, state = vae._family.session_step(vae._source(x), state, kind=kind)
    return _split(out, sizes), [_split_state(state, sizes, rows, k) for k in range(len(group))]


def _stacked(states: list, sizes: list, rows: int, vae):
    """The sessions' states as one: per-row leaves joined on the batch axis and padded to `rows`, placed as the
    activations they continue (on a mesh, split over 'dp' as the batch is); the others, equal in all, as they are."""
    if states[0] is None:
        return None
    flat = [jax.tree_util.tree_flatten(state) for state in states]
    tree = flat[0][1]
    leaves = []
    for k, leaf in enumerate(flat[0][0]):
        if is_batched(leaf, sizes[0]):
            joined = pad_rows(jnp.concatenate([leaves_[k] for leaves_, _ in flat]), rows)
            placement = vae._engine.placement
            leaves.append(joined if placement.mesh is None else jax.device_put(joined, placement.activation(joined.shape)))
        else:
            leaves.append(leaf)
    return jax.tree_util.tree_unflatten(tree, leaves)


def _split(out, sizes: list) -> list:
    """A batch's output as each session's rows (None, where the step completed nothing, for each)."""
    if out is None:
        return [None] * len(sizes)
    starts = np.cumsum([0, *sizes])
    return [out[starts[k]:starts[k + 1]] for k in range(len(sizes))]


def _split_state(state, sizes: list, rows: int, k: int):
    """Session k's rows of the batch's new state (the other leaves as they are)."""
    start = sum(sizes[:k])
    return jax.tree_util.tree_map(lambda leaf: leaf[start:start + sizes[k]] if is_batched(leaf, rows) else leaf, state)

