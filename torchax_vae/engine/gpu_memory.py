"""One GPU, two frameworks: keep JAX from taking the GPU memory torch needs.

JAX's GPU client preallocates 75 % of the GPU when it starts
(XLA_PYTHON_CLIENT_PREALLOCATE, XLA_PYTHON_CLIENT_MEM_FRACTION). In a pipeline
whose transformer runs in torch CUDA, that leaves torch a quarter of the GPU
and one of the two runs out of memory. The variables are read once, when JAX
starts its backends (at the first `jax.devices()`, not at `import jax`), so
TorchaxVAE calls `share_gpu_with_torch` before it touches a device:

- the user set any of `VARIABLES`: theirs stands;
- torch sees no CUDA GPU: nothing to share, nothing changes;
- JAX has not started: XLA_PYTHON_CLIENT_PREALLOCATE=false (JAX then takes
  memory as it needs it and keeps it for reuse) and XLA_PYTHON_CLIENT_MEM_FRACTION
  =MEM_FRACTION. Without preallocation the fraction is only a cap on JAX's pool,
  but JAX keeps it at 75 % of the card (seen on an H100: a 63.8 GB bytes_limit),
  which would make a decode fail that the memory torch leaves free could hold;
  the cap is raised to what a CUDA context leaves (reasoned, not yet measured);
- JAX already started: too late to change; a warning says how to set it.
"""

import logging
import os
import warnings

logger = logging.getLogger(__name__)

MEM_FRACTION = "0.95"  # JAX's pool cap when it shares the GPU with torch (see above)
VARIABLES = ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_ALLOCATOR")
ADVICE = (
    "set XLA_PYTHON_CLIENT_PREALLOCATE=false in the environment, or create the TorchaxVAE "
    "before anything else uses JAX, so that JAX does not preallocate 75% of the GPU torch is using"
)


def decide(environ, torch_cuda: bool, jax_started: bool) -> str:
    """What to do: "user" (their setting stands), "none", "set" or "warn"."""
    if any(name in environ for name in VARIABLES):
        return "user"
    if not torch_cuda:
        return "none"
    return "warn" if jax_started else "set"


def _jax_started() -> bool:
    from jax._src import xla_bridge  # no public query for this; present in every jax we support

    started = getattr(xla_bridge, "backends_are_initialized", None)
    return started() if started is not None else bool(getattr(xla_bridge, "_backends", {}))


def _torch_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def share_gpu_with_torch(environ=os.environ) -> str:
    """Keeps JAX from preallocating the GPU when torch uses CUDA in this process (see the module doc)."""
    action = decide(environ, _torch_cuda(), _jax_started())
    if action == "set":
        environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
        environ["XLA_PYTHON_CLIENT_MEM_FRACTION"] = MEM_FRACTION
        logger.info("torch uses CUDA here: JAX will allocate GPU memory as it needs it (up to %s of it), "
                    "not 75%% up front", MEM_FRACTION)
    elif action == "warn" and _jax_on_gpu():
        warnings.warn(f"JAX started before TorchaxVAE and may hold 75% of the GPU: {ADVICE}", RuntimeWarning, stacklevel=3)
    return action


def _jax_on_gpu() -> bool:
    import jax

    return any(d.platform == "gpu" for d in jax.devices())
