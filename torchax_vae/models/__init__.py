"""One adapter per diffusers VAE family: a `TorchaxVAE` subclass that knows that family's model class.

Each adapter module holds everything model-specific: the diffusers class it
accepts, how a video is cut into encoder and decoder calls and what cache they
carry, tiling, the patches it applies, the latent shape of a video and the
latent normalization its pipelines apply. The engine (torchax_vae.vae,
programs, sources, tiling, mesh) names no model class.

Adding a family: a module here with its `TorchaxVAE` subclass, listed in
`WRAPPERS`, its patches, and its tests.
"""

import sys

from .cogvideox import CogVideoXVAE
from .wan import WanVAE

__all__ = ["WRAPPERS", "input_shape", "wrapper_for", "wrapper_for_config"]

WRAPPERS = (CogVideoXVAE, WanVAE)


def supported() -> str:
    return ", ".join(w.model_class.__name__ for w in WRAPPERS)


def wrapper_for(vae) -> type:
    """The TorchaxVAE subclass for a diffusers model instance; TypeError for anything else."""
    for wrapper in WRAPPERS:
        if isinstance(vae, wrapper.model_class):
            return wrapper
    raise TypeError(f"vae must be one of diffusers' {supported()}, got {type(vae).__name__}")


def wrapper_for_config(class_name: str) -> type:
    """The TorchaxVAE subclass for a saved model's `_class_name`; ValueError for anything else."""
    for wrapper in WRAPPERS:
        if wrapper.model_class.__name__ == class_name:
            return wrapper
    raise ValueError(f"the model is a {class_name}; supported VAEs: {supported()}")


def input_shape(vae, kind: str, frames: int, height: int, width: int) -> tuple[int, ...]:
    """What a pipeline passes to `vae.encode` (the video) or `vae.decode` (its latents) for one video of this size.

    The one place outside the adapters that turns a video size into a call's input: the CLI's warm-up,
    bench, speed and the training script use it, through each family's `video_channels` and `latent_shape`.
    """
    wrapper = type(vae) if isinstance(vae, WRAPPERS) else wrapper_for(vae)  # a TorchaxVAE, or diffusers' model
    family = sys.modules[wrapper.__module__]
    video = (1, family.video_channels(vae.config), frames, height, width)
    return video if kind == "encode" else family.latent_shape(vae.config, video)
