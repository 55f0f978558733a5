"""Video files in: read whole, or a frame at a time in order (what `torchax-vae encode` streams), with clear errors.

imageio-ffmpeg decodes; `quiet_ffmpeg` (files.py) keeps its subprocess's warnings from the user.
"""

import contextlib
import pathlib

import numpy as np

from torchax_vae.media.checks import LATENT_SUFFIXES, InputError, check_readable
from torchax_vae.media.files import quiet_ffmpeg

__all__ = ["check_video_file", "read_video", "video_frames", "count_frames"]


def check_video_file(path) -> pathlib.Path:
    """The path of a readable, non-empty file that is not a latents file (InputError otherwise)."""
    path = check_readable(path, "video file")
    if path.suffix.lower() in LATENT_SUFFIXES:
        raise InputError(f"{path} is a latents file ({path.suffix}), not a video: encode takes a video ffmpeg reads "
                         "(e.g. .mp4); `torchax-vae decode` turns latents into one")
    if path.stat().st_size == 0:
        raise InputError(f"video file {path} is empty")
    return path


def _reason(path, e: Exception) -> InputError:
    return InputError(f"cannot read video {path}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")


@contextlib.contextmanager
def video_frames(path, channels: int = 3):
    """(fps, frames) of a video or image file: `frames` yields uint8 [H, W, channels] frames in order, each read
    from ffmpeg as it is asked for, so only the frames a caller keeps are held. ffmpeg stops when the block ends.

    channels: 3 (RGB) or 4 (RGBA: an image's alpha, or opaque where the file has none).
    """
    import imageio_ffmpeg

    path = check_video_file(path)
    with quiet_ffmpeg():
        try:
            reader = imageio_ffmpeg.read_frames(str(path), pix_fmt="rgba" if channels == 4 else "rgb24", bpp=channels)
            meta = next(reader)
        except Exception as e:
            raise _reason(path, e) from None
        width, height = meta["size"]

        def frames():
            while True:
                try:
                    raw = next(reader)
                except StopIteration:
                    return
                except Exception as e:
                    raise _reason(path, e) from None
                yield np.frombuffer(raw, np.uint8).reshape(height, width, channels)

        try:
            yield float(meta.get("fps", 8)), frames()
        finally:
            reader.close()
            reader = None  # freed inside quiet_ffmpeg, which collects its pipes


def read_video(path, frames: int | None = None, channels: int = 3) -> tuple[np.ndarray, float]:
    """uint8 frames [F, H, W, channels] and fps from a video or image file (imageio-ffmpeg); at most `frames` frames."""
    out = []
    with video_frames(path, channels) as (fps, each):
        for frame in each:
            out.append(frame)
            if frames is not None and len(out) == frames:
                break
    if not out:
        raise InputError(f"video {path} has no frames")
    return np.stack(out), fps


def count_frames(path) -> int:
    """The frames of a video file, counted by decoding it (ffmpeg; no frame is kept)."""
    import imageio_ffmpeg

    path = check_video_file(path)
    with quiet_ffmpeg():
        try:
            return imageio_ffmpeg.count_frames_and_secs(str(path))[0]
        except Exception as e:
            raise _reason(path, e) from None
