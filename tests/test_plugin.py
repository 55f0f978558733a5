"""A VAE of a user's own, defined here and not in the package: a small PyTorch autoencoder that is no diffusers class,
served through the registry alone (docs/guide/api.md, "Your own VAE"): decode, encode, a stream, a session, the command
(`--plugin test_plugin:TinyFrameFamily`) and the service, each compared with the same model in plain PyTorch."""

import json

import numpy as np
import pytest
import safetensors.torch
import torch
from diffusers.utils.remote_utils import remote_decode
from torch import nn

from helpers import randn
from serving import serving
from torchax_vae import TorchaxVAE, registry
from torchax_vae.cli import main
from torchax_vae.facade.plugins import register_family
from torchax_vae.models.plain import PlainFamily
from torchax_vae.serve import create_app

SPEC = "test_plugin:TinyFrameFamily"


class TinyFrameAutoencoder(nn.Module):
    """Each frame alone: 2x spatial compression, a mean and a log-variance per latent channel."""

    def __init__(self, channels: int = 3, latent: int = 4, width: int = 16):
        super().__init__()
        k, pad = (1, 3, 3), (0, 1, 1)
        self.encoder = nn.Sequential(nn.Conv3d(channels, width, k, stride=(1, 2, 2), padding=pad), nn.SiLU(),
                                     nn.Conv3d(width, 2 * latent, k, padding=pad))
        self.decoder = nn.Sequential(nn.Conv3d(latent, width, k, padding=pad), nn.SiLU(),
                                     nn.ConvTranspose3d(width, width, (1, 2, 2), stride=(1, 2, 2)), nn.SiLU(),
                                     nn.Conv3d(width, channels, k, padding=pad), nn.Tanh())


class TinyFrameFamily(PlainFamily):
    model_class = TinyFrameAutoencoder
    video_channels, latent_channels, spatial_compression_ratio = 3, 4, 2
    frame_wise = True

    @classmethod
    def load_model(cls, name_or_path, subfolder, **kwargs) -> nn.Module:
        """A folder holding config.json (its sizes) and model.safetensors."""
        import pathlib

        folder = pathlib.Path(name_or_path) / (subfolder or "")
        sizes = {k: v for k, v in json.loads((folder / "config.json").read_text()).items() if not k.startswith("_")}
        model = TinyFrameAutoencoder(**sizes)
        model.load_state_dict(safetensors.torch.load_file(folder / "model.safetensors"))
        return model.eval()


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return TinyFrameAutoencoder().eval()


@pytest.fixture(scope="module")
def registered():
    facade = register_family(TinyFrameFamily, label="tiny frames")
    yield facade
    registry.unregister(TinyFrameAutoencoder.__name__)


@pytest.fixture(scope="module")
def folder(model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny_frames")
    (folder / "config.json").write_text(json.dumps({"_class_name": "TinyFrameAutoencoder", "width": 16}))
    safetensors.torch.save_file(model.state_dict(), folder / "model.safetensors")
    return folder


def _close(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    """fp32 within 1e-4 of the output's peak: a 0.02 % error fails."""
    tolerance = 1e-4 * float(expected.abs().max())
    delta = float((actual - expected).abs().max())
    assert delta <= tolerance, f"{what}: max |Δ| {delta:.3g} > {tolerance:.3g} against the model in PyTorch"
    assert expected.std() > 1e-2, f"{what}: a near-constant reference proves nothing"


def test_decode_encode_stream_and_session_match_the_model_in_pytorch(model, registered):
    ours = TorchaxVAE(model)
    assert type(ours) is registered and isinstance(ours, TinyFrameAutoencoder)
    z = randn(1, 4, 5, 8, 8, seed=1)
    with torch.no_grad():
        expected = model.decoder(z)
        moments = model.encoder(expected)
    decoded = ours.decode(z).sample
    _close(decoded, expected, "decode")
    _close(ours.encode(expected).latent_dist.parameters, moments, "encode")
    streamed = torch.cat(list(ours.decode_stream(z)), dim=2)
    assert torch.equal(streamed, decoded), "a stream's chunks, joined, are decode's output bit for bit"
    with ours.decode_session() as session:
        chunks = [session.decode(z[:, :, a:b]) for a, b in ((0, 1), (1, 3), (3, 5))]
        chunks.append(session.finish())
    _close(torch.cat(chunks, dim=2), expected, "a decode session of chunks of 1, 2 and 2 latent frames")


def test_the_command_decodes_with_the_plugin(model, registered, folder, tmp_path):
    z = randn(1, 4, 3, 8, 8, seed=2)
    np.save(tmp_path / "z.npy", z.numpy())
    out = tmp_path / "frames.npy"
    status = main(["decode", str(tmp_path / "z.npy"), "-o", str(out), "--model", str(folder), "--plugin", SPEC,
                   "--no-progress", "--no-cache"])
    assert status == 0
    with torch.no_grad():
        expected = model.decoder(z)
    levels = ((expected / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8)[0].permute(1, 2, 3, 0).numpy()
    frames = np.load(out)
    assert frames.shape == levels.shape
    assert int(np.abs(frames.astype(int) - levels.astype(int)).max()) <= 1


def test_a_bad_plugin_is_an_input_error(folder, tmp_path, capsys):
    np.save(tmp_path / "z.npy", randn(1, 4, 1, 8, 8).numpy())
    for spec, words in (("no_colon", "expected MODULE:FAMILY"), ("test_plugin:Nothing", "has no Nothing"),
                        ("not_a_module_here:Family", "cannot import"), ("test_plugin:SPEC", "a Family subclass")):
        status = main(["decode", str(tmp_path / "z.npy"), "-o", str(tmp_path / "out.npy"), "--model", str(folder),
                       "--plugin", spec, "--no-progress", "--no-cache"])
        assert status == 2, spec
        assert words in capsys.readouterr().err, spec


def test_the_service_serves_the_plugin(model, registered, folder):
    z = randn(1, 4, 2, 8, 8, seed=3)
    with torch.no_grad():
        expected = model.decoder(z)
    with serving(create_app({"mine": str(folder)})) as base:
        answer = remote_decode(endpoint=f"{base}/decode/mine", tensor=z, output_type="pt", return_type="pt")
    _close(answer, expected, "the service's decode")
