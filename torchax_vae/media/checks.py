"""Checks of paths and the errors the command reports in one line, with the standard library only.

`torchax-vae` runs these before torch, JAX and diffusers are imported, so a
mistake comes back at once; `files` runs the same ones for Python callers.
"""

import os
import pathlib
import tempfile

__all__ = [
    "InputError", "WriteError", "LATENT_SUFFIXES", "VIDEO_SUFFIXES", "IMAGE_SUFFIXES", "check_distinct", "check_readable",
    "check_writable", "shown", "vae_subfolder",
]

LATENT_SUFFIXES = (".pt", ".pth", ".safetensors", ".npy")
VIDEO_SUFFIXES = (".mp4", ".npy")  # a decoded video: H.264 (lossy) or the exact uint8 frames
SOUND_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg", ".opus", ".m4a", ".aac")  # what `encode` reads as sound
IMAGE_SUFFIXES = (".png", ".npy")  # a decoded image: PNG (lossless) or the exact uint8 pixels
# The highest MP4 frame rate written: above it players and ffmpeg's muxer misbehave (--fps 100000 read back as 0).
MAX_FPS = 240


# The longest echo of a caller's value in an error message: a 30 KB shape list or a 5 KB model name comes back
# as its start and its length, not whole.
SHOWN_CHARS = 60


def shown(value) -> str:
    """repr(value) for an error message, cut to its first SHOWN_CHARS characters (and its length) when longer."""
    text = repr(value)
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[:SHOWN_CHARS]}... ({len(text)} characters)"


class InputError(ValueError):
    """A user-facing problem with a file or argument; its message is one line saying what and what was expected."""


class WriteError(OSError):
    """Writing an output failed (ffmpeg's own message, a full disk); the target was left as it was."""


def check_readable(path, what: str, suffixes=None) -> pathlib.Path:
    """InputError unless `path` is a file (of one of `suffixes`); `what` names it ("latents file")."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise InputError(f"{what} {path} does not exist")
    if suffixes and path.suffix not in suffixes:
        raise InputError(f"{what} {path}: unknown type {path.suffix!r}; expected one of {suffixes}")
    return path


def check_writable(path, suffixes=None) -> pathlib.Path:
    """InputError unless a file (ending in one of `suffixes`) can be created at `path`.

    Proven by creating and removing a file in its folder: permission bits alone
    pass folders no file can be made in (procfs as root, a read-only mount).
    """
    path = pathlib.Path(path)
    if suffixes and path.suffix.lower() not in suffixes:
        raise InputError(f"output {path} must end in {' or '.join(suffixes)}")
    folder = path.parent
    if path.is_dir():
        raise InputError(f"cannot write {path}: it is a folder")
    if not folder.is_dir():
        blocking = next((part for part in (folder, *folder.parents) if part.exists()), None)
        if blocking is not None and not blocking.is_dir():
            raise InputError(f"cannot write {path}: {blocking} is a file, not a folder")
        raise InputError(f"cannot write {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"cannot write {path}: folder {folder} is not writable")
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise InputError(f"cannot write {path}: no file can be created in {folder} ({e.strerror or e})") from None
    return path


def check_distinct(output, inputs) -> None:
    """InputError if `output` is one of the `inputs` (the same file by another name too): it would be replaced."""
    output = pathlib.Path(output)
    for given in inputs:
        given = pathlib.Path(given)
        same = output.resolve() == given.resolve()
        if not same and output.exists() and given.exists():
            same = os.path.samefile(output, given)
        if same:
            raise InputError(f"output {output} is the input {given}: writing it would replace the input; "
                             "choose another output name")


def vae_subfolder(name_or_path, subfolder: str | None) -> str | None:
    """`subfolder`, or None where a local folder holds the VAE itself (its config.json at the top); a Kandinsky
    pipeline's `movq` (MiniMax Music 3's `vocoder`) where the default `vae` is asked of a pipeline folder that has
    none."""
    local = pathlib.Path(name_or_path).expanduser()
    if subfolder and local.is_dir() and not (local / subfolder).is_dir() and (local / "config.json").is_file():
        return None
    if subfolder == "vae" and local.is_dir() and not (local / "vae").is_dir() and (local / "movq").is_dir():
        return "movq"
    if subfolder == "vae" and local.is_dir() and not (local / "vae").is_dir() and (local / "vocoder").is_dir() \
            and not (local / "audio_vae").is_dir():  # MiniMax Music 3's: its vocoder is its only decoder
        return "vocoder"
    return subfolder
