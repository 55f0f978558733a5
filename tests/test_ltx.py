"""AutoencoderKLLTXVideo through TorchaxVAE against the same model in plain PyTorch, and in the LTX pipelines."""

import pytest
import torch
from helpers import assert_close, bf16_check, by_hand, check_encode_decode, randn, random_vae, seeded, TOLERANCE, with_noise

from torchax_vae import TorchaxVAE
from torchax_vae.models.ltx import LTXVideoVAE

FP32 = TOLERANCE[torch.float32]


def noisy_vae():
    """diffusers' 0.9.1 test config with its noise scales non-zero (they start at zero), so the noise shows."""
    return with_noise(random_vae("ltx091-tiny"))


@pytest.fixture(scope="module")
def noisy():
    vae = noisy_vae()
    return vae, TorchaxVAE(vae)


def test_tiny_090_fp32():
    """diffusers' 0.9.0 test config: no timestep, no noise; encode and decode of its test input's size."""
    vae = random_vae("ltx-tiny")
    ours = TorchaxVAE(vae)
    assert type(ours) is LTXVideoVAE and ours.spatial_compression_ratio == vae.spatial_compression_ratio == 4
    check_encode_decode(vae, ours, randn(2, 3, 9, 16, 16), "ltx-tiny 9f")


def test_noise_injection_follows_torchs_global_generator(noisy):
    """0.9.1's decoder: timestep per video, noise from torch's generator. Same seed: same video as PyTorch
    (and the generator left where PyTorch leaves it); another seed: another video, also PyTorch's."""
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
    x = randn(1, 3, 9, 16, 16)
    assert_close(ours.encode(x).latent_dist.mean, vae.encode(x).latent_dist.mean, FP32, "0.9.1 encode")


def test_a_calls_own_generator_gives_pytorchs_noise_and_leaves_the_global_one_alone(noisy):
    """decode(..., generator=g): the noise PyTorch draws from a global generator in g's state; torch's global
    generator untouched (calls in other threads each draw from their own: tests/test_threads.py)."""
    vae, ours = noisy
    z, temb = randn(2, 8, 2, 2, 2), torch.tensor([0.05, 0.3])
    expected = seeded(lambda: vae.decode(z, temb).sample, 7)
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    actual = ours.decode(z, temb, generator=torch.Generator().manual_seed(7)).sample
    assert torch.equal(torch.random.get_rng_state(), before), "a call with its own generator moved the global one"
    assert_close(actual, expected, FP32, "noisy decode with the call's own generator")
    with pytest.raises(TypeError, match="CPU torch.Generator"):
        ours.decode(z, temb, generator=7)


@pytest.mark.slow  # the default suite keeps the per-call generator's noise (test above)
def test_windows_and_tiles_draw_their_noise_in_diffusers_order(noisy):
    """Frame windows (use_framewise_decoding, which diffusers' LTX encode reads too), then spatial tiles: one
    decoder call per window or tile, each with its own draws, as diffusers makes them."""
    vae, ours = noisy
    tiles = dict(tile_sample_min_height=16, tile_sample_min_width=16, tile_sample_stride_height=8,
                 tile_sample_stride_width=8)
    temb = torch.tensor([0.1])
    try:
        for model in (vae, ours):
            model.use_framewise_decoding = True
        z = randn(1, 8, 4, 2, 2, seed=1)  # latent windows of 2 + 1 frames every 1: 3, 3, 2 and 1 frames
        assert_close(seeded(lambda: ours.decode(z, temb).sample), seeded(lambda: vae.decode(z, temb).sample),
                     FP32, "windowed decode")
        x = randn(1, 3, 17, 16, 16, seed=2)  # windows of 16 + 1 frames every 8: 17 and 9 frames
        assert_close(ours.encode(x).latent_dist.mean, vae.encode(x).latent_dist.mean, FP32, "windowed encode")
        for model in (vae, ours):
            model.use_framewise_decoding = False
            model.enable_tiling(**tiles)
        z = randn(1, 8, 2, 3, 2, seed=3)  # tiles of 2 latents every 1: 2x2, 2x1, 1x2, 1x1
        assert_close(seeded(lambda: ours.decode(z, temb).sample), seeded(lambda: vae.decode(z, temb).sample),
                     FP32, "tiled decode")
        assert_close(seeded(lambda: ours.tiled_decode(z, temb).sample),
                     seeded(lambda: vae.tiled_decode(z, temb).sample), FP32, "tiled_decode")
    finally:
        for model in (vae, ours):
            model.use_framewise_decoding = False
            model.disable_tiling()


def test_slicing_decodes_each_video_with_its_timestep(noisy):
    """diffusers' decode with slicing and a timestep fails (it pairs the wrong tuples); here each video is
    decoded with its own timestep, as diffusers decodes them one by one."""
    vae, ours = noisy
    z, temb = randn(2, 8, 2, 2, 2, seed=3), torch.tensor([0.05, 0.5])
    torch.manual_seed(5)
    expected = torch.cat([vae.decode(z[i : i + 1], temb[i : i + 1]).sample for i in range(2)])
    ours.enable_slicing()
    try:
        assert_close(seeded(lambda: ours.decode(z, temb).sample), expected, FP32, "sliced decode")
    finally:
        ours.disable_slicing()


def test_bad_timesteps_are_refused_before_compiling(noisy):
    _, ours = noisy
    z = torch.zeros(2, 8, 2, 2, 2)
    with pytest.raises(ValueError, match="timestep-conditioned.*pass temb"):
        ours.decode(z)
    with pytest.raises(ValueError, match=r"one timestep per video \(2 values\).*shape \(3,\)"):
        ours.decode(z, torch.zeros(3))
    with pytest.raises(ValueError, match="floating-point"):
        ours.decode(z, torch.zeros(2, dtype=torch.long))
    assert ours.compile_stats() == [] or all(s["name"] for s in ours.compile_stats())


@pytest.mark.slow  # 18 s on 2 cores: CI's slow set (the default suite under 20 minutes)
@pytest.mark.parametrize("name", [pytest.param("ltx-tiny", marks=pytest.mark.slow), "ltx091-tiny"])
def test_bf16(name):
    """Four videos in one batch: the worst of four inputs on each side (one input alone put our encode
    error at 2.05x PyTorch bf16's on one seed of four and at 0.6-1.9x on the others: docs/results/parity.md)."""
    vae = random_vae(name)
    decode_args = (torch.tensor([0.05] * 4),) if vae.config.timestep_conditioning else ()
    torch.manual_seed(0)
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), randn(4, 3, 9, 16, 16), name, decode_args)


def test_decoding_any_length_compiles_a_bounded_set_of_programs():
    """With frame windows, programs follow the window shapes: after 1..6 latent frames, longer videos compile
    nothing. A timestep is data: another value compiles nothing either."""
    vae = random_vae("ltx091-tiny")
    vae.use_framewise_decoding = True
    ours = TorchaxVAE(vae)
    for frames in range(1, 7):
        ours.decode(torch.randn(1, 8, frames, 2, 2), torch.tensor([0.05]))
    compiled = len(ours.compile_stats())
    assert compiled == 3  # whole clips of 1 and 2 latent frames, windows of 3 (shorter last windows: 2 and 1)
    for frames, t in ((9, 0.05), (13, 0.7)):
        z = torch.randn(1, 8, frames, 2, 2, generator=torch.Generator().manual_seed(frames))
        temb = torch.tensor([t])
        assert_close(seeded(lambda: ours.decode(z, temb).sample), seeded(lambda: vae.decode(z, temb).sample),
                     FP32, f"decode of {frames} latent frames")
    assert len(ours.compile_stats()) == compiled


@by_hand  # the released architecture's whole parity row: minutes on 2 cores, out of CI's time; by hand
def test_official_fp32_and_bf16():
    """The released LTX-Video 0.9.0 and 0.9.1 VAEs' architectures, seeded random weights, 9 frames at 32x32."""
    for name, temb in (("ltx090", None), ("ltx091", torch.tensor([0.05]))):
        vae = random_vae(name)
        ours = TorchaxVAE(vae)
        x = randn(1, 3, 9, 32, 32)
        assert_close(ours.encode(x).latent_dist.mean, vae.encode(x).latent_dist.mean, FP32, f"{name} encode")
        z = vae.encode(x).latent_dist.mean
        assert_close(seeded(lambda: ours.decode(z, temb).sample), seeded(lambda: vae.decode(z, temb).sample),
                     FP32, f"{name} decode")
        args = () if temb is None else (temb,)
        bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), x, name, args)


def _ltx_pipeline(pipeline_class, vae):
    from diffusers import FlowMatchEulerDiscreteScheduler, LTXVideoTransformer3DModel

    torch.manual_seed(0)  # as diffusers' LTX pipeline tests build it, prompt embeddings given (no T5 offline)
    transformer = LTXVideoTransformer3DModel(
        in_channels=8, out_channels=8, patch_size=1, patch_size_t=1, num_attention_heads=4, attention_head_dim=8,
        cross_attention_dim=32, num_layers=1, caption_channels=32,
    ).eval()
    pipe = pipeline_class(transformer=transformer, vae=vae, scheduler=FlowMatchEulerDiscreteScheduler(),
                          text_encoder=None, tokenizer=None)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def _prompt():
    generator = torch.Generator().manual_seed(1)
    return dict(prompt_embeds=torch.randn(1, 16, 32, generator=generator),
                prompt_attention_mask=torch.ones(1, 16, dtype=torch.long), guidance_scale=1.0,
                num_inference_steps=2, height=32, width=32, num_frames=9, output_type="pt")


def _swapped(pipe, vae, **inputs):
    """The pipeline's frames with diffusers' VAE, then with a TorchaxVAE of it (same seeds for both)."""
    with torch.no_grad():
        expected = seeded(lambda: pipe(generator=torch.Generator().manual_seed(0), **inputs).frames)
        pipe.vae = TorchaxVAE(vae)
        actual = seeded(lambda: pipe(generator=torch.Generator().manual_seed(0), **inputs).frames)
    return actual, expected


def test_ltx_image_to_video_pipeline_with_decode_timestep():
    """0.9.1's VAE (timestep, injected noise): the image is encoded, the latents decoded at decode_timestep."""
    from diffusers import LTXImageToVideoPipeline

    vae = noisy_vae()
    image = torch.rand(1, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    inputs = dict(_prompt(), image=image, decode_timestep=0.05, decode_noise_scale=0.025)
    actual, expected = _swapped(_ltx_pipeline(LTXImageToVideoPipeline, vae), vae, **inputs)
    assert actual.shape == (1, 9, 3, 32, 32)
    assert_close(actual, expected, FP32, "LTXImageToVideoPipeline frames")


def test_command_round_trip_of_the_pipelines_packed_latents(tmp_path, capsys):
    """LTXPipeline(output_type="latent") returns normalized latents packed as [B, frames x h x w, C]: the
    command unpacks them with --size, denormalizes them with the VAE's buffers, mixes in the decode noise
    and decodes at the timestep, as the pipeline does (its noise from --seed)."""
    import numpy as np
    from diffusers.utils.torch_utils import randn_tensor

    from torchax_vae.cli import main

    vae = noisy_vae()
    with torch.no_grad():
        vae.latents_mean.copy_(torch.linspace(-0.5, 0.5, 8))
        vae.latents_std.copy_(torch.linspace(0.5, 2.0, 8))
    vae.save_pretrained(tmp_path / "model" / "vae")
    z = randn(1, 8, 2, 2, 3)
    torch.save(z.permute(0, 2, 3, 4, 1).reshape(1, 12, 8), tmp_path / "latents.pt")  # _pack_latents, patch size 1
    args = ["decode", str(tmp_path / "latents.pt"), "--model", str(tmp_path / "model"), "--no-cache", "--no-progress"]
    out = tmp_path / "video.npy"
    assert main([*args, "-o", str(out)]) == 2
    assert "pass --size HEIGHTxWIDTH" in capsys.readouterr().err
    assert main([*args, "-o", str(out), "--size", "16x24", "--decode-timestep", "0.05", "--seed", "3"]) == 0, (
        capsys.readouterr().err)

    z = z * vae.latents_std.view(1, -1, 1, 1, 1) + vae.latents_mean.view(1, -1, 1, 1, 1)  # _denormalize_latents
    z = 0.95 * z + 0.05 * randn_tensor(z.shape, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        expected = seeded(lambda: vae.decode(z, torch.tensor([0.05])).sample, 3)[0]
    expected = ((expected / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 3, 0).numpy()
    actual = np.load(out)
    assert actual.shape == (9, 16, 24, 3)
    assert np.abs(actual.astype(int) - expected.astype(int)).max() <= 1  # a rounding step of a 1e-6 difference

    plain = random_vae("ltx-tiny")  # 0.9.0: no timestep, and the command says so before compiling
    plain.save_pretrained(tmp_path / "plain" / "vae")
    torch.save(torch.zeros(1, 8, 2, 2, 3), tmp_path / "z.pt")
    assert main(["decode", str(tmp_path / "z.pt"), "-o", str(out), "--model", str(tmp_path / "plain"),
                 "--decode-timestep", "0.05", "--no-cache"]) == 2
    assert "takes none" in capsys.readouterr().err


def test_torchax_alone_would_not_draw_from_torchs_generator():
    """Why torchax_vae/patches/ltx_noise.py: traced as is, the decoder's torch.randn is torchax's own random stream, not
    the numbers torch's global generator gives PyTorch's decoder after the same seed."""
    import numpy as np

    from torchax_vae.patches import import_torchax

    env = import_torchax().default_env()
    torch.manual_seed(5)
    expected = torch.randn(4, 4)
    torch.manual_seed(5)
    with env:  # as in the decoder: on the hidden states' device, torchax's "jax"
        drawn = torch.randn(4, 4, device="jax")
    actual = torch.from_numpy(np.array(env.t2j_iso(drawn)))  # a writable copy
    assert actual.shape == expected.shape and not torch.allclose(actual, expected)
