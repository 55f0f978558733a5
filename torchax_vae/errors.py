"""The errors the command reports in one line (stdlib only: the command checks its arguments before torch loads)."""

__all__ = ["InputError", "WriteError"]


class InputError(ValueError):
    """A user-facing problem with a file or argument; its message is one line saying what and what was expected."""


class WriteError(OSError):
    """Writing an output failed (ffmpeg's own message, a full disk); the target was left as it was."""
