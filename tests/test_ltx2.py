"""AutoencoderKLLTX2Video through TorchaxVAE against the same model in plain PyTorch, and in LTX2Pipeline."""

import diffusers
import pytest
from packaging.version import Version
import torch
from helpers import assert_close, bf16_check, by_hand, check_encode_decode, randn, random_vae, seeded, TOLERANCE, with_noise

from torchax_vae import TorchaxVAE

if Version(diffusers.__version__) < Version("0.37"):  # from 0.37 on the class must be there: the import fails
    pytest.skip(f"diffusers {diffusers.__version__} < 0.37 has no AutoencoderKLLTX2Video", allow_module_level=True)

from torchax_vae.models.ltx2 import LTX2VideoVAE  # noqa: E402

FP32 = TOLERANCE[torch.float32]


def noisy_vae():
    """The timestep-conditioned, noise-injecting tiny config with its noise scales non-zero (they start at zero)."""
    return with_noise(random_vae("ltx2ts-tiny"))


@pytest.fixture(scope="module")
def noisy():
    vae = noisy_vae()
    return vae, TorchaxVAE(vae)


def test_tiny_fp32_and_the_latent_shape():
    """diffusers' test config at its test input's size. Its ratio attributes (no ratios in the config) say 16,
    the blocks compress by 8: the latent shape follows the blocks, the windows and tiles diffusers' attributes."""
    vae = random_vae("ltx2-tiny")
    ours = TorchaxVAE(vae)
    assert type(ours) is LTX2VideoVAE
    assert ours.spatial_compression_ratio == vae.spatial_compression_ratio == 16
    x = randn(2, 3, 9, 16, 16)
    check_encode_decode(vae, ours, x, "ltx2-tiny 9f")
    assert ours.latent_shape(tuple(x.shape)) == tuple(vae.encode(x).latent_dist.mean.shape) == (2, 8, 2, 2, 2)


def test_causal_argument_as_diffusers():
    """diffusers' `causal or is_causal`: decode(causal=True) on a non-causal decoder is another program
    (named so); causal=False on the causal encoder changes nothing and compiles nothing."""
    vae = random_vae("ltx2-tiny")
    ours = TorchaxVAE(vae)
    x = randn(1, 3, 9, 16, 16)
    z = vae.encode(x).latent_dist.mean
    causal = vae.decode(z, causal=True).sample
    assert (causal - vae.decode(z).sample).abs().max() > 0.01  # it matters
    assert_close(ours.decode(z, causal=True).sample, causal, FP32, "causal decode")
    assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, "default decode")
    assert_close(ours.encode(x, causal=False).latent_dist.mean, vae.encode(x, causal=False).latent_dist.mean, FP32,
                 "encode, causal=False")
    assert sorted(s["name"] for s in ours.compile_stats()) == ["decoder", "decoder+causal=True", "encoder"]
    out = ours(x, decoder_causal=True).sample
    assert_close(out, vae(x, decoder_causal=True).sample, FP32, "forward(decoder_causal=True)")


def test_noise_injection_follows_torchs_global_generator(noisy):
    """Timestep per video, noise from torch's generator, reflect padding: same seed, same video as PyTorch
    (and the generator left where PyTorch leaves it); another seed, another video."""
    vae, ours = noisy
    z, temb = randn(2, 8, 2, 2, 2), torch.tensor([0.05, 0.3])
    for seed in (5, 6):
        expected = seeded(lambda: vae.decode(z, temb).sample, seed)
        after_torch = torch.randn(4)
        actual = seeded(lambda: ours.decode(z, temb).sample, seed)
        after_ours = torch.randn(4)
        assert_close(actual, expected, FP32, f"noisy decode, seed {seed}")
        assert torch.equal(after_ours, after_torch), "the global generator moved otherwise than in PyTorch"
    assert (seeded(lambda: vae.decode(z, temb).sample, 5) - expected).abs().max() > 0.1  # the noise matters here


@pytest.mark.slow  # 33 s: the same window, tile and slicing code as LTX-Video's (tests/test_ltx.py, default suite)
def test_windows_tiles_and_slicing(noisy):
    """Frame windows (`use_framewise_decoding`, which diffusers' encode reads too), spatial tiles (each call
    its own noise draws, in diffusers' order), and slicing with one timestep per video."""
    vae, ours = noisy
    # the test config's ratio attributes are 16: windows of 32 + 1 frames every 16 are 2 + 1 latent frames every 1
    frames = dict(tile_sample_min_num_frames=32, tile_sample_stride_num_frames=16)
    # tiles of 3 latents every 2 (the last ones 2 wide: reflect padding fails on 1-wide tiles, in PyTorch too)
    tiles = dict(tile_sample_min_height=48, tile_sample_min_width=48, tile_sample_stride_height=32,
                 tile_sample_stride_width=32)
    temb = torch.tensor([0.1])
    try:
        for model in (vae, ours):
            model.enable_tiling(**frames)
            model.disable_tiling()
            model.use_framewise_decoding = True
        z = randn(1, 8, 4, 2, 2, seed=1)  # windows of 3, 3, 2 and 1 latent frames
        assert_close(seeded(lambda: ours.decode(z, temb).sample), seeded(lambda: vae.decode(z, temb).sample),
                     FP32, "windowed decode")
        x = randn(1, 3, 41, 16, 16, seed=2)  # windows of 33 and 25 frames
        assert_close(ours.encode(x).latent_dist.mean, vae.encode(x).latent_dist.mean, FP32, "windowed encode")
        for model in (vae, ours):
            model.use_framewise_decoding = False
            model.enable_tiling(**tiles)
        z = randn(1, 8, 2, 4, 4, seed=3)  # 2x2 tiles: 3x3, 3x2, 2x3, 2x2 latents
        assert_close(seeded(lambda: ours.decode(z, temb).sample), seeded(lambda: vae.decode(z, temb).sample),
                     FP32, "tiled decode")
        assert_close(seeded(lambda: ours.tiled_decode(z, temb).sample),
                     seeded(lambda: vae.tiled_decode(z, temb).sample), FP32, "tiled_decode")
    finally:
        for model in (vae, ours):
            model.use_framewise_decoding = False
            model.disable_tiling()
    z, temb = randn(2, 8, 2, 2, 2, seed=3), torch.tensor([0.05, 0.5])
    torch.manual_seed(5)
    expected = torch.cat([vae.decode(z[i : i + 1], temb[i : i + 1]).sample for i in range(2)])
    ours.enable_slicing()
    try:
        assert_close(seeded(lambda: ours.decode(z, temb).sample), expected, FP32, "sliced decode")
    finally:
        ours.disable_slicing()


@pytest.mark.slow  # 32 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_bf16():
    vae = noisy_vae()
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), randn(4, 3, 9, 16, 16), "ltx2ts-tiny",
               (torch.tensor([0.05] * 4),))


@pytest.mark.slow  # 38 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_decoding_any_length_compiles_a_bounded_set_of_programs(noisy):
    """With frame windows of 2 + 1 latent frames every 1: after 1..4 latent frames, longer videos and other
    timesteps compile nothing."""
    vae = noisy_vae()
    ours = TorchaxVAE(vae)
    for model in (vae, ours):
        model.enable_tiling(tile_sample_min_num_frames=32, tile_sample_stride_num_frames=16)
        model.disable_tiling()
        model.use_framewise_decoding = True
    for frames in range(1, 5):
        ours.decode(torch.randn(1, 8, frames, 2, 2), torch.tensor([0.05]))
    compiled = len(ours.compile_stats())
    assert compiled == 3  # whole clips of 1 and 2 latent frames, windows of 3 (shorter last windows: 2 and 1)
    for frames, t in ((7, 0.05), (9, 0.7)):
        z = randn(1, 8, frames, 2, 2, seed=frames)
        temb = torch.tensor([t])
        assert_close(seeded(lambda: ours.decode(z, temb).sample), seeded(lambda: vae.decode(z, temb).sample),
                     FP32, f"decode of {frames} latent frames")
    assert len(ours.compile_stats()) == compiled


@by_hand  # the released architecture's whole parity row: minutes on 2 cores, out of CI's time; by hand
@pytest.mark.parametrize("name", ["ltx2", "ltx2.3"])
def test_official_fp32_and_bf16(name):
    """The released LTX-2 and LTX-2.3 VAEs' architectures, seeded random weights, 9 frames at 64x64 (2x2
    latents: LTX-2.0's reflect padding needs at least 2); bf16 for 2.0 only (the slow set's time)."""
    vae = random_vae(name)
    ours = TorchaxVAE(vae)
    x = randn(1, 3, 9, 64, 64)
    with torch.no_grad():
        expected = vae.encode(x).latent_dist.mean
    assert_close(ours.encode(x).latent_dist.mean, expected, FP32, f"{name} encode")
    assert_close(ours.decode(expected).sample, vae.decode(expected).sample, FP32, f"{name} decode")
    if name == "ltx2":
        bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), x, name)


def _ltx2_pipeline(vae):
    """diffusers' LTX2Pipeline test components (tests/pipelines/ltx2), prompt embeddings given instead of
    Gemma 3 and its tokenizer (no hub offline)."""
    from diffusers import (
        AutoencoderKLLTX2Audio,
        FlowMatchEulerDiscreteScheduler,
        LTX2Pipeline,
        LTX2VideoTransformer3DModel,
    )
    from diffusers.pipelines.ltx2 import LTX2TextConnectors
    from diffusers.pipelines.ltx2.vocoder import LTX2Vocoder

    caption = 32
    torch.manual_seed(0)
    transformer = LTX2VideoTransformer3DModel(
        in_channels=4, out_channels=4, patch_size=1, patch_size_t=1, num_attention_heads=2, attention_head_dim=8,
        cross_attention_dim=16, audio_in_channels=4, audio_out_channels=4, audio_num_attention_heads=2,
        audio_attention_head_dim=4, audio_cross_attention_dim=8, num_layers=2, qk_norm="rms_norm_across_heads",
        caption_channels=caption, rope_double_precision=False, rope_type="split",
    )
    torch.manual_seed(0)
    connectors = LTX2TextConnectors(
        caption_channels=caption, text_proj_in_factor=3, video_connector_num_attention_heads=4,
        video_connector_attention_head_dim=8, video_connector_num_layers=1,
        video_connector_num_learnable_registers=None, audio_connector_num_attention_heads=4,
        audio_connector_attention_head_dim=8, audio_connector_num_layers=1,
        audio_connector_num_learnable_registers=None, connector_rope_base_seq_len=32, rope_theta=10000.0,
        rope_double_precision=False, causal_temporal_positioning=False, rope_type="split",
    )
    torch.manual_seed(0)
    audio_vae = AutoencoderKLLTX2Audio(
        base_channels=4, output_channels=2, ch_mult=(1,), num_res_blocks=1, attn_resolutions=None, in_channels=2,
        resolution=32, latent_channels=2, norm_type="pixel", causality_axis="height", dropout=0.0,
        mid_block_add_attention=False, sample_rate=16000, mel_hop_length=160, is_causal=True, mel_bins=8,
    )
    torch.manual_seed(0)
    vocoder = LTX2Vocoder(
        in_channels=16, hidden_channels=32, out_channels=2, upsample_kernel_sizes=[4, 4], upsample_factors=[2, 2],
        resnet_kernel_sizes=[3], resnet_dilations=[[1, 3, 5]], leaky_relu_negative_slope=0.1,
        output_sampling_rate=16000,
    )
    pipe = LTX2Pipeline(
        transformer=transformer, vae=vae, audio_vae=audio_vae, scheduler=FlowMatchEulerDiscreteScheduler(),
        text_encoder=None, tokenizer=None, connectors=connectors, vocoder=vocoder, processor=None,
        prompt_enhancer=None, duration_head=None,
    )
    pipe.set_progress_bar_config(disable=True)
    embeds = torch.randn(1, 16, caption * 3, generator=torch.Generator().manual_seed(1))
    inputs = dict(
        prompt_embeds=embeds, prompt_attention_mask=torch.ones(1, 16, dtype=torch.long), num_inference_steps=2,
        guidance_scale=1.0, stg_scale=0.0, modality_scale=1.0, guidance_rescale=0.0, audio_guidance_scale=1.0,
        audio_stg_scale=0.0, audio_modality_scale=1.0, audio_guidance_rescale=0.0,
        spatio_temporal_guidance_blocks=None, use_cross_timestep=False, height=32, width=32, num_frames=5,
        frame_rate=25.0, output_type="pt",
    )
    return pipe, inputs


def _pipeline_vae():
    """The pipeline test's one-block VAE, with a timestep-conditioned, noise-injecting decoder (scales non-zero)."""
    from diffusers import AutoencoderKLLTX2Video

    torch.manual_seed(0)
    vae = AutoencoderKLLTX2Video(
        in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(8,), decoder_block_out_channels=(8,),
        layers_per_block=(1,), decoder_layers_per_block=(1, 1), spatio_temporal_scaling=(True,),
        decoder_spatio_temporal_scaling=(True,), decoder_inject_noise=(True, True), downsample_type=("spatial",),
        upsample_residual=(False,), upsample_factor=(1,), timestep_conditioning=True, patch_size=1, patch_size_t=1,
        encoder_causal=True, decoder_causal=False,
    ).eval()
    with torch.no_grad():
        for name, p in vae.named_parameters():
            if "per_channel_scale" in name:
                p.uniform_(0.2, 1.0)
        vae.latents_mean.copy_(torch.linspace(-0.5, 0.5, 4))
        vae.latents_std.copy_(torch.linspace(0.5, 2.0, 4))
    return vae


def test_ltx2_pipeline_with_the_vae_swapped():
    """LTX2Pipeline's video with decode_timestep (noise mixed into the latents, noise injected in the decoder)."""
    vae = _pipeline_vae()
    pipe, inputs = _ltx2_pipeline(vae)
    inputs.update(decode_timestep=0.05, decode_noise_scale=0.025)
    with torch.no_grad():
        expected = seeded(lambda: pipe(generator=torch.Generator().manual_seed(0), **inputs).frames)
        pipe.vae = TorchaxVAE(vae)
        actual = seeded(lambda: pipe(generator=torch.Generator().manual_seed(0), **inputs).frames)
    assert [s["name"] for s in pipe.vae.compile_stats()] == ["decoder"]
    assert actual.shape == (1, 5, 3, 32, 32)
    assert_close(actual, expected, FP32, "LTX2Pipeline frames")


@pytest.mark.slow  # 13 s: the command's processes (CI: every sixth run)
def test_command_round_trip_of_the_pipelines_latents(tmp_path, capsys):
    """LTX2Pipeline(output_type="latent") returns the VAE's own (denormalized) 5-D latents: the command decodes
    them as they are, mixing in the decode noise in the normalized space and decoding at the timestep, as the
    pipeline does (its noise from --seed); encode writes latents of that same space, so they round-trip."""
    import numpy as np
    from diffusers.utils.torch_utils import randn_tensor

    from torchax_vae.media import files, video_input
    from torchax_vae.cli import main

    vae = _pipeline_vae()
    vae.save_pretrained(tmp_path / "model" / "vae")
    pipe, inputs = _ltx2_pipeline(vae)
    with torch.no_grad():
        latents = pipe(generator=torch.Generator().manual_seed(0), **dict(inputs, output_type="latent")).frames
    assert latents.shape == (1, 4, 3, 16, 16)
    torch.save(latents, tmp_path / "latents.pt")
    out = tmp_path / "video.npy"
    args = ["decode", str(tmp_path / "latents.pt"), "-o", str(out), "--model", str(tmp_path / "model"),
            "--no-cache", "--no-progress", "--layout", "BCFHW"]
    assert main([*args, "--decode-timestep", "0.05", "--seed", "3"]) == 0, capsys.readouterr().err

    mean, std = vae.latents_mean.view(1, -1, 1, 1, 1), vae.latents_std.view(1, -1, 1, 1, 1)
    normalized = (latents - mean) / std
    noise = randn_tensor(latents.shape, generator=torch.Generator().manual_seed(3))
    z = (0.95 * normalized + 0.05 * noise) * std + mean
    with torch.no_grad():
        expected = seeded(lambda: vae.decode(z, torch.tensor([0.05])).sample, 3)[0]
    expected = ((expected / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 3, 0).numpy()
    video = np.load(out)
    assert video.shape == (5, 32, 32, 3)
    assert np.abs(video.astype(int) - expected.astype(int)).max() <= 1  # a rounding step of a 1e-6 difference

    clip = tmp_path / "clip.mp4"  # encode reads what ffmpeg reads; compared with diffusers on the frames it reads
    files.write_mp4(clip, video, fps=8)
    encoded = tmp_path / "encoded.pt"
    assert main(["encode", str(clip), "-o", str(encoded), "--model", str(tmp_path / "model"), "--no-cache",
                 "--no-progress"]) == 0, capsys.readouterr().err
    frames, _ = video_input.read_video(clip)
    x = torch.from_numpy(frames).permute(3, 0, 1, 2)[None].float() / 127.5 - 1
    with torch.no_grad():
        own = vae.encode(x).latent_dist.mean  # the VAE's own latents, as the pipeline takes and returns them
    assert_close(torch.load(encoded), own, FP32, "encoded latents (BCFHW)")
