"""Everything torchax_vae changes in the process: done once, by `start()`, before its first JAX device query.

`TorchaxVAE(...)`, `make_mesh()` and the command call `start()`; importing the
package changes nothing. Each change, and why it is safe for the rest of the
process (the user's own torch and JAX code):

1. **JAX's platforms, on a machine without an accelerator.** With libtpu or JAX's
   CUDA plugin installed (`.[tpu]`, `.[plan-gpu]`: what plans for a TPU or an
   H100), JAX's first device query initialises every installed plugin. On a
   machine without that chip each one prints a traceback or libtpu's warnings
   ("Unable to load cuDNN", "Failed to find host bounds"), and JAX then runs on
   the CPU anyway. Where no TPU or GPU is visible (`_accelerator_visible`), and
   the user chose no platforms (`JAX_PLATFORMS`, `jax_platforms`), and JAX has
   not started, `jax_platforms` is set to "cpu": the same devices, without the
   noise. The plugins stay registered, so planning for abstract TPU and GPU
   devices works as before (torchax_vae/plan/targets.py). Where an accelerator is
   visible, JAX chooses as it always does.
2. **GPU memory** (torchax_vae/engine/gpu_memory.py): where torch uses CUDA, JAX does
   not preallocate 75 % of the GPU.
3. **torchax**: imported (torchax_vae/patches/torchax_torch213.py under torch 2.13), its
   default environment's convolution, nearest upsampling and attention lowerings
   routed through this package's rules (torchax_vae/patches/gpu_conv.py,
   nearest_upsample.py, attention_split.py: each is torchax's own lowering
   outside our traces, or the same values computed otherwise).
4. **torch's accelerator** (torchax_vae/patches/torch_accelerator.py): torchax makes "jax"
   torch's accelerator on a machine without CUDA, which breaks every
   `torch.compile` in the process (pytorch/xla#9730); it is reported as not
   available to torch.

The persistent compilation cache (torchax_vae/cache.py) is the one other
process-wide setting, and it is the user's choice (`TORCHAX_VAE_CACHE_DIR`).
"""

import logging
import os
import threading

from torchax_vae.placement import mesh

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_started = False
# libtpu reads these when it loads; without them, on a machine that is not a TPU VM it asks the cloud metadata
# server and prints its failures (tried 2026-11-25, libtpu 0.0.42.1). Set only for abstract topologies.
TPU_PLANNING_ENV = {"TPU_SKIP_MDS_QUERY": "1", "TPU_WORKER_HOSTNAMES": "localhost", "TPU_WORKER_ID": "0",
                    "TPU_ACCELERATOR_TYPE": "v6e-8"}


def start() -> None:
    """Makes the process-wide changes listed in the module doc, once (thread-safe; later calls return at once)."""
    global _started
    if _started:
        return
    with _lock:
        if _started:
            return
        quiet_platforms()
        # (imported here, once: torchax and the patches load with the first TorchaxVAE, not with `targets`, which
        # imports this module to plan without a device)
        from torchax_vae.engine import gpu_memory

        gpu_memory.share_gpu_with_torch()
        # (the same: torchax and the patched lowerings, once per process)
        from torchax_vae.patches import attention_split, gpu_conv, import_torchax, nearest_upsample, torch_accelerator

        import_torchax()
        gpu_conv.patch()
        nearest_upsample.patch()
        attention_split.patch()
        torch_accelerator.patch()
        _started = True


def make_mesh(devices=None, *, dp: int = 1):
    """`torchax_vae.make_mesh`: a ('dp', 'tp') mesh over `devices` (default: every device), `dp` rows of tp devices;
    the process-wide changes (`start`) are made first, before `jax.devices()` starts JAX's backends.

    Activations split their width over both axes, or, when the batch divides by
    dp > 1, their batch over 'dp' and their width over 'tp'.
    """
    if devices is None:
        start()
    return mesh.make_mesh(devices, dp=dp)


def quiet_platforms() -> str | None:
    """Sets `jax_platforms` to "cpu" where that is all JAX would find (module doc, 1); what it set, or None."""
    import jax
    from jax._src import xla_bridge

    if jax.config.jax_platforms or _jax_started(xla_bridge) or _accelerator_visible():
        return None
    jax.config.update("jax_platforms", "cpu")
    logger.debug("no TPU or GPU visible: JAX runs on the CPU without initialising its accelerator plugins")
    return "cpu"


def quiet_libtpu(environ=os.environ) -> None:
    """Before libtpu loads for abstract devices on a machine that is no TPU VM: what keeps it from asking the cloud
    metadata server and printing that it could not (the user's own settings stand)."""
    if _accelerator_visible():
        return
    for name, value in TPU_PLANNING_ENV.items():
        environ.setdefault(name, value)


def _jax_started(xla_bridge) -> bool:
    started = getattr(xla_bridge, "backends_are_initialized", None)
    return started() if started is not None else bool(getattr(xla_bridge, "_backends", {}))


def _accelerator_visible() -> bool:
    """Whether this machine shows a TPU, an NVIDIA GPU or an AMD GPU, as JAX's own hardware checks see them."""
    try:
        from jax._src import hardware_utils
    except ImportError:  # a jax without them: assume there may be one, and leave JAX to choose
        return True
    checks = (
        lambda: hardware_utils.num_available_tpu_chips_and_device_id()[0] > 0,
        hardware_utils.has_visible_nvidia_gpu,
    )
    if hasattr(hardware_utils, "num_available_amd_gpus"):  # jax >= 0.9 (older ones do not look for AMD GPUs either)
        checks += (lambda: hardware_utils.num_available_amd_gpus(stop_at=1) > 0,)
    for check in checks:
        try:
            if check():
                return True
        except (AttributeError, OSError, TypeError):  # a check this jax lacks or cannot make: assume a device
            return True
    return False
