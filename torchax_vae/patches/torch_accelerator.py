"""torch's accelerator back to what torch can use: "jax" is not one (pytorch/xla#9730).

Upstream: `import torchax` renames torch's PrivateUse1 backend to "jax" and
registers `torchax.device_module`, whose `is_available()` is always True. On a
machine without CUDA (a CPU box, a TPU VM) `torch.accelerator.current_accelerator()`
then is "jax" and `torch.accelerator.is_available()` True, but torch has no
device guard for it: `torch.accelerator.current_device_index()` raises
"PyTorch is not linked with support for jax devices". Inductor asks for it when
it hashes a graph without tensor inputs, and dynamo when it traces streams, so
from then on `torch.compile` fails in the whole process
(`torch.compile(lambda x: torch.cos(x) + 1)(torch.ones(2))`, or a pipeline's
compiled transformer). Others mask it around their compiles (tenstorrent/tt-xla#2436).

Fix: `torchax.device_module.is_available` answers whether torch can use the
device, which it cannot: False. torch.accelerator then reports no accelerator
available and torch.compile takes its CPU path, as before torchax was imported.
Nothing in torchax or in this package calls it (torchax's tensors never reach
torch's device guard: they are CPU-side wrappers of JAX arrays). On a CUDA
machine torch's accelerator is CUDA and this changes nothing it reads.

Still needed while `torch.accelerator.is_available()` is True after `import torchax`
(tests/test_patches.py::test_torchax_still_makes_jax_a_torch_accelerator).
"""

__all__ = ["patch", "needed"]


def _not_available() -> bool:
    """torch cannot run anything on a "jax" device: there is no torch device for it (module doc)."""
    return False


def needed() -> bool:
    """Whether torchax's device module still tells torch a "jax" device is available."""
    import torchax.device_module

    return torchax.device_module.is_available is not _not_available and torchax.device_module.is_available()


def patch() -> bool:
    """Reports the "jax" device as unavailable to torch (once per process); whether it changed anything."""
    import torchax.device_module

    if torchax.device_module.is_available is _not_available:
        return False
    torchax.device_module.is_available = _not_available
    return True
