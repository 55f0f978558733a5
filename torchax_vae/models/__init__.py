"""One adapter module per diffusers VAE class: its family (torchax_vae/facade/family.py) and the facade class named for it.

Each adapter module holds everything model-specific: the family, with the
diffusers class it runs, how a video is cut into encoder and decoder calls and
what cache they carry, tiling, the patches it applies, the latent shape of a
video and the latent normalization its pipelines apply; and the `TorchaxVAE`
class that holds it (`WanVAE`, ...: the name saved pipelines' model_index.json
gives), with what diffusers' class differs in at its interface. The engine
(torchax_vae.facade.vae, engine, programs, sources, tiling, mesh) names no model class.

Adding a family: docs/guide/families.md (a module here with its `Family`, often of a
shared scheme: `feat_cache.FeatCache`, `windows.Windows`; its facade class;
its row in torchax_vae/registry.py; its tests).
"""

from torchax_vae import registry
from torchax_vae.media.checks import vae_subfolder  # noqa: F401 (where the VAE is in a folder: the command's and the loaders')
from torchax_vae.facade.loading import load_diffusers, load_meta  # noqa: F401 (their old home)
from torchax_vae.facade.vae import TorchaxVAE

__all__ = ["WRAPPERS", "input_shape", "load_diffusers", "load_meta", "wrapper_for", "wrapper_for_config"]

# The facade classes of every class the installed diffusers has, in the registry's order (torchax_vae/registry.py:
# the one list; each family module is imported from its row by name).
WRAPPERS = tuple(found for row in registry.ROWS if registry.served_here(row) and (found := registry.loaded(row)))
supported = registry.supported
wrapper_for = registry.facade_for  # the TorchaxVAE subclass for a diffusers model instance; TypeError for others
wrapper_for_config = registry.facade_for_class_name  # ... for a saved model's `_class_name`; ValueError for others


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
