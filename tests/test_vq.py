"""VQModel (Kandinsky's MoVQ, latent diffusion's VQ-VAE) through TorchaxVAE against the same model in plain PyTorch."""


import pytest
import torch
from helpers import deltas_on_8_devices, BF16_ERROR_RATIO, TOLERANCE, assert_close, max_abs_diff, random_vae

from torchax_vae import TorchaxVAE

FP32 = TOLERANCE[torch.float32]


@pytest.fixture(scope="module", params=["vq-tiny", "movq-tiny"])
def pair(request):
    vae = random_vae(request.param)
    return request.param, vae, TorchaxVAE(vae)


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_encode_decode_and_forward_match_pytorch(pair):
    """Quantized (the codebook's nearest entries) and not (`force_not_quantize`, the Kandinsky pipelines'), with
    diffusers' commit loss; MoVQ's decoder takes the quantized latents as its spatial norm's condition."""
    name, vae, ours = pair
    x = randn(2, 3, 32, 48, seed=1)
    with torch.no_grad():
        h = vae.encode(x).latents
        assert_close(ours.encode(x).latents, h, FP32, f"{name} encode")
        for force in (False, True):
            theirs, mine = vae.decode(h, force_not_quantize=force), ours.decode(h, force_not_quantize=force)
            assert_close(mine.sample, theirs.sample, FP32, f"{name} decode, force_not_quantize={force}")
            assert_close(mine.commit_loss, theirs.commit_loss, 1e-6, f"{name} commit loss, force={force}")
        sample, loss = ours(x, return_dict=False)
        assert_close(sample, vae(x).sample, FP32, f"{name} forward")
    names = sorted(s["name"] for s in ours.compile_stats())
    assert names == ["decoder", "decoder+quantize", "encoder"], names  # one program per (shape, choice)


def test_precompile_and_plan_compile_the_pipelines_decoder(pair):
    """`precompile` and `plan` of a decode compile what the Kandinsky pipelines' stage 3 runs
    (`force_not_quantize=True`, the "decoder" program), so a warmed-up decode of theirs compiles nothing more."""
    from torchax_vae.plan import plan

    name, vae, _ = pair
    ours = TorchaxVAE(vae)
    stats = ours.precompile("decode", (1, vae.config.latent_channels, 8, 12))
    assert [s["name"] for s in stats] == ["decoder"], stats
    before = len(ours.compile_stats())
    ours.decode(randn(1, vae.config.latent_channels, 8, 12), force_not_quantize=True)
    assert len(ours.compile_stats()) == before, f"{name}: the pipelines' decode compiled again"
    planned = plan(ours, "decode", (1, vae.config.latent_channels, 8, 12), "h100")
    assert [p.name for p in planned.programs] == ["decoder"], planned.programs


def test_interface_as_diffusers_class(pair):
    name, vae, ours = pair
    assert type(ours).__name__ == "VQVAE" and isinstance(ours, type(vae))
    for attr in ("tiled_decode", "tiled_encode", "use_tiling", "use_slicing"):
        assert hasattr(ours, attr) == hasattr(vae, attr), attr
    for switch in ("enable_tiling", "enable_slicing"):  # diffusers' refuse a class without them
        with pytest.raises(NotImplementedError):
            getattr(vae, switch)()
        with pytest.raises(NotImplementedError):
            getattr(ours, switch)()
    assert ours.latent_channels == vae.config.vq_embed_dim or vae.config.latent_channels
    with pytest.raises(ValueError, match="codebook indices only with lookup_from_codebook"):  # not in this config
        ours.decode(torch.zeros(1, 16, dtype=torch.long), force_not_quantize=True, shape=(1, 4, 4, 3))
    with pytest.raises(ValueError, match="channels"):
        ours.decode(randn(1, 7, 8, 8))


def test_codebook_indices_decode_as_diffusers(pair):
    """`lookup_from_codebook` (aMUSEd's VQ-GAN): integer indices [B, H x W] and `shape` (B, H, W, C) decode to what
    diffusers' `decode(indices, force_not_quantize=True, shape=)` gives, the lookup on the device; indices outside
    the codebook, a shape that does not fit and a config without the lookup are refused before anything compiles."""
    name, vae, _ = pair
    model = type(vae).from_config(vae.config, lookup_from_codebook=True).eval()
    model.load_state_dict(vae.state_dict())
    ours = TorchaxVAE(model)
    entries, dim = model.quantize.embedding.weight.shape
    indices = torch.randint(0, entries, (2, 16 * 24), generator=torch.Generator().manual_seed(3))
    shape = (2, 16, 24, dim)
    with torch.no_grad():
        theirs = model.decode(indices, force_not_quantize=True, shape=shape)
        mine = ours.decode(indices, force_not_quantize=True, shape=shape)
    assert theirs.sample.std() > 1e-3  # an output that can tell a wrong lookup
    assert_close(mine.sample, theirs.sample, FP32, f"{name} decode of codebook indices")
    assert mine.commit_loss.dtype == theirs.commit_loss.dtype and not mine.commit_loss.any()
    for bad, says in ((indices + entries, f"run from {entries} to .* {entries} entries"),
                      (indices.float(), "expected an integer tensor")):
        with pytest.raises(ValueError, match=says):
            ours.decode(bad, force_not_quantize=True, shape=shape)
    with pytest.raises(ValueError, match="expected shape"):
        ours.decode(indices, force_not_quantize=True, shape=(2, 16, 16, dim))
    with pytest.raises(ValueError, match="only with lookup_from_codebook in its config and force_not_quantize"):
        ours.decode(indices, shape=shape)
    assert [s["name"] for s in ours.compile_stats()] == ["decoder"]  # the good call's, and nothing for the refusals


def test_torchax_inputs_keep_the_decode_and_its_loss_on_the_device(pair):
    """Latents already on the JAX device (a torchax tensor): the decode, diffusers' commit loss and the zero loss of
    `force_not_quantize` are computed there and come back as torchax tensors, within 1e-4 of diffusers'."""
    import jax

    name, vae, ours = pair
    env = ours._family.lowered.env
    h = randn(2, ours.latent_channels, 8, 8, seed=7)
    on_device = env.j2t_iso(jax.numpy.asarray(h.numpy()))
    with torch.no_grad():
        for force in (False, True):
            theirs, mine = vae.decode(h, force_not_quantize=force), ours.decode(on_device, force_not_quantize=force)
            sample = torch.from_numpy(jax.device_get(mine.sample._elem).copy())
            loss = torch.from_numpy(jax.device_get(mine.commit_loss._elem).copy())
            assert_close(sample, theirs.sample, FP32, f"{name} decode of a torchax tensor, force={force}")
            assert_close(loss, theirs.commit_loss, 1e-6, f"{name} commit loss on the device, force={force}")


def test_command_and_service_decode_as_the_kandinsky_pipelines(tmp_path, capsys):
    """Kandinsky 2.1/2.2/3's stage 3: `movq.decode(latents, force_not_quantize=True)`, then [-1, 1] to [0, 1]. The
    command finds the pipeline folder's movq/ (the default --subfolder vae falls back to it) and writes those images
    within one uint8 step; the service answers the same decode within 1e-4."""
    import numpy as np
    from diffusers.utils.remote_utils import remote_decode
    from PIL import Image
    from serving import serving

    from torchax_vae.cli import main
    from torchax_vae.serve import create_app

    vae = random_vae("movq-tiny")
    vae.save_pretrained(tmp_path / "pipeline" / "movq")
    z = randn(2, 4, 8, 8, seed=8)  # as KandinskyV22Pipeline(output_type="latent") returns them
    torch.save(z, tmp_path / "latents.pt")
    with torch.no_grad():
        expected = vae.decode(z, force_not_quantize=True).sample
        quantized = vae.decode(z).sample
    assert (expected - quantized).abs().max() > 1e-2  # the two decodes differ: the test can tell them
    assert main(["decode", str(tmp_path / "latents.pt"), "-o", str(tmp_path / "out.png"), "--model",
                 str(tmp_path / "pipeline"), "--no-cache"]) == 0
    levels = ((expected * 0.5 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    for i in range(2):
        got = np.asarray(Image.open(tmp_path / f"out_{i}.png"))
        assert np.abs(got.astype(int) - levels[i]).max() <= 1, i
    capsys.readouterr()
    with serving(create_app({"movq": TorchaxVAE(vae)})) as base:
        served = remote_decode(endpoint=f"{base}/decode/movq", tensor=z, output_type="pt", return_type="pt")
    assert_close(served, expected, FP32, "served MoVQ decode")


def test_bf16_saving_and_loading(tmp_path):
    vae = random_vae("movq-tiny")
    x = randn(1, 3, 32, 32, seed=2)
    ours = TorchaxVAE(vae, dtype=torch.bfloat16)
    with torch.no_grad():
        h = vae.encode(x).latents
        reference = vae.decode(h, force_not_quantize=True).sample
        torch_bf16 = random_vae("movq-tiny").to(torch.bfloat16)
        theirs = max_abs_diff(torch_bf16.decode(h.bfloat16(), force_not_quantize=True).sample, reference)
        mine = max_abs_diff(ours.decode(h.bfloat16(), force_not_quantize=True).sample, reference)
    assert mine <= BF16_ERROR_RATIO * theirs, f"bf16 decode: max |Δ| {mine:.3g}, PyTorch bf16's {theirs:.3g}"
    TorchaxVAE(vae).save_pretrained(tmp_path / "vae")
    plain = type(vae).from_pretrained(tmp_path / "vae")
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), vae.state_dict().values()))


MESH_SCRIPT = """
import json, torch
from helpers import random_vae
from torchax_vae import TorchaxVAE, make_mesh
vae = random_vae("movq-tiny")
ours = TorchaxVAE(vae, mesh=make_mesh())
x = torch.randn(2, 3, 32, 64, generator=torch.Generator().manual_seed(9))
with torch.no_grad():
    h = vae.encode(x).latents
    rows = {"devices": ours.mesh.devices.size, "encode": (ours.encode(x).latents - h).abs().max().item(),
            "decode": (ours.decode(h).sample - vae.decode(h).sample).abs().max().item(),
            "decode, not quantized": (ours.decode(h, force_not_quantize=True).sample
                                      - vae.decode(h, force_not_quantize=True).sample).abs().max().item()}
print(json.dumps(rows))
"""


@pytest.mark.slow  # a second process on 8 virtual devices
@pytest.mark.rotate  # beyond the contract's mesh check (tests/contract): in CI a slice of these at a time
def test_on_8_devices_matches_pytorch():
    deltas_on_8_devices(MESH_SCRIPT, FP32)
