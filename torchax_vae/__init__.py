"""Run diffusers' CogVideoX video VAE on JAX devices through torchax, unmodified.

    from torchax_vae import TorchaxVAE
    pipe.vae = TorchaxVAE(pipe.vae)
"""

from .vae import TorchaxVAE

__version__ = "0.1.0"
__all__ = ["TorchaxVAE", "__version__"]
