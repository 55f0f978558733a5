"""AutoencoderKLKVAEVideo (Kandinsky's video VAE, KVAE 3D) through TorchaxVAE against the same model in plain PyTorch:
its segments of 16 frames carrying their caches (paddings and group-norm flags), streamed, in sessions, sliced, on
the mesh, in the command and the service (models/kvae_video.py)."""

import numpy as np
import pytest
import torch
from helpers import TOLERANCE, assert_close, bf16_check, needs, pair_fixture, randn

from torchax_vae import TorchaxVAE

pytestmark = needs("kvae-video-tiny")

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("kvae-video-tiny")


# One video of 16 x 16 pixels (8 x 8 latents) throughout, so that the file compiles few programs.


@pytest.mark.parametrize("frames", [3, 37])  # 37: segments of 17, 16 and 4 frames
def test_encode_matches_pytorch(pair, frames):
    """The segments' means and diffusers' zero log-variance."""
    vae, ours = pair
    x = randn(1, 3, frames, 16, 16, seed=frames)
    with torch.no_grad():
        expected = vae.encode(x).latent_dist
        mine = ours.encode(x).latent_dist
    assert_close(mine.parameters, expected.parameters, FP32, f"encode of {frames} frames")
    assert expected.mean.std() > 1e-2 and ours.latent_shape(tuple(x.shape)) == tuple(expected.mean.shape)
    assert_close(mine.sample(generator=torch.Generator().manual_seed(1)),
                 expected.sample(generator=torch.Generator().manual_seed(1)), FP32, "a draw (std 1)")


@pytest.mark.parametrize("latents,segments", [(1, [1]), (19, [17, 16, 4])])
def test_decode_and_its_stream_match_pytorch(pair, latents, segments):
    """decode within 1e-4 of diffusers'; decode_stream one chunk per decoder segment, joined equal to decode."""
    vae, ours = pair
    z = randn(1, 4, latents, 8, 8, seed=latents)
    with torch.no_grad():
        decoded = ours.decode(z).sample
        expected = vae.decode(z).sample
        assert expected.std() > 1e-2
        assert_close(decoded, expected, FP32, f"decode of {latents} latent frames")
        chunks = list(ours.decode_stream(z))
    assert [c.shape[2] for c in chunks] == segments
    assert torch.equal(torch.cat(chunks, 2), decoded)


def test_programs_do_not_grow_with_length(pair):
    """A first, a steady and a last segment's program: 27 latent frames (segments 9, 8, 8, 2) compile nothing that 19
    (9, 8, 2) did not."""
    vae, _ = pair
    ours = TorchaxVAE(vae)
    with torch.no_grad():
        ours.decode(randn(1, 4, 19, 8, 8))
        names = sorted(s["name"] for s in ours.compile_stats())
        ours.decode(randn(1, 4, 27, 8, 8, seed=1))
    assert sorted(s["name"] for s in ours.compile_stats()) == names == ["decoder", "decoder+cache", "decoder+cache"]


def test_sessions_follow_diffusers_segments(pair):
    """Sessions of chunks that end where diffusers' segments do (9 latent frames, then 8; 17 frames, then 16), the
    last one anywhere: within 1e-4 of diffusers' whole call; a chunk after one that ended inside a segment is
    refused (the group norms' statistics are a segment's), naming the sizes that work."""
    vae, ours = pair
    z, x = randn(1, 4, 19, 8, 8, seed=3), randn(1, 3, 37, 16, 16, seed=4)
    with torch.no_grad():
        with ours.decode_session() as session:
            frames = torch.cat([session.decode(c) for c in torch.split(z, [9, 8, 2], dim=2)], 2)
        assert_close(frames, vae.decode(z).sample, FP32, "decode session of 9, 8 and 2 latent frames")
        with ours.encode_session() as session:
            moments = torch.cat([session.encode(c).latent_dist.parameters
                                 for c in torch.split(x, [17, 20], dim=2)], 2)
        assert_close(moments, vae.encode(x).latent_dist.parameters, FP32, "encode session of 17 and 20 frames")
        with ours.decode_session() as session, pytest.raises(ValueError, match=r"end at 5 latent frames, inside .*"
                                                                               r"first chunk of 1 \+ 8k"):
            session.decode(z[:, :, :5])
            session.decode(z[:, :, 5:13])


def test_slicing_bad_input_and_the_interface(pair):
    vae, _ = pair
    ours = TorchaxVAE(vae)
    ours.enable_slicing()
    z = randn(2, 4, 3, 8, 8, seed=5)
    with torch.no_grad():
        assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, "sliced decode")
    with pytest.raises(ValueError, match=r"1 \+ 2k frames"):
        ours.encode(randn(1, 3, 4, 16, 16))
    with pytest.raises(ValueError, match="multiples of 2"):
        ours.encode(randn(1, 3, 3, 15, 16))
    for name in ("enable_tiling", "tiled_decode", "tiled_encode", "enable_slicing", "use_tiling"):
        assert hasattr(ours, name) == hasattr(vae, name), name
    assert isinstance(ours, type(vae)) and type(ours).__name__ == "KVAEVideoVAE"


@pytest.mark.slow  # (the default suite's time: CI's slow set runs it)
def test_bf16_and_saving(pair, tmp_path):
    vae, ours = pair
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), randn(1, 3, 5, 16, 16, seed=6), "KVAE video")
    ours.save_pretrained(tmp_path / "vae")
    plain = type(vae).from_pretrained(tmp_path / "vae")
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), vae.state_dict().values()))


@pytest.mark.slow  # (the default suite's time: CI's slow set runs it)
def test_command_and_service(pair, tmp_path, capsys):
    """`torchax-vae decode latents.pt -o out.npy`: diffusers' frames within one uint8 step (no latent
    normalization: no pipeline has one); the service's decode within 1e-4."""
    from diffusers.utils.remote_utils import remote_decode
    from serving import serving

    from torchax_vae.cli import main
    from torchax_vae.serve import create_app

    vae, _ = pair
    vae.save_pretrained(tmp_path / "model" / "vae")
    z = randn(1, 4, 5, 8, 8, seed=7)
    torch.save(z, tmp_path / "latents.pt")
    with torch.no_grad():
        expected = vae.decode(z).sample
    assert main(["decode", str(tmp_path / "latents.pt"), "-o", str(tmp_path / "out.npy"), "--model",
                 str(tmp_path / "model"), "--no-cache"]) == 0
    capsys.readouterr()
    levels = ((expected[0] / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 3, 0).numpy()
    assert np.abs(np.load(tmp_path / "out.npy").astype(int) - levels).max() <= 1
    with serving(create_app({"kvae": TorchaxVAE(vae)})) as base:
        raw = remote_decode(endpoint=f"{base}/decode/kvae", tensor=z, output_type="pt", return_type="pt")
    assert_close(raw, expected, FP32, "served decode")
