"""Loading a model folder for stage 3, as the command and the service do: a served diffusers VAE from a local folder or
the hub's cache (torchax_vae/facade/loading.py loads it), with errors a user can act on (`InputError`), and what
the command and the service serve of it."""

import pathlib

from torchax_vae import registry
from torchax_vae.facade.loading import load_diffusers, load_meta  # noqa: F401 (stage 3's loaders, in one place)
from torchax_vae.media.checks import InputError, vae_subfolder

__all__ = ["check_served", "load_diffusers", "load_meta", "load_plugins", "load_vae", "summary"]

# The VAEs that are their pipeline's whole sound (torchax_vae/registry.py: `sound`), and their labels.
AUDIO_ONLY = {row.diffusers_class: row.label for row in registry.ROWS if row.sound}


def load_vae(model: str, subfolder: str | None = "vae"):
    """A supported diffusers VAE from a local folder or a hub id (diffusers' cache, no download offline).

    The class (AutoencoderKLCogVideoX, AutoencoderKLWan) is the one the folder's
    config.json names. A local folder that holds the VAE itself (config.json at
    its top) works with or without `subfolder`.
    """
    local = pathlib.Path(model).expanduser()
    if not local.exists():  # a hub id: its cached snapshot, or say at once that it cannot be had
        local = _cached_snapshot(model, subfolder)
    subfolder = vae_subfolder(local, subfolder)
    where = f"{model} (subfolder {subfolder!r})" if subfolder else model
    try:
        return load_diffusers(local, subfolder)
    except Exception as e:
        raise InputError(f"cannot load a VAE from {where}: {summary(e)}") from e


def check_served(vae, audio: bool = False) -> None:
    """InputError for a class the command and the service do not serve as a video or image model: MiniMax H3's
    audio VAE, whose sound is decoded beside its video's from the pipeline folder, and the VAEs of audio pipelines
    (Stable Audio), whose sound is written to a .wav (torchax_vae/stage3/sound.py) or, with `audio`, served alone."""
    family = registry.facade_for(vae).family
    name = family.model_class.__name__
    if name in AUDIO_ONLY and not audio:
        raise InputError(f"{name} ({AUDIO_ONLY[name]}) decodes sound alone: write its latents' sound with "
                         "`torchax-vae decode LATENTS -o NAME.wav` (docs/guide/cli.md); it makes no video or image")
    if family.rank == 3 and name not in AUDIO_ONLY:
        raise InputError(f"{name} decodes waveforms alone: give the pipeline folder (vae/ and "
                         "audio_vae/) as the model, and its audio latents beside the video's (docs/guide/cli.md), or use "
                         "TorchaxVAE in Python")


def summary(error: Exception) -> str:
    """An error's first line, with the first detail when that line only announces them (ends with ':')."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    if lines[0].endswith(":") and len(lines) > 1:
        more = f" (and {len(lines) - 2} more)" if len(lines) > 2 else ""
        return f"{lines[0]} {lines[1]}{more}"
    return lines[0]


def _cached_snapshot(model: str, subfolder: str | None) -> pathlib.Path:
    """The folder of hub id `model` in the Hugging Face cache (read as a local folder: no network).

    Not cached: InputError at once if the hub's host does not resolve (offline),
    instead of the hub client's ~30 s of retries and its "no file named config.json".
    """
    import socket
    import urllib.parse

    from huggingface_hub import constants, try_to_load_from_cache

    for sub in dict.fromkeys([subfolder, None]):
        found = try_to_load_from_cache(model, f"{sub}/config.json" if sub else "config.json")
        if isinstance(found, str):  # .../snapshots/<commit>/[sub/]config.json
            folder = pathlib.Path(found).parent
            return folder.parent if sub else folder
    host = urllib.parse.urlparse(constants.ENDPOINT).hostname or ""
    try:
        socket.getaddrinfo(host, 443)
    except OSError as e:
        raise InputError(
            f"model {model!r} is not a local folder, not in the Hugging Face cache ({constants.HF_HUB_CACHE}), "
            f"and the hub cannot be reached ({host}: {e.strerror or e}); download it first or pass a local folder"
        ) from None
    return pathlib.Path(model)  # diffusers downloads it


def load_plugins(specs) -> None:
    """The command's and the service's `--plugin MODULE:FAMILY`s registered (InputError for one that is not)."""
    from torchax_vae.facade import plugins  # (the facade and torch: after the command's fast checks)

    for spec in specs or ():
        try:
            plugins.load_plugin(spec)
        except ValueError as error:
            raise InputError(str(error)) from None
