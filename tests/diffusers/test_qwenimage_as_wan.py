"""diffusers' AutoencoderKLWan tests, run for AutoencoderKLQwenImage (diffusers has no test file for it).

AutoencoderKLQwenImage takes Wan 2.1's constructor arguments (base_dim, z_dim, dim_mult, num_res_blocks,
temperal_downsample, ...) and its blocks, so each of Wan's test classes (tests/models/autoencoders/
test_models_autoencoder_wan.py, vendored unmodified) runs again here with only `model_class` changed; the
harness (conftest.py) then wraps it in TorchaxVAE as for the other classes. Wan's single-file class is left
out: its checkpoint is Wan's.
"""

from diffusers import AutoencoderKLQwenImage

from tests.models.autoencoders import test_models_autoencoder_wan as wan


def _as_qwenimage(test_class):
    return type(test_class.__name__.replace("Wan", "QwenImage"), (test_class,),
                {"model_class": property(lambda self: AutoencoderKLQwenImage),
                 "__doc__": f"{test_class.__name__}, for AutoencoderKLQwenImage.",
                 "__module__": __name__})


TestAutoencoderKLQwenImage = _as_qwenimage(wan.TestAutoencoderKLWan)
TestAutoencoderKLQwenImageTraining = _as_qwenimage(wan.TestAutoencoderKLWanTraining)
TestAutoencoderKLQwenImageMemory = _as_qwenimage(wan.TestAutoencoderKLWanMemory)
TestAutoencoderKLQwenImageSlicingTiling = _as_qwenimage(wan.TestAutoencoderKLWanSlicingTiling)
