"""Copies between torch tensors and JAX arrays, and torch <-> JAX dtypes.

torchax's own `t2j`/`j2t` go through DLPack, which on CPU makes the JAX array
share the torch tensor's memory: a later in-place edit of the user's module
would then change our "immutable" weights. Everything here copies.

Under `jax.distributed` an array can span devices of other processes; every
process then holds the same host data, puts its own shards, and gathers the
whole result back (`put`, `to_torch`).
"""

import jax
from jax.experimental import multihost_utils
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import torch

_TORCH_TO_JAX = {
    torch.float32: jnp.float32,
    torch.float16: jnp.float16,
    torch.bfloat16: jnp.bfloat16,
    torch.float64: jnp.float64,
}
_JAX_TO_TORCH = {jnp.dtype(v): k for k, v in _TORCH_TO_JAX.items()}


def jax_dtype(dtype: torch.dtype):
    if dtype not in _TORCH_TO_JAX:
        raise TypeError(f"unsupported dtype {dtype}; expected one of {sorted(map(str, _TORCH_TO_JAX))}")
    return _TORCH_TO_JAX[dtype]


def torch_dtype(dtype) -> torch.dtype:
    return _JAX_TO_TORCH[jnp.dtype(dtype)]


def to_jax(t: torch.Tensor, dtype=None, device=None) -> jax.Array:
    """A JAX copy of a (CPU or CUDA) torch tensor, optionally cast, on `device`."""
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        host = t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    else:
        host = t.numpy()
    arr = put(np.array(host, copy=True), device)
    return arr if dtype is None else arr.astype(dtype)


def put(host: np.ndarray, sharding=None) -> jax.Array:
    """`jax.device_put`, also for a sharding over other processes' devices (each puts its own shards)."""
    if isinstance(sharding, jax.sharding.Sharding) and not sharding.is_fully_addressable:
        return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])
    return jax.device_put(host, sharding)


def to_host(a: jax.Array) -> np.ndarray:
    """The whole array in this process's memory, gathering other processes' shards if it spans them."""
    if not a.is_fully_addressable:
        return np.asarray(multihost_utils.process_allgather(a, tiled=True))
    return np.asarray(jax.device_get(a))


def to_torch(a: jax.Array, device=None, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A torch copy of a JAX array, on `device` (default CPU) and in `dtype` (default its own)."""
    host = np.array(to_host(a), copy=True)
    if host.dtype == ml_dtypes.bfloat16:
        t = torch.from_numpy(host.view(np.int16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(host)
    return t.to(device=device, dtype=dtype)
