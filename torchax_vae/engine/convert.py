"""Hand-over between torch tensors and JAX arrays, and torch <-> JAX dtypes.

Where the torch tensor and the JAX device share memory (a CPU tensor and JAX's
CPU, a CUDA tensor and JAX's GPU of the same index: `shares_memory`), data
crosses through DLPack, with no trip through the host. DLPack aliases: the
JAX array then *is* the torch tensor's memory. That is what an input wants
(it is read once, during the call) but not a weight: a later in-place edit of
the user's module would change our "immutable" weights. So `to_jax` takes
`alias`: with it the tensor is handed over as it is, without it it is cloned
first, on its own device. Results come back through DLPack too (`to_torch`):
the JAX array is ours and dropped, so the torch tensor may own its memory.
Anything else (another device, float64, another process's shards) is copied
through the host.

Under `jax.distributed` an array can span devices of other processes; every
process then holds the same host data, puts its own shards, and gathers the
whole result back (`put`, `to_torch`).

Every float result a caller gets (decode, a stream's chunk, a session's, encode's moments, the command's and the
service's, which call these) leaves through `like` or, with gradients, `gradients.vjp` (which calls `mutated`). That
is where the tests' mutation check reaches it: `TORCHAX_VAE_MUTATE=EPS` in the environment (read once, at import, so
that it reaches the 8-device worker and the command's and the service's processes) scales each such result by (1 +
EPS). A parity test that still passes under `TORCHAX_VAE_MUTATE=2e-4` cannot see a 0.02 % error (tests/contract).
uint8 frames (`uint8_like`) and integer results are left alone. Unset, nothing changes.
"""

import os

import jax
from jax.experimental import multihost_utils
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import torch

from torchax_vae.patches.torchax_torch213 import import_torchax

_TORCH_TO_JAX = {
    torch.float32: jnp.float32,
    torch.float16: jnp.float16,
    torch.bfloat16: jnp.bfloat16,
    torch.float64: jnp.float64,
}
_JAX_TO_TORCH = {jnp.dtype(v): k for k, v in _TORCH_TO_JAX.items()}

# the tests' mutation check (module docstring): 0.0 leaves every result as it is
MUTATION = float(os.environ.get("TORCHAX_VAE_MUTATE") or 0.0)


def mutated(out: jax.Array) -> jax.Array:
    """`out` scaled by (1 + MUTATION) when it is a float result and the mutation check is on; else `out`."""
    if MUTATION and jnp.issubdtype(out.dtype, jnp.floating):
        return out * jnp.asarray(1.0 + MUTATION, out.dtype)
    return out


def jax_dtype(dtype: torch.dtype):
    if dtype not in _TORCH_TO_JAX:
        raise TypeError(f"unsupported dtype {dtype}; expected one of {sorted(map(str, _TORCH_TO_JAX))}")
    return _TORCH_TO_JAX[dtype]


def torch_dtype(dtype) -> torch.dtype:
    return _JAX_TO_TORCH[jnp.dtype(dtype)]


_DLPACK_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64)


def shares_memory(t_device: torch.device, device: jax.Device) -> bool:
    """Whether a torch tensor on `t_device` and a JAX array on `device` live in the same memory."""
    if t_device.type == "cpu":
        return device.platform == "cpu"
    if t_device.type == "cuda":  # torch and JAX number the visible GPUs alike (CUDA_VISIBLE_DEVICES)
        index = getattr(device, "local_hardware_id", None)
        return device.platform == "gpu" and (device.id if index is None else index) == (t_device.index or 0)
    return False


def _first_device(sharding) -> jax.Device:
    if sharding is None:
        return jax.devices()[0]
    if isinstance(sharding, jax.Device):
        return sharding
    return min(sharding.addressable_devices, key=lambda d: d.id)


def _row_major(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def to_jax(t: torch.Tensor, dtype=None, device=None, *, alias: bool = False) -> jax.Array:
    """`t` as a JAX array on `device` (a device or sharding), optionally cast.

    Through DLPack where `shares_memory`: aliasing `t` if `alias` and its strides
    are row-major, else a clone made on t's own device. Otherwise copied through
    the host. Either way the array has JAX's default layout: a torch view whose
    size-1 dimensions carry other strides (a permuted [1, 3, 1, H, W] frame) is
    "contiguous" to torch, but DLPack hands JAX those strides as a layout, and a
    program compiled for one layout refuses arrays of another.
    """
    t = t.detach()
    if t.dtype in _DLPACK_DTYPES and shares_memory(t.device, _first_device(device)):
        t = t if alias and t.stride() == _row_major(t.shape) else t.clone(memory_format=torch.contiguous_format)
        arr = jax.dlpack.from_dlpack(t)
        if device is not None:
            arr = put(arr, device)
    else:
        t = t.cpu().contiguous()
        host = t.view(torch.int16).numpy().view(ml_dtypes.bfloat16) if t.dtype == torch.bfloat16 else t.numpy()
        arr = put(np.array(host, copy=True), device)
    return arr if dtype is None else arr.astype(dtype)


def put(data, sharding=None) -> jax.Array:
    """`jax.device_put` of a host or JAX array, also for a sharding over other processes' devices (each puts its own shards)."""
    if isinstance(sharding, jax.sharding.Sharding) and not sharding.is_fully_addressable:
        return jax.make_array_from_callback(data.shape, sharding, lambda index: data[index])
    return jax.device_put(data, sharding)


def to_host(a: jax.Array) -> np.ndarray:
    """The whole array in this process's memory, gathering other processes' shards if it spans them."""
    if not a.is_fully_addressable:
        return np.asarray(multihost_utils.process_allgather(a, tiled=True))
    return np.asarray(jax.device_get(a))


def to_torch(a: jax.Array, device=None, dtype: torch.dtype | None = None) -> torch.Tensor:
    """`a` as a torch tensor on `device` (default CPU) and in `dtype` (default its own).

    Through DLPack when one of `a`'s devices shares memory with torch's `device`
    (a sharded array is first gathered there, device to device; the tensor then
    owns the array's memory: pass an array nobody else keeps); otherwise copied
    through the host.
    """
    device = torch.device("cpu" if device is None else device)
    if dtype is not None and dtype in _TORCH_TO_JAX:
        a = a.astype(_TORCH_TO_JAX[dtype])  # cast where the data is
    a.block_until_ready()  # the hand-over returns finished results, as the copy through the host did
    near = [d for d in (a.sharding.device_set if a.is_fully_addressable else ()) if shares_memory(device, d)]
    if near and a.dtype in _JAX_TO_TORCH:
        if len(a.sharding.device_set) > 1:  # gathered on the device torch shares, not through the host
            a = jax.device_put(a, min(near, key=lambda d: d.id))
        return torch.from_dlpack(a).to(dtype=dtype)
    host = np.array(to_host(a), copy=True)
    if host.dtype == ml_dtypes.bfloat16:
        t = torch.from_numpy(host.view(np.int16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(host)
    return t.to(device=device, dtype=dtype)


def is_torchax(x) -> bool:
    """Whether x is a torchax tensor (a JAX array behind a torch.Tensor face)."""
    return getattr(x, "_elem", None) is not None and isinstance(x._elem, jax.Array)


def like(out: jax.Array, x: torch.Tensor, own_dtype: bool = False) -> torch.Tensor:
    """out as a tensor like the caller's x: a torchax tensor on the device, or a torch tensor on x's device; in x's
    dtype, or with `own_dtype` in out's (a class whose diffusers code returns its modules' dtype whatever the input's)."""
    out = mutated(out)
    if is_torchax(x):
        return x._env.j2t_iso(out if own_dtype else out.astype(jax_dtype(x.dtype)))
    return to_torch(out, device=x.device, dtype=None if own_dtype else x.dtype)


def uint8_like(out: jax.Array, x: torch.Tensor) -> torch.Tensor:
    """uint8 frames as a tensor where x is: a torchax tensor on the device, or a torch tensor on x's device."""
    if is_torchax(x):
        return x._env.j2t_iso(out)
    return to_torch(out, device=x.device, dtype=torch.uint8)


DTYPE_NAMES = {
    "fp32": torch.float32,
    "float32": torch.float32,
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
    "fp16": torch.float16,
    "float16": torch.float16,
}


def as_torch_dtype(dtype) -> torch.dtype | None:
    """A `dtype` argument (a torch.dtype, a name such as "bf16", or None) as a torch.dtype or None."""
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, str) and dtype.removeprefix("torch.") in DTYPE_NAMES:
        return DTYPE_NAMES[dtype.removeprefix("torch.")]
    raise TypeError(f"dtype must be a torch.dtype or one of {sorted(DTYPE_NAMES)}, got {dtype!r}")


def on_device(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A torchax tensor holding x on the default JAX device (TorchaxVAE then keeps everything there), in `dtype`
    (the model's: what the command reads is cast to it, as diffusers' pipelines cast latents to vae.dtype)."""
    array = jax.device_put(x.float().numpy()).astype(jax_dtype(dtype))
    return import_torchax().default_env().j2t_iso(array)
