"""Run diffusers' video VAEs (CogVideoX, Wan 2.1 and 2.2) on JAX devices through torchax, unmodified.

    from torchax_vae import TorchaxVAE
    pipe.vae = TorchaxVAE(pipe.vae)
    pipe.vae = TorchaxVAE(pipe.vae, mesh=make_mesh())  # every device, width-sharded
"""

from .mesh import make_mesh
from .programs import clear_shared as clear_compiled
from .vae import TorchaxVAE

__version__ = "0.1.0"
__all__ = ["TorchaxVAE", "clear_compiled", "make_mesh", "__version__"]
