"""Kandinsky6SRVAE (Kandinsky 6's video super-resolution VAE) through TorchaxVAE against the same model in plain
PyTorch: its segments of 16 frames carrying their causal paddings, streamed, in sessions, and in its pipeline."""

import warnings

import numpy as np
import pytest
import torch
from helpers import TOLERANCE, assert_close, bf16_check, needs, pair_fixture, randn

from torchax_vae import TorchaxVAE

pytestmark = needs("kandinsky6-sr-tiny")

FP32 = TOLERANCE[torch.float32]
PIXEL = 128 / 255  # the pipeline's pixels: (sample + 1) * 128 / 255


pair = pair_fixture("kandinsky6-sr-tiny")


def _pipeline_levels(sample: torch.Tensor) -> torch.Tensor:
    """Kandinsky6SRPipeline's decode_latents and postprocess, as uint8 [F, H, W, C] of the first video."""
    video = ((sample + 1) * (128 / 127.5) - 1).clamp(-1, 1)
    return ((video / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8)[0].permute(1, 2, 3, 0)


# The tests share their programs' shapes (one video of 16 x 16 pixels, 2 x 2 latents), so that the file compiles
# few: a first, a steady and a last segment's each way, and the one-frame ones.


@pytest.mark.parametrize("frames", [1, 37])  # 37: segments of 17, 16 and 4 frames
def test_encode_matches_pytorch(pair, frames):
    vae, ours = pair
    x = randn(1, 3, frames, 16, 16, seed=frames)
    with torch.no_grad():
        expected = vae.encode(x).latent_dist.parameters
        assert_close(ours.encode(x).latent_dist.parameters, expected, FP32, f"encode of {frames} frames")
    assert ours.latent_shape(tuple(x.shape)) == (1, 4, *expected.shape[2:])


@pytest.mark.parametrize("latents,segments", [(1, [1]), (10, [17, 16, 4])])
def test_decode_and_its_stream_match_pytorch(pair, latents, segments):
    """decode within 1e-4 of diffusers'; decode_stream one chunk per decoder segment, joined equal to decode."""
    vae, ours = pair
    z = randn(1, 4, latents, 2, 2, seed=latents)
    with torch.no_grad():
        decoded = ours.decode(z).sample
        assert_close(decoded, vae.decode(z).sample, FP32, f"decode of {latents} latent frames")
        chunks = list(ours.decode_stream(z))
    assert [c.shape[2] for c in chunks] == segments
    assert torch.equal(torch.cat(chunks, 2), decoded)


def test_programs_do_not_grow_with_length(pair):
    """A first, a steady and a last segment's program per direction: 14 latent frames (segments 5, 4, 4, 1) compile
    nothing that 10 (5, 4, 1) did not."""
    vae, _ = pair
    ours = TorchaxVAE(vae)
    with torch.no_grad():
        ours.decode(randn(1, 4, 10, 2, 2))
        names = sorted(s["name"] for s in ours.compile_stats())
        ours.decode(randn(1, 4, 14, 2, 2, seed=1))
    assert sorted(s["name"] for s in ours.compile_stats()) == names == ["decoder", "decoder+cache", "decoder+cache"]


def test_sessions_carry_the_paddings(pair):
    """A decode session takes latent chunks of any size, an encode session 1 + 4k frames then multiples of 4: both
    within 1e-4 of diffusers' whole call, cut otherwise than diffusers' segments; other video chunks are refused
    with the sizes that work."""
    vae, ours = pair
    z, x = randn(1, 4, 10, 2, 2, seed=3), randn(1, 3, 37, 16, 16, seed=4)
    with torch.no_grad():
        with ours.decode_session() as session:  # segments of 1, 4, 4 and 1 latent frames (diffusers': 5, 4, 1)
            frames = torch.cat([session.decode(c) for c in torch.split(z, [1, 4, 5], dim=2)], 2)
        assert_close(frames, vae.decode(z).sample, FP32, "decode session of 1, 4 and 5 latent frames")
        with ours.encode_session() as session:  # segments of 1, 16, 16 and 4 frames (diffusers': 17, 16, 4)
            moments = torch.cat([session.encode(c).latent_dist.parameters
                                 for c in torch.split(x, [1, 16, 20], dim=2)], 2)
        assert_close(moments, vae.encode(x).latent_dist.parameters, FP32, "encode session of 1, 16 and 20 frames")
        with ours.encode_session() as session, pytest.raises(ValueError, match="1 \\+ 4k"):
            session.encode(x[:, :, :4])
        with ours.encode_session() as session, pytest.raises(ValueError, match="multiple of 4"):
            session.encode(x[:, :, :5])
            session.encode(x[:, :, 5:11])


def test_bad_input_and_what_diffusers_lacks(pair):
    vae, ours = pair
    with pytest.raises(ValueError, match="1 \\+ 4k frames"):
        ours.encode(randn(1, 3, 4, 16, 16))
    with pytest.raises(ValueError, match="multiples of 8"):
        ours.encode(randn(1, 3, 5, 12, 16))
    for name in ("enable_tiling", "tiled_decode", "enable_slicing", "use_tiling"):
        assert hasattr(ours, name) == hasattr(vae, name) is False, name
    assert isinstance(ours, type(vae)) and ours.temporal_compression_ratio == 4


@pytest.mark.slow  # 13 s (CI: every sixth run)
def test_bf16_and_saving(pair, tmp_path):
    vae, ours = pair
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), randn(1, 3, 5, 16, 16, seed=6), "Kandinsky 6 SR")
    ours.save_pretrained(tmp_path / "vae")
    plain = type(vae).from_pretrained(tmp_path / "vae")
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), vae.state_dict().values()))


@pytest.mark.slow  # two runs of the pipeline (its NABLA attention runs flex_attention's eager fallback on CPU)
def test_the_sr_pipeline_with_it_equals_plain_diffusers(pair):
    """Kandinsky6SRPipeline (pixel tiles encoded, refined, decoded and blended) with `pipe.vae = TorchaxVAE(...)`."""
    from diffusers import FlowMatchEulerDiscreteScheduler, Kandinsky6SRPipeline, Kandinsky6SRTransformer3DModel

    vae, _ = pair
    torch.manual_seed(0)
    transformer = Kandinsky6SRTransformer3DModel(in_visual_dim=4, out_visual_dim=4, time_dim=16, model_dim=32,
                                                 ff_dim=64, num_visual_blocks=1, axes_dims=(4, 6, 6),
                                                 tile_sizes=((64, 64),)).eval()
    video = torch.rand(1, 5, 3, 40, 40, generator=torch.Generator().manual_seed(7))
    outputs = []
    for wrap in (False, True):
        pipe = Kandinsky6SRPipeline(transformer=transformer, vae=TorchaxVAE(vae) if wrap else vae,
                                    scheduler=FlowMatchEulerDiscreteScheduler())
        pipe.set_progress_bar_config(disable=True)
        with warnings.catch_warnings():  # torch's advice to compile flex_attention: the transformer's, not ours
            warnings.filterwarnings("ignore", message="flex_attention called without torch.compile", category=UserWarning)
            outputs.append(pipe(video=video, resolution_scale=2, num_inference_steps=2, output_type="pt",
                                generator=torch.Generator().manual_seed(0)).frames)
    plain, wrapped = outputs
    assert plain.shape == (1, 5, 3, 80, 80) and plain.std() > 1e-2  # an output that can tell a wrong VAE
    assert_close(wrapped, plain, FP32, "Kandinsky6SRPipeline")


@pytest.mark.slow  # 15 s: the command's processes (CI: every sixth run)
def test_command_and_uint8_stream_give_the_pipelines_pixels(pair, tmp_path, capsys):
    """`torchax-vae decode` writes the frames the pipeline's decode_latents and postprocess give (its pixels / 128
    convention), `decode_stream(frames="uint8")` rounds them on the device, and `encode` reads a video file back
    through a session in the encoder's own segments."""
    from torchax_vae.media import files
    from torchax_vae.cli import main

    vae, ours = pair
    vae.save_pretrained(tmp_path / "model" / "vae")
    z = randn(1, 4, 6, 2, 2, seed=11)  # as the pipeline holds latents: scaled
    torch.save(z, tmp_path / "latents.pt")
    args = ["--model", str(tmp_path / "model"), "--no-cache"]
    assert main(["decode", str(tmp_path / "latents.pt"), "-o", str(tmp_path / "video.npy"), *args]) == 0
    with torch.no_grad():
        sample = vae.decode(z / vae.config.scaling_factor).sample
        streamed = torch.cat(list(ours.decode_stream(z / vae.config.scaling_factor, frames="uint8")), 2)
    expected = _pipeline_levels(sample)
    frames = np.load(tmp_path / "video.npy")
    assert frames.shape == (21, 16, 16, 3) and expected.float().std() > 5
    assert np.abs(frames.astype(int) - expected.numpy().astype(int)).max() <= 1
    assert (streamed[0].permute(1, 2, 3, 0).int() - expected.int()).abs().max() <= 1
    files.write_mp4(tmp_path / "video.mp4", frames)
    assert main(["encode", str(tmp_path / "video.mp4"), "-o", str(tmp_path / "back.pt"), *args]) == 0
    assert tuple(torch.load(tmp_path / "back.pt").shape) == (1, 4, 6, 2, 2)
    capsys.readouterr()


def test_service_answers_the_pipelines_frames(pair, tmp_path):
    """diffusers' `remote_decode` against the service: `pt` the decoder's output within 1e-4, uint8 frames within one
    step of the pipeline's, and an MP4 of them."""
    from diffusers.utils.remote_utils import remote_decode
    from serving import serving

    from torchax_vae.serve import create_app
    from torchax_vae.media.video_input import read_video

    vae, ours = pair
    z = randn(1, 4, 6, 2, 2, seed=15)
    with torch.no_grad():
        sample = vae.decode(z / vae.config.scaling_factor).sample
    levels = _pipeline_levels(sample)
    with serving(create_app({"k6sr": ours})) as base:
        endpoint = f"{base}/decode/k6sr"
        raw = remote_decode(endpoint=endpoint, tensor=z, output_type="pt", return_type="pt")
        assert_close(raw, sample, FP32, "served pt")
        frames = remote_decode(endpoint=endpoint, tensor=z, output_type="pt", partial_postprocess=True,
                               return_type="pt")
        assert frames.dtype == torch.uint8 and (frames.int() - levels.int()).abs().max() <= 1
        video = remote_decode(endpoint=endpoint, tensor=z, output_type="mp4", return_type="mp4")
    (tmp_path / "answer.mp4").write_bytes(video)
    decoded, _ = read_video(tmp_path / "answer.mp4")
    assert decoded.shape == tuple(levels.shape)
