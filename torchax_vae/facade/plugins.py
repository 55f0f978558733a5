"""A VAE of your own, served as diffusers' own are: its family added to the registry (`register_family`), or named
on the command line (`--plugin module:Family`, `load_plugin`). docs/guide/api.md, "Your own VAE"."""

import importlib

from torchax_vae import registry
from torchax_vae.facade.family import Family
from torchax_vae.facade.vae import TorchaxVAE

__all__ = ["load_plugin", "register_family"]

_KINDS = {5: "video", 4: "image", 3: "sound"}


def register_family(family: type, *, label: str | None = None) -> type:
    """Serves `family`'s model class through `TorchaxVAE(model)`, the command and the service; returns its facade
    class (a TorchaxVAE subclass). `family` is a `Family` subclass (`torchax_vae.models.plain.PlainFamily` for a
    model with `encoder` and `decoder` children), or a facade class of one. Registering the same one again changes
    nothing; another family for a class already served is a ValueError that names both."""
    facade = family if isinstance(family, type) and issubclass(family, TorchaxVAE) else None
    family = facade.family if facade is not None else family
    if not (isinstance(family, type) and issubclass(family, Family)) or family.model_class is None:
        raise TypeError(f"a plugin is a Family subclass that names its model_class (or its TorchaxVAE facade "
                        f"class), got {family!r}")
    name = family.model_class.__name__
    existing = registry.by_class(name)
    if existing is not None and registry.facade(existing).family is family:
        return registry.facade(existing)
    if facade is None:
        facade = type(f"{name}TorchaxVAE", (TorchaxVAE,), {
            "family": family, "__module__": family.__module__,
            "__doc__": f"`TorchaxVAE` of `{name}` ({family.__module__}.{family.__qualname__}).",
        })
    row = registry.Row(name, family.__module__, facade.__name__, label or name, _KINDS.get(family.rank, "video"))
    registry.register(row, facade=facade)
    return facade


def load_plugin(spec: str) -> type:
    """`MODULE:NAME` (the command's and the service's `--plugin`): the module imported, its family or facade class
    `NAME` registered (`register_family`); ValueError, in words for the command line, for anything else."""
    module, colon, name = spec.partition(":")
    if not (colon and module and name):
        raise ValueError(f"--plugin {spec!r}: expected MODULE:FAMILY, a module Python can import and its Family "
                         "subclass, e.g. my_vaes:TinyFamily")
    try:
        found = getattr(importlib.import_module(module), name)
    except ImportError as error:
        raise ValueError(f"--plugin {spec}: cannot import {module} ({error})") from None
    except AttributeError:
        raise ValueError(f"--plugin {spec}: {module} has no {name}") from None
    try:
        return register_family(found)
    except TypeError as error:
        raise ValueError(f"--plugin {spec}: {error}") from None
