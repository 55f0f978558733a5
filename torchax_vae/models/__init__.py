"""One adapter module per diffusers VAE class: its family (torchax_vae/family.py) and the facade class named for it.

Each adapter module holds everything model-specific: the family, with the
diffusers class it runs, how a video is cut into encoder and decoder calls and
what cache they carry, tiling, the patches it applies, the latent shape of a
video and the latent normalization its pipelines apply; and the `TorchaxVAE`
class that holds it (`WanVAE`, ...: the name saved pipelines' model_index.json
gives), with what diffusers' class differs in at its interface. The engine
(torchax_vae.vae, engine, programs, sources, tiling, mesh) names no model class.

Adding a family: docs/families.md (a module here with its `Family`, often of a
shared scheme: `feat_cache.FeatCache`, `windows.Windows`; its facade class;
its row in torchax_vae/registry.py; its tests).
"""

import contextlib
import json
import pathlib
import warnings

from diffusers import AutoencoderKL  # (any diffusers model class reads any config.json)

from .. import registry
from ..checks import vae_subfolder  # noqa: F401 (where the VAE is in a folder: the command's and the loaders')
from ..vae import TorchaxVAE

__all__ = ["WRAPPERS", "input_shape", "load_diffusers", "load_meta", "wrapper_for", "wrapper_for_config"]

# The facade classes of every class the installed diffusers has, in the registry's order (torchax_vae/registry.py:
# the one list; each family module is imported from its row by name).
WRAPPERS = tuple(registry.facade(row) for row in registry.ROWS if registry.served_here(row))
supported = registry.supported
wrapper_for = registry.facade_for  # the TorchaxVAE subclass for a diffusers model instance; TypeError for others
wrapper_for_config = registry.facade_for_class_name  # ... for a saved model's `_class_name`; ValueError for others


_HUB_OPTIONS = ("cache_dir", "force_download", "local_files_only", "proxies", "revision", "token")


def load_diffusers(name_or_path, subfolder: str | None = "vae", expected: type | None = None, **kwargs):
    """The diffusers VAE in a folder or hub id, of the class its config.json names (`_class_name`).

    ValueError for a class no adapter serves, or other than `expected` when given.
    A folder holding the VAE itself (config.json at its top) works with or without
    `subfolder`. `kwargs` go to the class's `from_pretrained`.
    """
    subfolder = vae_subfolder(name_or_path, subfolder)
    name_or_path = str(name_or_path)  # a pathlib.Path too
    hub = {key: kwargs[key] for key in _HUB_OPTIONS if key in kwargs}
    config = AutoencoderKL.load_config(name_or_path, subfolder=subfolder, **hub)
    model_class = wrapper_for_config(config.get("_class_name", "")).model_class
    if expected is not None and model_class is not expected:
        raise ValueError(f"the model is a {model_class.__name__}, not a {expected.__name__}")
    # Weights are copied to the JAX device anyway; without accelerate diffusers would warn on every load. A class
    # with modules kept in float32 (AutoencoderKLMiniMaxH3) loads only with it on.
    if not model_class._keep_in_fp32_modules:
        kwargs.setdefault("low_cpu_mem_usage", False)
    with _quiet_construction():
        return model_class.from_pretrained(name_or_path, subfolder=subfolder, **kwargs)


@contextlib.contextmanager
def _quiet_construction():
    """diffusers' audio classes build torch's deprecated `weight_norm` (AutoencoderOobleck): torch's FutureWarning on
    each load is diffusers' to act on, not what a user of the command or the service can."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*torch\.nn\.utils\.weight_norm.* is deprecated",
                                category=FutureWarning)
        yield


def load_meta(name_or_path, subfolder: str | None = "vae", **hub):
    """The diffusers VAE a config describes, on the meta device (no weights read, no memory): for planning.

    name_or_path: a config.json file, a folder holding one (the VAE's, or a pipeline's with `subfolder`), or a
    hub id (its config only). ValueError for a class no adapter serves.
    """
    from ..weights import rebuilt_on_meta

    path = pathlib.Path(str(name_or_path)).expanduser()
    if path.is_file():
        config = json.loads(path.read_text())
    else:
        subfolder = vae_subfolder(name_or_path, subfolder)
        config = AutoencoderKL.load_config(str(name_or_path), subfolder=subfolder, **hub)
    model_class = wrapper_for_config(config.get("_class_name", "")).model_class
    with _quiet_construction():
        return rebuilt_on_meta(model_class, config).eval()  # (from_config leaves dropout layers training)


def input_shape(vae, kind: str, frames: int, height: int, width: int) -> tuple[int, ...]:
    """What a pipeline passes to `vae.encode` (the video) or `vae.decode` (its latents) for one video of this size
    (an image VAE's, [1, C, H, W]: one frame, ValueError for more, except where the batch is a video's frames:
    Stable Video Diffusion's [F, C, H, W]).

    The one place outside the adapters that turns a video size into a call's input: the CLI's warm-up,
    bench, speed and the training script use it, through the family's `video_channels` and `latent_shape`.
    """
    if isinstance(vae, TorchaxVAE):  # a TorchaxVAE: its family
        family = vae._family
    else:  # diffusers' model: its family's facts alone
        family = wrapper_for(vae).family(vae)
    if family.rank == 4 and frames != 1 and not family.batch_is_frames:
        raise ValueError(f"a {family.model_class.__name__} encodes and decodes images: one frame, got {frames}")
    if family.rank == 4:  # images; Stable Video Diffusion's frames in the batch (`batch_is_frames`)
        video = (frames, family.video_channels, height, width)
    else:
        video = (1, family.video_channels, frames, height, width)
    return video if kind == "encode" else family.latent_shape(video)
