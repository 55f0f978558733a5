"""diffusers' AsymmetricAutoencoderKL (SD inpainting's asymmetric VAE) on JAX against the same model in PyTorch,
its decoder conditioned on the image and mask (models/asym_kl.py); StableDiffusionInpaintPipeline with it:
tests/diffusers/test_pipeline_outputs.py."""

import copy

import pytest
import torch
from diffusers import AsymmetricAutoencoderKL

from helpers import TOLERANCE, assert_close, bf16_check, check_encode_decode, randn
from torchax_vae import TorchaxVAE

ATOL = TOLERANCE[torch.float32]
# diffusers' own test config (tests/models/autoencoders/test_models_asymmetric_autoencoder_kl.py, 58eb52c) and one of
# three levels (4x), as SD's inpainting fast tests' VAE is shaped
CONFIGS = {
    "diffusers-test": dict(down_block_out_channels=[2, 4], up_block_out_channels=[2, 4], layers_per_down_block=1,
                           layers_per_up_block=1, latent_channels=4, norm_num_groups=2, sample_size=32,
                           down_block_types=["DownEncoderBlock2D"] * 2, up_block_types=["UpDecoderBlock2D"] * 2),
    "three-levels": dict(down_block_out_channels=[8, 16, 16], up_block_out_channels=[8, 16, 16],
                         layers_per_down_block=1, layers_per_up_block=1, latent_channels=4, norm_num_groups=4,
                         sample_size=32, down_block_types=["DownEncoderBlock2D"] * 3,
                         up_block_types=["UpDecoderBlock2D"] * 3),
}


def asymmetric(name: str) -> AsymmetricAutoencoderKL:
    torch.manual_seed(0)
    return AsymmetricAutoencoderKL(**CONFIGS[name]).eval()


def half_mask(batch: int, size: int) -> torch.Tensor:
    mask = torch.zeros(batch, 1, size, size)
    mask[..., size // 4: 3 * size // 4, size // 3:] = 1.0  # 1: repaint, 0: keep the image
    return mask


@torch.no_grad()
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_encode_decode_and_the_conditioned_decoder_match_pytorch(name):
    vae = asymmetric(name)
    ours = TorchaxVAE(vae)
    x = randn(2, 3, 32, 32, seed=1)
    check_encode_decode(vae, ours, x, name)
    z = vae.encode(x).latent_dist.mode()
    mask = half_mask(2, 32)
    expected = vae.decode(z, None, x, mask).sample
    assert_close(ours.decode(z, None, x, mask).sample, expected, ATOL, f"{name} decode(z, image, mask)")
    assert (expected - vae.decode(z).sample).abs().max() > 1e-2  # the condition changes the output
    assert_close(ours(x, mask).sample, vae(x, mask).sample, ATOL, f"{name} forward(sample, mask)")
    names = sorted(stats["name"] for stats in ours.compile_stats())
    assert names == ["decoder", "decoder+mask", "encoder"], names  # one program each, the condition its own


def test_interface_errors_bf16_and_saving(tmp_path):
    vae = asymmetric("three-levels")
    ours = TorchaxVAE(vae)
    assert isinstance(ours, AsymmetricAutoencoderKL)
    assert not any(hasattr(ours, name) for name in ("tiled_encode", "tiled_decode", "use_tiling", "use_slicing"))
    for method in ("enable_tiling", "enable_slicing"):
        with pytest.raises(NotImplementedError) as theirs:
            getattr(copy.deepcopy(vae), method)()
        with pytest.raises(NotImplementedError, match=str(theirs.value)):
            getattr(ours, method)()
    z = randn(1, 4, 8, 8, seed=2)
    with pytest.raises(ValueError, match=r"decode's mask must be a tensor \[1, 1, 32, 32\] for latents \(1, 4, 8, 8\)"):
        ours.decode(z, None, randn(1, 3, 32, 32), torch.ones(1, 1, 16, 16))
    with torch.no_grad():
        bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), randn(1, 3, 32, 32, seed=3), "asymmetric kl")
    ours.save_pretrained(tmp_path)
    with torch.no_grad():
        assert_close(AsymmetricAutoencoderKL.from_pretrained(tmp_path).decode(z).sample, vae.decode(z).sample, 0.0,
                     "plain diffusers, reloaded")


def test_plan_compiles_the_conditioned_decoder_the_pipeline_runs():
    """`plan` of a decode compiles the decoder conditioned on the image and mask (SD inpainting always passes both),
    for a GPU target, compiled offline; `precompile` compiles the unconditioned one an unconditioned decode runs."""
    ours = TorchaxVAE(asymmetric("three-levels"))
    planned = ours.plan("decode", (1, 4, 8, 8), "h100")
    assert [row.name for row in planned.programs] == ["decoder+mask"] and planned.fits
    assert [s["name"] for s in ours.precompile("decode", (1, 4, 8, 8))] == ["decoder"]
    encode = ours.plan("encode", (1, 3, 32, 32), "h100")
    assert [row.name for row in encode.programs] == ["encoder"]


def test_command_decodes_conditioned_on_the_pipelines_image_and_mask(tmp_path, capsys):
    """`torchax-vae decode latents.pt -o out.png --image init.png --mask mask.png`: the decoder conditioned on the
    files as StableDiffusionInpaintPipeline preprocesses them (diffusers' VaeImageProcessor), within one uint8 step of
    diffusers' decode; without them, unconditioned; a bad pairing or another VAE is one line, exit 2."""
    import numpy as np
    from diffusers.image_processor import VaeImageProcessor
    from PIL import Image

    from torchax_vae.cli import main

    vae = asymmetric("three-levels")
    vae.save_pretrained(tmp_path / "model" / "vae")
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 256, (40, 36, 3), dtype=np.uint8)).save(tmp_path / "init.png")  # resized, as
    mask = np.zeros((32, 32), np.uint8)                                                            # the pipeline does
    mask[8:24, 10:] = 255
    Image.fromarray(mask).save(tmp_path / "mask.png")
    z = randn(2, 4, 8, 8, seed=4)  # as the pipeline holds latents: scaled
    torch.save(z, tmp_path / "latents.pt")
    images = VaeImageProcessor(vae_scale_factor=4)
    masks = VaeImageProcessor(vae_scale_factor=4, do_normalize=False, do_binarize=True, do_convert_grayscale=True)
    image = images.preprocess(Image.open(tmp_path / "init.png").convert("RGB"), height=32, width=32).expand(2, -1, -1, -1)
    condition = masks.preprocess(Image.open(tmp_path / "mask.png"), height=32, width=32).expand(2, -1, -1, -1)
    with torch.no_grad():
        conditioned = vae.decode(z / vae.config.scaling_factor, image=image, mask=condition).sample
        plain = vae.decode(z / vae.config.scaling_factor).sample
    assert (conditioned - plain).abs().max() > 1e-2  # the condition changes the image
    args = ["--model", str(tmp_path / "model"), "--no-cache"]
    for extra, expected, out in ((["--image", str(tmp_path / "init.png"), "--mask", str(tmp_path / "mask.png")],
                                  conditioned, "inpainted.png"), ([], plain, "plain.png")):
        assert main(["decode", str(tmp_path / "latents.pt"), "-o", str(tmp_path / out), *extra, *args]) == 0
        levels = ((expected / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
        for i in range(2):
            got = np.asarray(Image.open(tmp_path / out.replace(".png", f"_{i}.png")))
            assert np.abs(got.astype(int) - levels[i]).max() <= 1, (out, i)
    capsys.readouterr()
    from helpers import random_vae

    random_vae("kl-tiny").save_pretrained(tmp_path / "kl" / "vae")
    for model, extra, message in (
            (tmp_path / "model", ["--image", str(tmp_path / "init.png")], "--image and --mask go together"),
            (tmp_path / "kl", ["--image", str(tmp_path / "init.png"), "--mask", str(tmp_path / "mask.png")],
             "this AutoencoderKL's decoder takes neither"),
            (tmp_path / "model", ["--image", str(tmp_path / "latents.pt"), "--mask", str(tmp_path / "mask.png")],
             "cannot read it as an image")):
        code = main(["decode", str(tmp_path / "latents.pt"), "-o", str(tmp_path / "x.png"), "--model", str(model),
                     *extra, "--no-cache"])
        err = capsys.readouterr().err
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_service_decodes_conditioned_on_the_image_and_mask(tmp_path):
    """The service's decode with `image_shape` and `mask_shape` (their bytes after the latents', serve/conditions.py)
    is the pipeline's `vae.decode(latents / scaling_factor, image=, mask=)` within 1e-4; without them,
    unconditioned; a condition for another VAE, a wrong size or a missing mask is a JSON 400, and the service goes
    on."""
    import json
    import urllib.error
    import urllib.request

    import numpy as np
    from diffusers.utils.remote_utils import remote_decode
    from serving import serving

    from helpers import random_vae
    from torchax_vae.serve import create_app
    from torchax_vae.serve.client import StreamError, decode_with_condition

    vae = asymmetric("three-levels")
    z, image, mask = randn(2, 4, 8, 8, seed=5), randn(2, 3, 32, 32, seed=6).clamp(-1, 1), half_mask(2, 32)
    with torch.no_grad():
        conditioned = vae.decode(z / vae.config.scaling_factor, image=image, mask=mask).sample
        plain = vae.decode(z / vae.config.scaling_factor).sample
    assert (conditioned - plain).abs().max() > 1e-2  # the condition changes the image
    with serving(create_app({"inpaint": TorchaxVAE(vae), "kl": TorchaxVAE(random_vae("kl-tiny"))})) as base:
        got = decode_with_condition(f"{base}/decode/inpaint", z, image, mask, do_scaling=True)
        assert_close(torch.from_numpy(got.copy()), conditioned, ATOL, "served decode(z, image, mask)")
        raw = remote_decode(endpoint=f"{base}/decode/inpaint", tensor=z, output_type="pt", return_type="pt")
        assert_close(raw, plain, ATOL, "served decode(z)")
        for endpoint, args, message in (
                ("kl", (randn(1, 4, 4, 4), randn(1, 3, 32, 32), half_mask(1, 32)), "decodes latents alone"),
                ("inpaint", (z, image, torch.ones(2, 1, 16, 16)), "the mask must be [2, 1, 32, 32]"),
                ("inpaint", (z[:1], image, mask), "the image must be [1, 3, 32, 32]")):
            with pytest.raises(StreamError, match=r"400: .*" + message.replace("[", r"\[").replace("]", r"\]")):
                decode_with_condition(f"{base}/decode/{endpoint}", *args)
        query = "shape=2&shape=4&shape=8&shape=8&image_shape=2&image_shape=3&image_shape=32&image_shape=32&dtype=float32"
        request = urllib.request.Request(f"{base}/decode/inpaint?{query}", method="POST",
                                         data=np.zeros(2 * 4 * 64 + 2 * 3 * 1024, np.float32).tobytes())
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request)
        assert refused.value.code == 400 and "send both" in json.loads(refused.value.read())["error"]
        again = decode_with_condition(f"{base}/decode/inpaint", z, image, mask, do_scaling=True)
        assert np.array_equal(again, got)  # nothing else disturbed


MESH_SCRIPT = """
import json, torch
from diffusers import AsymmetricAutoencoderKL
from test_asym_kl import CONFIGS, half_mask
from torchax_vae import TorchaxVAE, make_mesh
torch.manual_seed(0)
vae = AsymmetricAutoencoderKL(**CONFIGS["three-levels"]).eval()
ours = TorchaxVAE(vae, mesh=make_mesh())
x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(9))
mask = half_mask(2, 32)
with torch.no_grad():
    z = vae.encode(x).latent_dist.mode()
    rows = {"devices": ours.mesh.devices.size, "encode": (ours.encode(x).latent_dist.mode() - z).abs().max().item(),
            "decode": (ours.decode(z).sample - vae.decode(z).sample).abs().max().item(),
            "decode(z, image, mask)": (ours.decode(z, None, x, mask).sample
                                       - vae.decode(z, None, x, mask).sample).abs().max().item()}
print(json.dumps(rows))
"""


@pytest.mark.slow  # a second process on 8 virtual devices
def test_on_8_devices_matches_pytorch():
    from helpers import deltas_on_8_devices

    deltas_on_8_devices(MESH_SCRIPT, ATOL)
