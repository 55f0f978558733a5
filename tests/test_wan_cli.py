"""`torchax-vae decode/encode/warmup --model DIR` on a Wan folder, in-process through `cli.main(argv)`."""

import json

import numpy as np
import pytest
import torch
from test_cli import imread, to_uint8

from helpers import TOLERANCE, assert_close, random_vae
from torchax_vae import cli
from torchax_vae.media import files
from torchax_vae.models.wan import WanVAE

ATOL = TOLERANCE[torch.float32]


@pytest.fixture(scope="module")
def wan_dir(tmp_path_factory):
    """A Wan pipeline folder (the Wan-AI/Wan2.1-T2V-1.3B-Diffusers layout) with only its vae/."""
    root = tmp_path_factory.mktemp("wan")
    random_vae("wan-tiny").save_pretrained(root / "vae")
    return root


def run(capsys, *args) -> str:
    code = cli.main([*map(str, args), "--no-cache", "--no-progress", "--json"])
    captured = capsys.readouterr()
    assert code == 0, f"exit {code}: {captured.err[-2000:]}"
    return captured.out


def test_decode_undoes_the_wan_normalization_as_the_pipeline_does(wan_dir, tmp_path, capsys):
    vae = random_vae("wan-tiny")
    # [B, C, F, H, W], normalized: what WanPipeline(output_type="latent") returns (before: read as [B, F, C, H, W])
    z = torch.randn(1, 16, 3, 4, 6, generator=torch.Generator().manual_seed(0))
    torch.save(z, tmp_path / "latents.pt")
    result = json.loads(run(capsys, "decode", tmp_path / "latents.pt", "-o", tmp_path / "video.mp4",
                            "--model", wan_dir))
    assert result["frames"] == 9 and result["programs"] == 2
    video = imread(tmp_path / "video.mp4")
    assert video.shape == (9, 32, 48, 3)
    shape = (1, 16, 1, 1, 1)
    mean = torch.tensor(vae.config.latents_mean).view(shape)
    inv_std = 1.0 / torch.tensor(vae.config.latents_std).view(shape)
    with torch.no_grad():  # WanPipeline: latents / latents_std + latents_mean, then decode
        expected = to_uint8(vae.decode(z / inv_std + mean).sample[0])
    files.write_mp4(tmp_path / "expected.mp4", expected)  # PyTorch's frames through the same (lossy) codec
    written = imread(tmp_path / "expected.mp4").astype(float)
    codec = np.abs(written - expected).max()
    error = np.abs(video.astype(float) - expected).max()
    assert error <= codec + 2, f"max |Δ| {error} of 255 against PyTorch's frames; the codec's own {codec}"


@pytest.mark.slow  # 13 s: the command's processes (its decode twin: every run) (CI: every sixth run)
def test_encode_applies_the_wan_normalization(wan_dir, tmp_path, capsys, monkeypatch):
    from torchax_vae.facade.session import EncodeSession

    chunks, encode = [], EncodeSession.encode
    monkeypatch.setattr(EncodeSession, "encode", lambda self, x: chunks.append(x.shape[2]) or encode(self, x))
    vae = random_vae("wan-tiny")
    frames = np.random.default_rng(0).integers(0, 256, (5, 32, 48, 3), dtype=np.uint8)
    files.write_mp4(tmp_path / "in.mp4", frames)
    x = torch.from_numpy(imread(tmp_path / "in.mp4")).permute(3, 0, 1, 2)[None].float() / 127.5 - 1
    result = json.loads(run(capsys, "encode", tmp_path / "in.mp4", "-o", tmp_path / "latents.npy",
                            "--model", wan_dir))
    assert result["latent_shape"] == [1, 16, 2, 4, 6] and result["layout"] == "BCFHW"  # as Wan's pipelines hold them
    # read and encoded a frame range at a time, as Wan's encoder takes them (torchax_vae/cli/streamed_encode.py)
    assert result["streamed"] and chunks == [1, 4]
    latents = torch.from_numpy(np.load(tmp_path / "latents.npy"))
    shape = (1, 16, 1, 1, 1)
    with torch.no_grad():  # WanVideoToVideoPipeline: (latents - latents_mean) * (1 / latents_std)
        mean = vae.encode(x).latent_dist.mean
        expected = (mean - torch.tensor(vae.config.latents_mean).view(shape)) * (
            1.0 / torch.tensor(vae.config.latents_std).view(shape))
    assert_close(latents, expected, ATOL, "encode command vs PyTorch")


def test_warmup_compiles_the_wan_programs(wan_dir, capsys):
    result = json.loads(run(capsys, "warmup", "--model", wan_dir, "--shape", "9,32,48", "--kind", "both"))
    assert result["decode"]["input_shape"] == [1, 16, 3, 4, 6]
    assert result["decode"]["programs"] == 2 and result["encode"]["programs"] == 2


def test_loading_picks_the_class_from_the_config(wan_dir):
    from torchax_vae import TorchaxVAE

    assert isinstance(TorchaxVAE.from_pretrained(str(wan_dir)), WanVAE)
