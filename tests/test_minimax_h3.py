"""AutoencoderKLMiniMaxH3 (MiniMax H3's video VAE) through TorchaxVAE against the same model in plain PyTorch."""

import copy

import pytest
import torch
from helpers import (BF16_ERROR_RATIO, TOLERANCE, assert_close, deltas_on_8_devices, max_abs_diff, needs, pair_fixture, random_vae)


from torchax_vae import TorchaxVAE
from torchax_vae.engine.weights import kept_in_fp32

pytestmark = needs("minimaxh3-tiny")

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("minimaxh3-tiny")


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_dispatch_geometry_and_latent_shapes(pair):
    vae, ours = pair
    assert type(ours).__name__ == "MiniMaxH3VAE" and isinstance(ours, type(vae))
    assert ours.use_tiling and vae.use_tiling  # on by default, as diffusers' class
    for name in ("spatial_compression_ratio", "temporal_compression_ratio", "frame_pre_padding", "tokens_chunk_size",
                 "token_overlap", "frame_overlap", "tile_sample_min_height", "tile_sample_min_overlap_width"):
        assert getattr(ours, name) == getattr(vae, name), name
    assert not hasattr(ours, "tiled_decode") and not hasattr(ours, "tiled_encode")  # as diffusers' class
    with torch.no_grad():
        for frames, height in ((1, 8), (5, 8), (17, 12), (22, 8), (39, 16)):
            x = randn(1, 3, frames, height, 8, seed=frames)
            assert ours.latent_shape(x.shape) == tuple(vae.encode(x).latent_dist.mean.shape), (frames, height)


@pytest.mark.parametrize("frames", [1, 5, 22, 39])
def test_encode_matches_pytorch(pair, frames):
    vae, ours = pair
    x = randn(2, 3, frames, 8, 12, seed=frames)
    with torch.no_grad():
        assert_close(ours.encode(x).latent_dist.mean, vae.encode(x).latent_dist.mean, FP32, f"encode {frames}f")


@pytest.mark.parametrize("latents", [3, 4, 7, 8, 12])
def test_decode_and_its_stream_match_pytorch(pair, latents):
    """Every length the clip loop meets: one clip, a clip and a tail cut short, repeated latents at the end."""
    vae, ours = pair
    z = randn(1, 4, latents, 2, 3, seed=latents)
    with torch.no_grad():
        expected = vae.decode(z).sample
        actual = ours.decode(z).sample
        chunks = list(ours.decode_stream(z))
    assert_close(actual, expected, FP32, f"decode of {latents} latents")
    assert torch.equal(torch.cat(chunks, 2), actual)  # the stream is the same programs, chunk by chunk
    clips = (latents + 3 + (-(latents + 3)) % 5) // 5 - 1
    assert len(chunks) == clips + (actual.shape[2] > 17 * clips)  # one per clip, then the last clip's tail


def test_tiles_as_diffusers_lays_them(pair):
    """Tiles of 16 pixels over 40 x 24 (3 x 2 tiles, overlaps widened in steps of 4), in both directions; then
    untiled. The tiny frames above are one tile each, which is the untiled call."""
    vae, ours = pair
    x = randn(1, 3, 22, 40, 24, seed=1)
    try:
        for model in (vae, ours):
            model.enable_tiling(16, 16, 8, 4)
        with torch.no_grad():
            z = vae.encode(x).latent_dist.mean
            assert_close(ours.encode(x).latent_dist.mean, z, FP32, "tiled encode")
            assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, "tiled decode")
        for model in (vae, ours):
            model.disable_tiling()
        with torch.no_grad():
            assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, "untiled decode")
    finally:
        for model in (vae, ours):
            model.enable_tiling(256, 256, 64, 64)


def test_slicing_and_programs(pair):
    """A batch, sliced or not, as diffusers; each clip shape compiles once whatever the length."""
    vae, ours = pair
    z = randn(2, 4, 12, 2, 2, seed=3)
    with torch.no_grad():
        expected = vae.decode(z).sample
        ours.enable_slicing()
        try:
            assert_close(ours.decode(z).sample, expected, FP32, "sliced decode")
        finally:
            ours.disable_slicing()
    fresh = TorchaxVAE(vae)
    with torch.no_grad():
        for latents in (7, 12, 17, 22):
            fresh.decode(randn(1, 4, latents, 2, 2, seed=latents))
    decoders = [s for s in fresh.compile_stats() if s["name"].startswith("decoder")]
    assert len(decoders) == 1, [s["name"] for s in fresh.compile_stats()]


def _session(model, kind: str, video, sizes, tiled=False):
    """The session's outputs over chunks of `sizes` frames, then its finish(), and their join."""
    parts, start = [], 0
    with getattr(model, f"{kind}_session")() as session:
        for n in sizes:
            out = session.decode(video[:, :, start:start + n]) if kind == "decode" else session.encode(
                video[:, :, start:start + n]).latent_dist.mean
            parts.append(out)
            start += n
        parts.append(session.finish() if kind == "decode" else session.finish().latent_dist.mean)
    return parts, torch.cat(parts, 2)


@pytest.mark.parametrize("latents,sizes,counts", [
    (3, [3], [0, 9]),  # too few for a whole clip: all at finish()
    (7, [1] * 7, [0] * 6 + [17, 5]),  # a realtime generator's single latents: the clip as its 7th latent comes
    (12, [2, 3, 7], [0, 0, 34, 5]),
    (8, [5, 3], [0, 17, 9]),  # the last clip filled by repeating the last latent, at finish()
    (13, [7, 6], [17, 17, 9]),
])
def test_decode_session_yields_each_clip_when_its_latents_have_come(pair, latents, sizes, counts):
    """Each clip's frames leave with the chunk that brings its last latent; finish() decodes what the end leaves.
    Joined, they are diffusers' decode within 1e-4 and ours bit for bit."""
    vae, ours = pair
    z = randn(1, 4, latents, 2, 3, seed=latents)
    with torch.no_grad():
        expected, whole = vae.decode(z).sample, ours.decode(z).sample
        parts, joined = _session(ours, "decode", z, sizes)
    assert [p.shape[2] for p in parts] == counts
    assert all(p.shape[:2] == (1, 3) and p.shape[3:] == (8, 12) and p.dtype == whole.dtype for p in parts)
    assert_close(joined, expected, FP32, f"decode session of {sizes}")
    assert torch.equal(joined, whole)


@pytest.mark.parametrize("frames,sizes", [(1, [1]), (5, [2, 3]), (17, [17]), (22, [1, 16, 5]), (39, [20, 19])])
def test_encode_session_encodes_each_clip_when_its_frames_have_come(pair, frames, sizes):
    vae, ours = pair
    x = randn(1, 3, frames, 8, 12, seed=frames)
    with torch.no_grad():
        expected = vae.encode(x).latent_dist.mean
        _, joined = _session(ours, "encode", x, sizes)
    assert_close(joined, expected, FP32, f"encode session of {sizes}")


def test_sessions_tile_and_compile_one_clip_program(pair):
    """Tiling on (the default) in a session: each clip tiled alone, as diffusers' decode tiles it; a session of
    single latents compiles the clip's program once, and nothing more for more clips."""
    vae, _ = pair
    ours = TorchaxVAE(vae)
    try:
        for model in (vae, ours):
            model.enable_tiling(16, 16, 8, 4)
        z = randn(1, 4, 12, 10, 6, seed=5)
        with torch.no_grad():
            expected = vae.decode(z).sample
            _session(ours, "decode", z, [1] * 7)
            tiles = sorted(s["name"] for s in ours.compile_stats())
            _, joined12 = _session(ours, "decode", z, [1] * 12)
        assert tiles == ["decoder/tile"], tiles
        assert sorted(s["name"] for s in ours.compile_stats()) == tiles  # the second clip compiled nothing
        assert_close(joined12, expected, FP32, "tiled decode session")
    finally:
        for model in (vae, ours):
            model.enable_tiling(256, 256, 64, 64)


def test_session_of_torchax_chunks_answers_torchax_tensors(pair):
    """Chunks already on the JAX device: every answer is a torchax tensor there, the empty ones too, and they join to
    diffusers' decode within 1e-4."""
    import jax

    vae, ours = pair
    env = ours._family.lowered.env
    z = randn(1, 4, 8, 2, 3, seed=12)
    with torch.no_grad(), ours.decode_session() as session:
        parts = [session.decode(env.j2t_iso(jax.numpy.asarray(z[:, :, i:i + 2].numpy()))) for i in range(0, 8, 2)]
        parts.append(session.finish())
        expected = vae.decode(z).sample
    frames = [torch.from_numpy(jax.device_get(p._elem).copy()) for p in parts]
    assert [f.shape[2] for f in frames] == [0, 0, 0, 17, 9]  # clip 0 needs latents 0 to 6
    assert_close(torch.cat(frames, 2), expected, FP32, "a session of torchax chunks")


def test_session_finish_refusals(pair):
    _, ours = pair
    with torch.no_grad():
        session = ours.decode_session()
        session.decode(randn(1, 4, 2, 2, 2))  # a chunk of any length is taken
        with pytest.raises(ValueError, match="the session's latents has 2 latent frames.*needs at least 3"):
            session.finish()
        with pytest.raises(RuntimeError, match="closed"):
            session.decode(randn(1, 4, 2, 2, 2))
        with pytest.raises(ValueError, match="no chunk"):
            ours.decode_session().finish()


def test_bad_input_refused_at_the_boundary(pair):
    vae, _ = pair
    ours = TorchaxVAE(vae)
    with pytest.raises(ValueError, match="needs at least 3"):
        ours.decode(randn(1, 4, 2, 2, 2))
    with pytest.raises(ValueError, match="divisible by 4"):
        ours.encode(randn(1, 3, 5, 10, 8))
    with pytest.raises(ValueError, match="channels"):
        ours.decode(randn(1, 3, 7, 2, 2))
    assert ours.compile_stats() == []  # nothing compiled
    with pytest.raises(ValueError):  # diffusers fails on the same two latent frames (an empty torch.cat)
        vae.decode(randn(1, 4, 2, 2, 2))


def test_latent_normalization_is_the_pipelines(pair):
    """MiniMax H3's decode step: `latents * latents_std + latents_mean` from the config (modular decoders.py)."""
    vae, ours = pair
    z = randn(1, 4, 7, 2, 2, seed=4)
    mean = torch.tensor(vae.config.latents_mean).view(1, -1, 1, 1, 1)
    std = torch.tensor(vae.config.latents_std).view(1, -1, 1, 1, 1)
    assert torch.allclose(ours.unscale_latents(z), z * std + mean)
    assert torch.allclose(ours.scale_latents(ours.unscale_latents(z)), z, atol=1e-6)


def _torch_mixed_bf16(vae):
    """PyTorch's model as `from_pretrained(torch_dtype=torch.bfloat16)` loads it: bf16, the `_keep_in_fp32_modules`
    in float32."""
    model = copy.deepcopy(vae).to(torch.bfloat16)
    for name, parameter in model.named_parameters():
        if kept_in_fp32(name, tuple(vae._keep_in_fp32_modules)):
            parameter.data = parameter.data.float()
    return model


def test_bf16_keeps_diffusers_fp32_modules_and_its_error(pair, tmp_path):
    vae, _ = pair
    ours = TorchaxVAE(vae, dtype=torch.bfloat16)
    dtypes = {name: t.dtype for name, t in ours.state_dict().items()}
    assert dtypes["encoder.conv_in.weight" if "encoder.conv_in.weight" in dtypes else next(
        n for n in dtypes if n.startswith("encoder."))] == torch.float32
    assert dtypes["decoder.transformer_blocks.0.attn.to_q.weight"] == torch.bfloat16
    assert dtypes["decoder.transformer_blocks.0.scale1"] == torch.float32
    vae.save_pretrained(tmp_path)  # as a pipeline loads it with torch_dtype=bf16
    loaded = type(vae).from_pretrained(tmp_path, torch_dtype=torch.bfloat16)
    torch_mixed = _torch_mixed_bf16(vae)
    assert {n: p.dtype for n, p in loaded.named_parameters()} == {n: p.dtype for n, p in torch_mixed.named_parameters()}
    wrapped = TorchaxVAE(loaded)  # no dtype: the loaded model's own, each weight as it holds it
    assert wrapped.dtype == torch.bfloat16
    assert {n: t.dtype for n, t in wrapped.state_dict().items()} == {n: t.dtype for n, t in loaded.state_dict().items()}
    x = randn(1, 3, 22, 8, 8, seed=6)
    with torch.no_grad():
        z = vae.encode(x).latent_dist.mean
        video = vae.decode(z).sample
        theirs = {"encode": max_abs_diff(torch_mixed.encode(x.bfloat16()).latent_dist.mean, z),
                  "decode": max_abs_diff(torch_mixed.decode(z.bfloat16()).sample, video)}
        mine = {"encode": max_abs_diff(ours.encode(x.bfloat16()).latent_dist.mean, z),
                "decode": max_abs_diff(ours.decode(z.bfloat16()).sample, video)}
    for stage in mine:
        assert mine[stage] <= BF16_ERROR_RATIO * theirs[stage], (
            f"bf16 {stage}: max |Δ| vs fp32 = {mine[stage]:.3g}, PyTorch bf16's = {theirs[stage]:.3g}")
    ours.to(torch.float32)  # and back (diffusers casts every module with .to): every weight float32
    assert all(t.dtype == torch.float32 for t in ours.state_dict().values())


def test_saving_loads_in_plain_diffusers_and_back(pair, tmp_path):
    vae, ours = pair
    ours.save_pretrained(tmp_path / "vae")
    plain = type(vae).from_pretrained(tmp_path / "vae")
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), vae.state_dict().values()))
    again = TorchaxVAE.from_pretrained(str(tmp_path), subfolder="vae")  # loads with low_cpu_mem_usage (fp32 modules)
    z = randn(1, 4, 3, 2, 2, seed=8)
    with torch.no_grad():
        assert torch.equal(again.decode(z).sample, ours.decode(z).sample)


MESH_SCRIPT = """
import json, torch
from helpers import random_vae
from torchax_vae import TorchaxVAE, make_mesh
vae = random_vae("minimaxh3-tiny")
ours = TorchaxVAE(vae, mesh=make_mesh())
x = torch.randn(2, 3, 22, 8, 16, generator=torch.Generator().manual_seed(9))
with torch.no_grad():
    z = vae.encode(x).latent_dist.mean
    rows = {"devices": ours.mesh.devices.size,
            "encode": (ours.encode(x).latent_dist.mean - z).abs().max().item(),
            "decode": (ours.decode(z).sample - vae.decode(z).sample).abs().max().item()}
    ours.enable_tiling(16, 16, 8, 8)
    vae.enable_tiling(16, 16, 8, 8)
    z = torch.randn(1, 4, 7, 6, 6, generator=torch.Generator().manual_seed(10))
    rows["tiled decode"] = (ours.decode(z).sample - vae.decode(z).sample).abs().max().item()
    with ours.decode_session() as session:  # single latents, as a realtime generator gives them
        parts = [session.decode(z[:, :, i:i + 1]) for i in range(7)] + [session.finish()]
    rows["tiled decode session"] = (torch.cat(parts, 2) - vae.decode(z).sample).abs().max().item()
print(json.dumps(rows))
"""


@pytest.mark.slow  # a second process on 8 virtual devices
@pytest.mark.rotate  # beyond the contract's mesh check (tests/contract): in CI a slice of these at a time
def test_on_8_devices_matches_pytorch():
    deltas_on_8_devices(MESH_SCRIPT, FP32)


def test_command_writes_the_frames_the_pipeline_would_and_encodes_them_back(pair, tmp_path, capsys):
    """`torchax-vae decode` converts MiniMax H3's ImageNet-normalized pixels as its pipeline does (`sample * std +
    mean`, clamped to [0, 1]; torchax_vae/media/pixels.py), and `encode` reads a video file into them; the audio VAE
    given as the model (waveforms alone) is refused in one line, by the command and the service, which decode its
    sound from the pipeline folder (test_minimax_h3_sound.py)."""
    import numpy as np

    from torchax_vae.media import files
    from torchax_vae.cli import main
    from torchax_vae.stage3.loading import InputError, check_served
    from torchax_vae.models.minimax_h3 import IMAGENET_MEAN, IMAGENET_STD

    vae, _ = pair
    vae.save_pretrained(tmp_path / "model" / "vae")
    z = randn(1, 4, 7, 2, 3, seed=11)  # as the pipeline returns latents: normalized
    torch.save(z, tmp_path / "latents.pt")
    args = ["--model", str(tmp_path / "model"), "--no-cache"]
    assert main(["decode", str(tmp_path / "latents.pt"), "-o", str(tmp_path / "video.npy"), *args]) == 0
    mean, std = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1, 1), torch.tensor(IMAGENET_STD).view(1, 3, 1, 1, 1)
    latents_mean = torch.tensor(vae.config.latents_mean).view(1, -1, 1, 1, 1)
    latents_std = torch.tensor(vae.config.latents_std).view(1, -1, 1, 1, 1)
    with torch.no_grad():  # MiniMax H3's decode step, then its pixel conversion
        sample = vae.decode(z * latents_std + latents_mean).sample
    expected = ((sample * std + mean).clamp(0, 1) * 255).round().to(torch.uint8)[0].permute(1, 2, 3, 0).numpy()
    frames = np.load(tmp_path / "video.npy")
    assert frames.shape == (22, 8, 12, 3)
    assert np.abs(frames.astype(int) - expected.astype(int)).max() <= 1
    files.write_mp4(tmp_path / "video.mp4", frames)
    assert main(["encode", str(tmp_path / "video.mp4"), "-o", str(tmp_path / "back.pt"), *args]) == 0
    back = torch.load(tmp_path / "back.pt")  # streamed clip by clip through an encode session
    from torchax_vae.media import video_input
    read, _ = video_input.read_video(tmp_path / "video.mp4", None, channels=3)
    x = ((torch.from_numpy(read).permute(3, 0, 1, 2)[None].float() / 255 - mean) / std)
    with torch.no_grad():
        whole = (vae.encode(x).latent_dist.mode() - latents_mean) / latents_std
    assert_close(back, whole, FP32, "the command's streamed encode")
    capsys.readouterr()
    audio = random_vae("minimaxh3-audio-tiny")
    with pytest.raises(InputError, match="waveforms"):
        check_served(audio)
    audio.save_pretrained(tmp_path / "audio" / "vae")
    torch.save(randn(1, 8, 5), tmp_path / "audio.pt")
    code = main(["decode", str(tmp_path / "audio.pt"), "-o", str(tmp_path / "a.mp4"), "--model",
                 str(tmp_path / "audio"), "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2 and "give the pipeline folder (vae/ and audio_vae/)" in err and len(err.strip().splitlines()) == 1, err


def test_uint8_stream_is_the_pipelines_pixels(pair):
    """decode_stream(frames="uint8") rounds MiniMax H3's pixels on the device as its pipeline converts them."""
    from torchax_vae.models.minimax_h3 import IMAGENET_MEAN, IMAGENET_STD

    vae, ours = pair
    z = randn(1, 4, 7, 2, 2, seed=12)
    with torch.no_grad():
        sample = vae.decode(z).sample
        frames = torch.cat(list(ours.decode_stream(z, frames="uint8")), 2)
    mean, std = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1, 1), torch.tensor(IMAGENET_STD).view(1, 3, 1, 1, 1)
    expected = ((sample * std + mean).clamp(0, 1) * 255).round().to(torch.uint8)
    assert frames.dtype == torch.uint8 and (frames.int() - expected.int()).abs().max() <= 1


def test_modular_decode_step_with_both_vaes_wrapped_equals_plain_diffusers(pair):
    """diffusers' own MiniMax H3 stage 3 (`MiniMaxH3DecodeStep`, the modular pipeline's decode blocks: latent
    de-normalization, the video VAE, ImageNet pixels to [0, 1], the audio VAE on the stereo channels as a batch)
    with `vae` and `audio_vae` wrapped gives plain diffusers' video and sound."""
    from diffusers.modular_pipelines.minimax_h3.modular_blocks_minimax_h3 import MiniMaxH3DecodeStep

    vae, _ = pair
    audio = random_vae("minimaxh3-audio-tiny")
    z, a = randn(1, 4, 7, 2, 3, seed=13), randn(2, 8, 5, seed=14)
    outputs = []
    for wrap in (False, True):
        pipe = MiniMaxH3DecodeStep().init_pipeline()
        pipe.update_components(vae=TorchaxVAE(vae) if wrap else vae, audio_vae=TorchaxVAE(audio) if wrap else audio)
        out = pipe(latents=z, audio_latents=a, output_type="pt", output=["videos", "audio"])
        outputs.append((out["videos"], out["audio"]))
    (plain_video, plain_audio), (video, sound) = outputs
    assert video.shape == (1, 22, 3, 8, 12) and sound.shape == (1, 2, 20)
    assert plain_video.std() > 1e-3 and plain_audio.std() > 1e-3  # outputs that can tell a wrong decode
    assert_close(video, plain_video, FP32, "MiniMaxH3DecodeStep video")
    assert_close(sound, plain_audio, FP32, "MiniMaxH3DecodeStep audio")


def test_service_answers_the_pipelines_frames(pair, tmp_path):
    """The service decodes MiniMax H3's latents as its pipeline does (de-normalized, decoded, ImageNet pixels to
    [0, 1]): `pt` the decoder's output within 1e-4, uint8 frames within one step, and an MP4 of them."""
    from diffusers.utils.remote_utils import remote_decode
    from serving import serving

    from torchax_vae.models.minimax_h3 import IMAGENET_MEAN, IMAGENET_STD
    from torchax_vae.serve import create_app
    from torchax_vae.media.video_input import read_video

    vae, ours = pair
    z = randn(1, 4, 7, 2, 3, seed=15)
    latents_mean = torch.tensor(vae.config.latents_mean).view(1, -1, 1, 1, 1)
    latents_std = torch.tensor(vae.config.latents_std).view(1, -1, 1, 1, 1)
    with torch.no_grad():
        sample = vae.decode(z * latents_std + latents_mean).sample
    mean, std = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1, 1), torch.tensor(IMAGENET_STD).view(1, 3, 1, 1, 1)
    levels = ((sample * std + mean).clamp(0, 1) * 255).round().to(torch.uint8)[0].permute(1, 2, 3, 0)
    with serving(create_app({"minimax": ours})) as base:
        endpoint = f"{base}/decode/minimax"
        raw = remote_decode(endpoint=endpoint, tensor=z, output_type="pt", return_type="pt")
        assert_close(raw, sample, FP32, "served pt")
        frames = remote_decode(endpoint=endpoint, tensor=z, output_type="pt", partial_postprocess=True,
                               return_type="pt")
        assert frames.dtype == torch.uint8 and (frames.int() - levels.int()).abs().max() <= 1
        video = remote_decode(endpoint=endpoint, tensor=z, output_type="mp4", return_type="mp4")
    (tmp_path / "answer.mp4").write_bytes(video)
    decoded, _ = read_video(tmp_path / "answer.mp4")
    assert decoded.shape == tuple(levels.shape)
