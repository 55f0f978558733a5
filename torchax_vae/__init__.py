"""Run diffusers' VAEs (SD/SDXL/SD3/Flux, SD inpainting, the consistency decoder, Kandinsky's MoVQ and KVAE, Flux.2, Sana, HunyuanImage 2.1, the HunyuanImage 2.1 refiner, TAESD, Stable Video Diffusion, RAE, CogVideoX, Wan 2.1 and 2.2, Qwen-Image, Qwen-Image 2.1, HunyuanVideo, HunyuanVideo 1.5, LTX-Video, LTX-2 with its sound (the LTX-2 audio VAE and LTX-2 vocoders), MiniMax H3 (and the MiniMax H3 audio VAE), Allegro, Mochi, Cosmos, EasyAnimate, Kandinsky 6 SR (video super-resolution), KVAE video, VidTok; Kandinsky 6's sound (the Kandinsky 6 audio VAE and Kandinsky 6 vocoder); the Cosmos 3 sound tokenizer; Stable Audio's, Stable Audio 3's and LongCat audio's audio VAEs, KVAE-Audio; MiniMax Music 3's vocoder) on JAX devices through torchax, unmodified.

    from torchax_vae import TorchaxVAE
    pipe.vae = TorchaxVAE(pipe.vae)
    pipe.vae = TorchaxVAE(pipe.vae, mesh=make_mesh())  # every device, width-sharded

The names below load on first use (PEP 562), so that `torchax-vae` can check
its arguments before torch, JAX and diffusers are imported.
"""

import contextlib
import importlib
import warnings
from pathlib import Path

from torchax_vae import registry

__version__ = "0.1.0"
__all__ = ["TorchaxVAE", "clear_compiled", "make_mesh", "__version__"]

# The diffusers classes TorchaxVAE serves and their labels, from the one list (torchax_vae/registry.py): the command's
# help is made from it, and tests/test_registry.py holds the docstrings, pyproject and the README to it.
FAMILIES = {row.diffusers_class: row.label for row in registry.ROWS}

_LAZY = {"TorchaxVAE": ("vae", "TorchaxVAE"), "make_mesh": ("process", "make_mesh"), "clear_compiled": ("programs", "clear_shared")}

# In a source checkout `patches/` sits beside this folder and is installed as torchax_vae.patches; when
# Python imports this folder itself (run from the repository after a non-editable install), find it there.
_SOURCE_PATCHES = Path(__file__).resolve().parent.parent / "patches"
if not (Path(__file__).resolve().parent / "patches").is_dir() and (_SOURCE_PATCHES / "__init__.py").is_file():
    __path__.append(str(_SOURCE_PATCHES.parent))


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
