"""Run diffusers' VAEs (SD/SDXL/SD3/Flux, SD inpainting, the consistency decoder, Kandinsky's MoVQ and KVAE, Flux.2, Sana, HunyuanImage 2.1, the HunyuanImage 2.1 refiner, TAESD, Stable Video Diffusion, RAE, CogVideoX, Wan 2.1 and 2.2, Qwen-Image, Qwen-Image 2.1, HunyuanVideo, HunyuanVideo 1.5, LTX-Video, LTX-2 with its sound (the LTX-2 audio VAE and LTX-2 vocoders), MiniMax H3 (and the MiniMax H3 audio VAE), Allegro, Mochi, Cosmos, EasyAnimate, Kandinsky 6 SR (video super-resolution), KVAE video, VidTok; Kandinsky 6's sound (the Kandinsky 6 audio VAE and Kandinsky 6 vocoder); the Cosmos 3 sound tokenizer; Stable Audio's, Stable Audio 3's and LongCat audio's audio VAEs, KVAE-Audio; MiniMax Music 3's vocoder) on JAX devices through torchax, unmodified.

    from torchax_vae import TorchaxVAE
    pipe.vae = TorchaxVAE(pipe.vae)
    pipe.vae = TorchaxVAE(pipe.vae, mesh=make_mesh())  # every device, width-sharded

The names below load on first use (PEP 562), so that `torchax-vae` can check
its arguments before torch, JAX and diffusers are imported.
"""

import contextlib
import importlib
import warnings
from pathlib import Path

__version__ = "0.1.0"
__all__ = ["TorchaxVAE", "clear_compiled", "make_mesh", "__version__"]

# The diffusers classes TorchaxVAE serves, and their families' names: the one list the command's help is made
# from, and that tests/test_interface.py::test_family_lists_agree holds the adapters (models.WRAPPERS), the
# docstrings, pyproject's description and the README to.
FAMILIES = {
    "AutoencoderKL": "SD/SDXL/SD3/Flux",  # images
    "AutoencoderKLFlux2": "Flux.2",  # images
    "AutoencoderDC": "Sana",  # images
    "AutoencoderKLHunyuanImage": "HunyuanImage 2.1",  # images
    "AutoencoderKLHunyuanImageRefiner": "HunyuanImage 2.1 refiner",  # one-frame videos, untiled; diffusers >= 0.42
    "AutoencoderTiny": "TAESD",  # images
    "AsymmetricAutoencoderKL": "SD inpainting",  # images, a decoder conditioned on image and mask
    "VQModel": "Kandinsky's MoVQ",  # images, a codebook (Kandinsky 2.1/2.2/3, latent diffusion's VQ-VAE)
    "AutoencoderKLTemporalDecoder": "Stable Video Diffusion",  # images in, a video's frames out
    "AutoencoderKLCogVideoX": "CogVideoX",
    "AutoencoderKLWan": "Wan",
    "AutoencoderKLQwenImage": "Qwen-Image",
    "AutoencoderKLHunyuanVideo": "HunyuanVideo",
    "AutoencoderKLHunyuanVideo15": "HunyuanVideo 1.5",
    "AutoencoderKLLTXVideo": "LTX-Video",
    "AutoencoderKLLTX2Video": "LTX-2",  # diffusers >= 0.37
    "AutoencoderKLLTX2Audio": "LTX-2 audio VAE",  # sound: a spectrogram VAE; diffusers >= 0.37
    "LTX2Vocoder": "LTX-2 vocoders",  # sound: spectrogram -> waveform (its `forward`)
    "LTX2VocoderWithBWE": "LTX-2 vocoders",  # LTX-2.3's
    "AutoencoderKLQwenImage21": "Qwen-Image 2.1",  # diffusers >= 0.42
    "AutoencoderKLMiniMaxH3": "MiniMax H3",  # diffusers >= 0.42; ImageNet-normalized pixels
    "AutoencoderKLMiniMaxH3Audio": "MiniMax H3 audio VAE",  # sound: mono waveforms; diffusers >= 0.42
    "AutoencoderKLAllegro": "Allegro",
    "AutoencoderKLMochi": "Mochi",
    "AutoencoderKLCosmos": "Cosmos",
    "AutoencoderKLMagvit": "EasyAnimate",
    "AutoencoderOobleck": "Stable Audio",  # sound alone: stereo waveforms [B, 2, samples]
    "MMAudioVAE": "Kandinsky 6 audio VAE",  # sound: latents -> a log-mel spectrogram; diffusers >= 0.42
    "MMAudioVocoder": "Kandinsky 6 vocoder",  # sound: spectrogram -> mono waveform; diffusers >= 0.42
    "LongCatAudioDiTVae": "LongCat audio",  # sound alone: mono waveforms [B, 1, samples]; diffusers >= 0.42
    "Cosmos3AVAEAudioTokenizer": "Cosmos 3 sound tokenizer",  # its decode; diffusers >= 0.42
    "AutoencoderSAME": "Stable Audio 3",  # sound alone: stereo waveforms, no posterior; diffusers >= 0.42
    "AutoencoderKLKVAE": "KVAE",  # Kandinsky's image VAE (no pipeline); diffusers >= 0.42
    "AutoencoderKLKVAEAudio": "KVAE-Audio",  # Kandinsky's audio VAE (no pipeline): waveforms; diffusers >= 0.42
    "AutoencoderKLKVAEVideo": "KVAE video",  # Kandinsky's video VAE (no pipeline): segments with caches; diffusers >= 0.42
    "ConsistencyDecoderVAE": "the consistency decoder",  # SD 1.x's `vae=`: a two-step UNet decoder, its noise drawn
    "MiniMaxMusic3Vocoder": "MiniMax Music 3",  # sound alone: latents -> stereo waveforms; diffusers >= 0.42
    "Kandinsky6SRVAE": "Kandinsky 6 SR",  # video segments carrying their paddings; diffusers >= 0.42
    "AutoencoderRAE": "RAE",  # images: a DINOv2/SigLIP2/MAE encoder, a ViT decoder (no pipeline); diffusers >= 0.37
    "AutoencoderVidTok": "VidTok",  # Microsoft's video tokenizer, KL or FSQ latents (no pipeline); diffusers >= 0.38
}

_LAZY = {"TorchaxVAE": ("vae", "TorchaxVAE"), "make_mesh": ("mesh", "make_mesh"), "clear_compiled": ("programs", "clear_shared")}

# In a source checkout `patches/` sits beside this folder and is installed as torchax_vae.patches; when
# Python imports this folder itself (run from the repository after a non-editable install), find it there.
_SOURCE_PATCHES = Path(__file__).resolve().parent.parent / "patches"
if not (Path(__file__).resolve().parent / "patches").is_dir() and (_SOURCE_PATCHES / "__init__.py").is_file():
    __path__.append(str(_SOURCE_PATCHES.parent))


@contextlib.contextmanager
def quiet_diffusers_import():
    """diffusers 0.36's package import runs its Kandinsky 5 transformer's `@torch.autocast(device_type="cuda")`
    decorators, which warn "CUDA is not available ..." twice on a machine without CUDA, though no VAE uses them.
    Kept out of this package's first import (and the command's run) only: no process-wide filter."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="CUDA is not available or torch_xla is imported", category=UserWarning)
        yield


def __getattr__(name):
    if name in _LAZY:
        module, attr = _LAZY[name]
        with quiet_diffusers_import():
            value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
