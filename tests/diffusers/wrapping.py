"""How the harness (conftest.py) and the output comparison (test_pipeline_outputs.py) wrap a pipeline's VAE.

Three modes: wrapped (a served VAE becomes `TorchaxVAE(vae)`, as a user writes it), paused (plain diffusers, left
as it is) and float64 (plain diffusers' VAE computing in float64: the referee of failures.py). `wrap` is the one
place that applies the mode.
"""

import contextlib
import copy

_MODE = ["wrapped"]


@contextlib.contextmanager
def _mode(mode: str):
    _MODE[0] = mode
    try:
        yield
    finally:
        _MODE[0] = "wrapped"


def paused():
    """Nothing is wrapped while it lasts: the harness runs a test on plain diffusers inside the wrapped run's
    process (failures.py), to compare the two runs' failures."""
    return _mode("paused")


def float64():
    """While it lasts, each served VAE is plain diffusers' own, computing its encodes and decodes in float64
    (`float64_vae`): the referee of a value-slice test whose input leaves plain diffusers' float32 VAE far from
    exact arithmetic (failures.py)."""
    return _mode("float64")


def served_vae_classes() -> tuple[type, ...]:
    """The diffusers VAE classes a TorchaxVAE serves."""
    from torchax_vae.models import WRAPPERS

    return tuple(wrapper.model_class for wrapper in WRAPPERS)


def wrap(model):
    """A served diffusers VAE as the mode has it: a TorchaxVAE, itself, or itself computing in float64."""
    from torchax_vae import TorchaxVAE

    if isinstance(model, TorchaxVAE):  # a TorchaxVAE is an instance of its diffusers class too: left as it is
        return model
    return {"wrapped": TorchaxVAE, "paused": lambda m: m, "float64": float64_vae}[_MODE[0]](model)


def wrap_served_vaes(components: dict) -> dict:
    """The components with each served diffusers VAE wrapped (`wrap`), as a user writes
    `components["vae"] = TorchaxVAE(vae)`: whatever its name ("vae"; LDM's text-to-image pipeline calls its
    AutoencoderKL "vqvae")."""
    served = served_vae_classes()
    return {name: wrap(value) if isinstance(value, served) else value for name, value in components.items()}


def float64_vae(model):
    """`model` (a diffusers VAE, its parameters and dtype as they were) whose `encode` and `decode` run a float64
    copy of it, made at each call (so the flags a test sets, slicing or tiling, hold), taking and giving the
    caller's dtype. Its class is a subclass of the model's made here; a copy of it is plain diffusers again."""
    base = type(model)

    def twin(self):
        double = copy.deepcopy(self)
        double.__class__ = base
        return double.double()

    def encode(self, x, *args, **kwargs):
        return _cast(twin(self).encode(_cast(x, "float64"), *args, **kwargs), x.dtype)

    def decode(self, z, *args, **kwargs):
        return _cast(twin(self).decode(_cast(z, "float64"), *args, **kwargs), z.dtype)

    model.__class__ = type(f"Float64{base.__name__}", (base,), {"encode": encode, "decode": decode})
    return model


def _cast(value, dtype):
    """Floating-point tensors in `value` (a tensor, a tuple, a diffusers output or latent distribution) cast."""
    import torch
    from diffusers.models.autoencoders.vae import DiagonalGaussianDistribution
    from diffusers.utils import BaseOutput

    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, tuple):
        return tuple(_cast(v, dtype) for v in value)
    if isinstance(value, BaseOutput):
        return type(value)(**{k: _cast(v, dtype) for k, v in value.items()})
    if isinstance(value, DiagonalGaussianDistribution):
        return DiagonalGaussianDistribution(value.parameters.to(dtype), deterministic=value.deterministic)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"the float64 referee cannot cast a {type(value).__name__} back to {dtype}")
