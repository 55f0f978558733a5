"""Batches padded to a few fixed sizes, so that the programs of a shape compile for a bounded set of batch sizes
however many requests or sessions come and go: the service's worker pads request batches with it, and batched
sessions (torchax_vae/facade/session_batch.py) pad their stacked chunks and causal states."""

import jax
import jax.numpy as jnp
import torch

__all__ = ["batch_sizes", "data_rows", "pad_rows", "padded_size"]


def batch_sizes(max_batch: int, dp: int = 1) -> list[int]:
    """The batch sizes programs are compiled for: powers of two up to `max_batch`, and `max_batch`; on a mesh
    with dp rows, multiples of dp (so a batch always splits over 'dp')."""
    sizes = {1 << k for k in range(max_batch.bit_length()) if 1 << k <= max_batch} | {max_batch}
    return sorted({-(-s // dp) * dp for s in sizes})


def data_rows(mesh) -> int:
    """The rows a batch splits into on `mesh` (its 'dp' axis; 1 on one device): what `dp` above counts."""
    return 1 if mesh is None else mesh.shape["dp"]


def padded_size(rows: int, max_batch: int, dp: int = 1) -> int:
    """The smallest of `batch_sizes` that holds `rows` rows; `rows` itself past the largest."""
    return next((s for s in batch_sizes(max_batch, dp) if s >= rows), rows)


def pad_rows(x, rows: int):
    """x (a torch tensor or a JAX array) with its last row repeated up to `rows` rows (x itself if it has them):
    a real row's values, so that padding never makes a value the batch would not otherwise see."""
    missing = rows - x.shape[0]
    if missing <= 0:
        return x
    if isinstance(x, torch.Tensor):
        return torch.cat([x, x[-1:].expand(missing, *x.shape[1:])])
    return jnp.concatenate([x, jnp.broadcast_to(x[-1:], (missing, *x.shape[1:]))])


def is_batched(leaf, rows: int) -> bool:
    """Whether a state leaf is a per-row array (rows on its first axis), as a family's causal caches are."""
    return isinstance(leaf, jax.Array) and leaf.ndim >= 1 and leaf.shape[0] == rows
