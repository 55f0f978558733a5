"""The harness that runs diffusers' remote-VAE tests (tests/remote, vendored unmodified) against this project's
service on this machine, with the unchanged client.

Those tests name Hugging Face's endpoints through `diffusers.utils.constants` (DECODE_ENDPOINT_SD_V1, ...),
read when their modules are imported; here those constants point at a local `torchax_vae.serve` app instead,
one route per endpoint, started once for the session. The encode tests' image comes from a URL; offline it is a
synthetic image of the same size. The hub is out of reach, so the served models have random weights:

- HunyuanVideo: a small `AutoencoderKLHunyuanVideo` with the released VAE's 16 latent channels and its 8x/4x
  compression, so the tests' latents give their 9 frames of 320x512.
- SD v1, SDXL, Flux: small `AutoencoderKL`s with the released VAEs' latent channels (4, 4, 16), 8x compression
  and `sample_size` (512, 1024, 1024: their untiled sizes), so the tests' latents decode to 512x512 and
  1024x1024 images and the encode tests' 512x512 image gives 64x64 latents; Flux's packed latents are unpacked
  as FluxPipeline does.

Tests that compare value slices of the released weights' outputs are expected failures here (random weights):
those within rtol 1e-3 and 1e-2, and for AutoencoderKL also the uint8 slices compared with rtol=1 and atol=1. Those
pass whenever the values are within a factor of two, which HunyuanVideo's seeded weights happen to meet (as would
any output of the right shape and range). tests/test_serve.py holds the served outputs to in-process ones.
"""

import sys

import pytest
from diffusers.utils import constants

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))  # tests/, for serving.py

from serving import free_port, serving  # noqa: E402

PORT = free_port()
BASE = f"http://127.0.0.1:{PORT}"
ROUTES = {
    "DECODE_ENDPOINT_SD_V1": "decode/sd-v1",
    "DECODE_ENDPOINT_SD_XL": "decode/sdxl",
    "DECODE_ENDPOINT_FLUX": "decode/flux",
    "DECODE_ENDPOINT_HUNYUAN_VIDEO": "decode/hunyuan-video",
    "ENCODE_ENDPOINT_SD_V1": "encode/sd-v1",
    "ENCODE_ENDPOINT_SD_XL": "encode/sdxl",
    "ENCODE_ENDPOINT_FLUX": "encode/flux",
}
# The encode tests' image (diffusers' documentation astronaut, 512x512 JPEG), offline.
IMAGE = ("https://huggingface.co/datasets/huggingface/documentation-images/resolve/main/diffusers/astronaut.jpg"
         "?download=true")

RELEASED_VALUES = ("compares a value slice of the released VAE's output; offline the service runs random weights "
                   "(the shapes, types and headers before it pass)")
_DECODE = "tests/remote/test_remote_decode.py::"
_TIGHT_SLICES = {  # test class -> its tests that compare value slices within rtol 1e-2 or tighter
    "RemoteAutoencoderKLHunyuanVideoTests": ("test_output_type_pt_return_type_pt",
                                             "test_output_type_pt_partial_postprocess_return_type_pt"),
    # and AutoencoderKL's, where the seeded weights' uint8 slices miss even rtol=1 (test_no_scaling, _pt)
    **{name: ("test_no_scaling", "test_output_type_pt", "test_output_type_pil_image_format",
              "test_output_type_pt_partial_postprocess", "test_output_type_pt_partial_postprocess_return_type_pt",
              "test_output_type_pt_return_type_pt")
       for name in ("RemoteAutoencoderKLSDv1Tests", "RemoteAutoencoderKLSDXLTests", "RemoteAutoencoderKLFluxTests",
                    "RemoteAutoencoderKLFluxPackedTests")},
}
# how each of them fails, recorded from a run: testing_utils.torch_all_close's assertion on the slice, no other (a
# shape, type, size or header the tests check before the slice fails them as any failure does)
SLICE_MISSED = r"^Max diff is absolute \d[\d.e-]*\. Diff tensor is tensor\("
EXPECTED_FAILURES = {f"{_DECODE}{cls}::{test}": RELEASED_VALUES for cls, tests in _TIGHT_SLICES.items()
                     for test in tests}


def point_endpoints_here() -> None:
    """Before the test modules import them: the endpoint constants name this machine's service."""
    for name, route in ROUTES.items():
        setattr(constants, name, f"{BASE}/{route}")
    import diffusers.utils

    real = diffusers.utils.load_image

    def load_image(image, *args, **kwargs):
        if image == IMAGE:
            import numpy as np
            from PIL import Image

            y, x = np.mgrid[0:512, 0:512]
            pixels = np.stack([x / 2, y / 2, (x + y) / 4], axis=-1).astype(np.uint8)
            return Image.fromarray(pixels)
        return real(image, *args, **kwargs)

    diffusers.utils.load_image = load_image


def expected_failure(node: str) -> str | None:
    """Why the test with this node id (relative to tests/diffusers) is expected to fail here, or None."""
    if not node.startswith("tests/remote/"):
        return None
    return EXPECTED_FAILURES.get(node)


def hunyuan_video():
    import torch
    from diffusers import AutoencoderKLHunyuanVideo

    torch.manual_seed(0)  # the weights, and so which value slices happen to fall within the tests' tolerance
    return AutoencoderKLHunyuanVideo(latent_channels=16, block_out_channels=(8, 8, 8, 8), layers_per_block=1,
                                     norm_num_groups=4).eval()


def autoencoder_kl(latent_channels: int, sample_size: int):
    """A small AutoencoderKL with 8x compression (four levels) and a released VAE's latent channels and tile size.

    No mid-block attention: at the tests' 128 x 128 latents it would be 16,384 tokens, 1 GiB of scores per call
    on 2 CPU cores, for tests of the protocol (tests/test_kl.py and test_patches.py check the attention)."""
    import torch
    from diffusers import AutoencoderKL

    torch.manual_seed(0)
    return AutoencoderKL(block_out_channels=(8, 8, 8, 8), down_block_types=("DownEncoderBlock2D",) * 4,
                         up_block_types=("UpDecoderBlock2D",) * 4, norm_num_groups=4, latent_channels=latent_channels,
                         sample_size=sample_size, mid_block_add_attention=False).eval()


@pytest.fixture(scope="session")
def remote_vae_service():
    from torchax_vae.serve import create_app

    models = {"hunyuan-video": hunyuan_video(), "sd-v1": autoencoder_kl(4, 512), "sdxl": autoencoder_kl(4, 1024),
              "flux": autoencoder_kl(16, 1024)}
    with serving(create_app(models), port=PORT) as url:
        yield url
