"""How the harness (conftest.py) and the output comparison (test_pipeline_outputs.py) wrap a pipeline's VAE."""

import contextlib

_PAUSED = [False]


@contextlib.contextmanager
def paused():
    """Nothing is wrapped while it lasts: the harness runs a test on plain diffusers inside the wrapped run's
    process (failures.py), to compare the two runs' failures."""
    _PAUSED[0] = True
    try:
        yield
    finally:
        _PAUSED[0] = False


def is_paused() -> bool:
    return _PAUSED[0]


def served_vae_classes() -> tuple[type, ...]:
    """The diffusers VAE classes a TorchaxVAE serves."""
    from torchax_vae.models import WRAPPERS

    return tuple(wrapper.model_class for wrapper in WRAPPERS)


def wrap_served_vaes(components: dict) -> dict:
    """The components with each served diffusers VAE wrapped, as a user writes `components["vae"] = TorchaxVAE(vae)`:
    whatever its name ("vae"; LDM's text-to-image pipeline calls its AutoencoderKL "vqvae")."""
    from torchax_vae import TorchaxVAE

    if is_paused():
        return components
    served = served_vae_classes()

    def wrap(value):  # a TorchaxVAE is an instance of its diffusers class too (isinstance holds): left as it is
        return TorchaxVAE(value) if isinstance(value, served) and not isinstance(value, TorchaxVAE) else value

    return {name: wrap(value) for name, value in components.items()}
