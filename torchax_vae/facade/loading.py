"""Loading a diffusers VAE from a folder or hub id: the served class its config names (torchax_vae/registry.py), with
weights or on the meta device. What `TorchaxVAE.from_pretrained`, the planner and stage 3 load through."""

import json
import pathlib

from diffusers import AutoencoderKL  # (any diffusers model class reads any config.json)

from torchax_vae import registry
from torchax_vae.engine.weights import quiet_construction, rebuilt_on_meta
from torchax_vae.media.checks import vae_subfolder

__all__ = ["load_diffusers", "load_meta"]

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
    family = registry.facade_for_class_name(config.get("_class_name", "")).family
    if expected is not None and family.model_class is not expected:
        raise ValueError(f"the model is a {family.model_class.__name__}, not a {expected.__name__}")
    return family.load_model(name_or_path, subfolder, **kwargs)


def load_meta(name_or_path, subfolder: str | None = "vae", **hub):
    """The diffusers VAE a config describes, on the meta device (no weights read, no memory): for planning.

    name_or_path: a config.json file, a folder holding one (the VAE's, or a pipeline's with `subfolder`), or a
    hub id (its config only). ValueError for a class no adapter serves.
    """
    path = pathlib.Path(str(name_or_path)).expanduser()
    if path.is_file():
        config = json.loads(path.read_text())
    else:
        subfolder = vae_subfolder(name_or_path, subfolder)
        config = AutoencoderKL.load_config(str(name_or_path), subfolder=subfolder, **hub)
    model_class = registry.facade_for_class_name(config.get("_class_name", "")).model_class
    with quiet_construction():
        return rebuilt_on_meta(model_class, config).eval()  # (from_config leaves dropout layers training)
