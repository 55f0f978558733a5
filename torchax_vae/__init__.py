"""Run diffusers' VAEs on JAX devices through torchax, unmodified: every class in torchax_vae/registry.py.

    from torchax_vae import TorchaxVAE
    pipe.vae = TorchaxVAE(pipe.vae)
    pipe.vae = TorchaxVAE(pipe.vae, mesh=make_mesh())  # every device, width-sharded

The package, a layer a folder (docs/design/how_it_works.md has the map); a folder imports only the ones below it:

- `vae.py`: `TorchaxVAE`, the facade, with its mixins in `facade/` (config and saving, the torch module surface,
  tiling policy, streams, sessions, compiling ahead of time);
- `registry.py`: the one list of served diffusers classes, plain data;
- `models/`: the families, one file per class or loop kind (`models/family.py`: what a family is);
- `engine/`: what computes: programs, lowering, sources, staging, weights, memory, the process;
- `placement/`: below it: the device mesh, tiles, the per-backend choices;
- `patches/`: the changes to diffusers' and torchax's layers a trace applies, one file each;
- `media/`: video, image and sound files in and out, pixels;
- `stage3/`: what the command and the service share: loading a model folder, input checks, sound;
- `cli/`: the `torchax-vae` command; `serve/`: the service; `plan/`: offline compiles for TPUs and GPUs;
- `progress.py`, `cache.py`: a call's progress, and the on-disk caches (their documented homes).

The names below load on first use (PEP 562), so that `torchax-vae` can check
its arguments before torch, JAX and diffusers are imported.
"""

import contextlib
import importlib
import warnings

from torchax_vae import registry

__version__ = "0.1.0"
__all__ = ["TorchaxVAE", "clear_compiled", "make_mesh", "__version__"]

# The diffusers classes TorchaxVAE serves and their labels, from the one list (torchax_vae/registry.py): the command's
# help is made from it, and tests/test_house.py holds the docstrings and the README to it.
FAMILIES = {row.diffusers_class: row.label for row in registry.ROWS}

_LAZY = {"TorchaxVAE": ("facade.vae", "TorchaxVAE"), "make_mesh": ("engine.process", "make_mesh"),
         "clear_compiled": ("engine.programs", "clear_shared")}


@contextlib.contextmanager
def quiet_diffusers_import():
    """diffusers 0.36's package import runs its Kandinsky 5 transformer's `@torch.autocast(device_type="cuda")`
    decorators, which warn "CUDA is not available ..." twice on a machine without CUDA, though no VAE uses them.
    Kept out of this package's first import (and the command's run) only: no process-wide filter."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="CUDA is not available or torch_xla is imported", category=UserWarning)
        yield


def __getattr__(name):
    if name in _LAZY:
        module, attr = _LAZY[name]
        with quiet_diffusers_import():
            value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
