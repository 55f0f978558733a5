"""Checks of paths and the errors the command reports in one line, with the standard library only.

`torchax-vae` runs these before torch, JAX and diffusers are imported, so a
mistake comes back at once; `files` runs the same ones for Python callers.
"""

import os
import pathlib

__all__ = ["InputError", "WriteError", "LATENT_SUFFIXES", "VIDEO_SUFFIXES", "check_readable", "check_writable"]

LATENT_SUFFIXES = (".pt", ".pth", ".safetensors", ".npy")
VIDEO_SUFFIXES = (".mp4", ".npy")  # a decoded video: H.264 (lossy) or the exact uint8 frames


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
    """InputError unless a file (ending in one of `suffixes`) can be created at `path`."""
    path = pathlib.Path(path)
    if suffixes and path.suffix.lower() not in suffixes:
        raise InputError(f"output {path} must end in {' or '.join(suffixes)}")
    folder = path.parent
    if path.is_dir():
        raise InputError(f"cannot write {path}: it is a folder")
    if not folder.is_dir():
        raise InputError(f"cannot write {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"cannot write {path}: folder {folder} is not writable")
    return path
