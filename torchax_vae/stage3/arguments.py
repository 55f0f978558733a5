"""The `torchax-vae` command's argument types: argparse `type=` functions that turn a word into a value or say,
in one line, what was expected (standard library only: the command checks its arguments before torch, JAX and
diffusers are imported)."""

import argparse
import math

from torchax_vae.media.checks import MAX_FPS

__all__ = ["fps", "plan_shape", "positive", "shape", "size"]


def shape(text: str) -> tuple[int, int, int]:
    try:
        frames, height, width = (int(n) for n in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected FRAMES,HEIGHT,WIDTH (e.g. 49,480,720), got {text!r}") from None
    if min(frames, height, width) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive, got {text!r}")
    return frames, height, width


def plan_shape(text: str) -> tuple[int, ...]:
    try:
        numbers = tuple(int(n) for n in text.split(","))
    except ValueError:
        numbers = ()
    if len(numbers) not in (3, 4, 5):
        raise argparse.ArgumentTypeError(f"expected B,C,F,H,W (the encode or decode input, e.g. 1,16,13,60,90), a "
                                         f"video's FRAMES,HEIGHT,WIDTH (e.g. 49,480,720), B,C,H,W (an image VAE's "
                                         f"input; LTX-2's spectrograms B,C,T,MEL), or an audio VAE's B,C,T, "
                                         f"got {text!r}")
    if min(numbers) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive, got {text!r}")
    return numbers


def size(text: str) -> tuple[int, int]:
    try:
        height, width = (int(n) for n in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected HEIGHTxWIDTH (e.g. 1328x1328), got {text!r}") from None
    if min(height, width) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive, got {text!r}")
    return height, width


def positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive {kind.__name__}, got {text!r}") from None
        if not (value > 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"must be a positive {kind.__name__}, got {text!r}")
        return value

    return parse


def fps(text: str) -> float:
    value = positive(float)(text)
    if value > MAX_FPS:
        raise argparse.ArgumentTypeError(f"at most {MAX_FPS} frames per second, got {text!r}")
    return value


PLUGIN_HELP = ("MODULE:FAMILY: a VAE of your own (docs/guide/api.md, \"Your own VAE\"): the family Python imports from MODULE, "
               "registered before the model loads; its folder's config.json names its model class; repeatable")
