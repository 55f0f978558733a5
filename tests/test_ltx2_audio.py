"""LTX-2's sound: diffusers' AutoencoderKLLTX2Audio and its vocoders (LTX2Vocoder, LTX2VocoderWithBWE) on JAX,
against the same models in PyTorch (torchax_vae/models/ltx2_audio.py, ltx2_vocoder.py)."""

import copy
import re

import pytest
import torch

from helpers import TOLERANCE, assert_close, bf16_check, check_encode_decode, needs, randn, random_vae
from vaes import requires
from torchax_vae import TorchaxVAE

pytestmark = needs("ltx2-audio-tiny")

ATOL = TOLERANCE[torch.float32]

# diffusers' LTX2Pipeline fast-test audio VAE (tests/pipelines/ltx2/test_ltx2.py, 58eb52c: one level, no
# downsampling) and a three-level one as the released model has (4x time and mel compression), small.
PIPELINE_TEST = dict(base_channels=4, output_channels=2, ch_mult=(1,), num_res_blocks=1, attn_resolutions=None,
                     in_channels=2, resolution=32, latent_channels=2, norm_type="pixel", causality_axis="height",
                     dropout=0.0, mid_block_add_attention=False, sample_rate=16000, mel_hop_length=160, is_causal=True,
                     mel_bins=8)
THREE_LEVELS = dict(PIPELINE_TEST, base_channels=8, ch_mult=(1, 2, 2), latent_channels=4, mel_bins=16)
# LTX2VocoderWithBWE, small: 16 kHz from the vocoder, its STFT's hop 4, the extension's 12x to 48 kHz
BWE = dict(in_channels=2 * 16, hidden_channels=32, upsample_kernel_sizes=[4, 4], upsample_factors=[2, 2],
           resnet_kernel_sizes=[3], resnet_dilations=[[1, 3, 5]], bwe_in_channels=2 * 8, bwe_hidden_channels=32,
           bwe_upsample_kernel_sizes=[5, 8], bwe_upsample_factors=[3, 4], bwe_resnet_kernel_sizes=[3],
           bwe_resnet_dilations=[[1, 3, 5]], filter_length=16, hop_length=4, window_length=16, num_mel_channels=8)
VOCODER = dict(in_channels=2 * 16, hidden_channels=32, out_channels=2, upsample_kernel_sizes=[4, 4],
               upsample_factors=[2, 2], resnet_kernel_sizes=[3], resnet_dilations=[[1, 3, 5]],
               leaky_relu_negative_slope=0.1, output_sampling_rate=16000)


def audio_vae(**config):
    from diffusers import AutoencoderKLLTX2Audio

    torch.manual_seed(0)
    return AutoencoderKLLTX2Audio(**config).eval()


def vocoder(**config):
    from diffusers.pipelines.ltx2.vocoder import LTX2Vocoder

    torch.manual_seed(0)
    return LTX2Vocoder(**config).eval()


def ltx2_folder(root):
    """An LTX-2 pipeline folder's VAEs at `root` (vae/, audio_vae/, vocoder/: small, seeded random weights), as
    `pipe.save_pretrained` lays them out; returns stage 2's output for two clips, the video's latents and the
    audio's ([B, C, L, mel_bins / 4], as LTX2Pipeline returns them), and PyTorch's waveform of that audio."""
    from vaes import random_vae

    random_vae("ltx2-tiny").save_pretrained(root / "vae")
    vae, voc = audio_vae(**THREE_LEVELS), vocoder(**VOCODER)
    vae.save_pretrained(root / "audio_vae")
    voc.save_pretrained(root / "vocoder")
    g = torch.Generator().manual_seed(0)
    video, audio = torch.randn(2, 8, 2, 4, 4, generator=g), torch.randn(2, 4, 40, 4, generator=g)
    with torch.no_grad():
        return video, audio, voc(vae.decode(audio).sample)


@pytest.fixture(scope="module")
def three_levels():
    vae = audio_vae(**THREE_LEVELS)
    return vae, TorchaxVAE(vae)


@torch.no_grad()
@pytest.mark.parametrize("config", [PIPELINE_TEST, THREE_LEVELS], ids=["pipeline-test", "three-levels"])
def test_encode_decode_match_pytorch(config):
    vae = audio_vae(**config)
    ours = TorchaxVAE(vae)
    x = randn(2, 2, 21, config["mel_bins"], seed=3)
    check_encode_decode(vae, ours, x, "ltx2 audio")
    z = vae.encode(x).latent_dist.mode()
    assert ours.latent_shape(tuple(x.shape)) == tuple(z.shape)
    # the decoded length is diffusers' 4 L - 3 whatever the levels (its constant), padded or cut in the program
    assert ours.decode(z).sample.shape == (2, 2, 4 * z.shape[2] - 3, config["mel_bins"])


@torch.no_grad()
@pytest.mark.parametrize("axis", ["height", "width", "none", "width-compatibility"])
def test_latent_shape_follows_the_causal_axis(axis):
    """Each downsampling keeps (n - 1) // 2 + 1 on the causal axis, n // 2 on the others, as the encoder makes."""
    vae = audio_vae(**dict(THREE_LEVELS, causality_axis=axis))
    ours = TorchaxVAE(vae)
    for frames, mels in ((9, 16), (17, 16), (20, 15), (12, 9)):
        x = randn(1, 2, frames, mels, seed=frames)
        assert ours.latent_shape(tuple(x.shape)) == tuple(vae.encode(x).latent_dist.mean.shape), (axis, frames, mels)


@torch.no_grad()
def test_slicing_and_interface(three_levels):
    from diffusers import AutoencoderKLLTX2Audio

    vae, ours = three_levels
    assert isinstance(ours, AutoencoderKLLTX2Audio)
    assert (ours.temporal_compression_ratio, ours.mel_compression_ratio) == (4, 4)  # diffusers' constants, read by the pipeline
    assert torch.equal(ours.latents_mean, vae.latents_mean) and torch.equal(ours.latents_std, vae.latents_std)
    # what the class lacks, the wrapper lacks, and tiling is refused as diffusers refuses it
    assert not any(hasattr(ours, name) for name in ("tiled_encode", "tiled_decode", "_tiled_encode", "unpack_latents"))
    with pytest.raises(NotImplementedError, match="Tiling"):
        vae.enable_tiling()
    with pytest.raises(NotImplementedError, match="Tiling"):
        ours.enable_tiling()
    sliced = copy.deepcopy(vae)
    sliced.enable_slicing()
    ours_sliced = TorchaxVAE(sliced)
    assert ours_sliced.use_slicing
    x = randn(3, 2, 13, 16, seed=4)
    assert_close(ours_sliced.encode(x).latent_dist.mean, vae.encode(x).latent_dist.mean, ATOL, "sliced encode")
    z = vae.encode(x).latent_dist.mean
    assert_close(ours_sliced.decode(z).sample, vae.decode(z).sample, ATOL, "sliced decode")


@torch.no_grad()
def test_latent_normalization_is_the_pipelines(three_levels):
    """`scale_latents` is LTX2Pipeline's normalization of its packed audio latents [B, L, C x M], on [B, C, L, M]."""
    from diffusers import LTX2Pipeline

    vae, _ = three_levels
    config = dict(THREE_LEVELS, base_channels=4 * 4)  # latents_mean has base_channels values: C x M = 4 x 4 here
    vae = audio_vae(**config)
    g = torch.Generator().manual_seed(0)
    vae.latents_mean.copy_(torch.randn(16, generator=g))
    vae.latents_std.copy_(torch.rand(16, generator=g) + 0.5)
    ours = TorchaxVAE(vae)
    z = torch.randn(2, 4, 5, 4, generator=g)
    packed = LTX2Pipeline._pack_audio_latents(z)
    expected = LTX2Pipeline._unpack_audio_latents(
        LTX2Pipeline._normalize_audio_latents(packed, vae.latents_mean, vae.latents_std), 5, num_mel_bins=4)
    assert_close(ours.scale_latents(z), expected, 1e-6, "scale_latents")
    assert_close(ours.unscale_latents(ours.scale_latents(z)), z, 1e-5, "unscale_latents")
    assert torch.equal(ours.denormalize_latents(z), z)  # the pipeline's output_type="latent" is the VAE's own
    with pytest.raises(ValueError, match="packed latents of 16 features"):
        ours.scale_latents(torch.randn(1, 4, 5, 2))


def test_bf16_and_saving(three_levels, tmp_path):
    from diffusers import AutoencoderKLLTX2Audio

    vae, ours = three_levels
    with torch.no_grad():
        bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), randn(1, 2, 17, 16, seed=5), "ltx2 audio")
    ours.save_pretrained(tmp_path)
    z = randn(1, 4, 5, 4, seed=6)
    with torch.no_grad():
        assert_close(AutoencoderKLLTX2Audio.from_pretrained(tmp_path).decode(z).sample, vae.decode(z).sample, 0.0,
                     "plain diffusers, reloaded")
    state = ours.state_dict()
    assert set(state) == set(vae.state_dict()) and torch.equal(state["latents_mean"], vae.latents_mean)


@torch.no_grad()
def test_vocoder_matches_pytorch():
    voc = vocoder(**VOCODER)
    ours = TorchaxVAE(voc)
    from diffusers.pipelines.ltx2.vocoder import LTX2Vocoder

    assert isinstance(ours, LTX2Vocoder) and ours.sampling_rate == 16000
    assert not any(hasattr(ours, name) for name in ("encode", "decode", "tiled_decode", "enable_slicing", "use_tiling",
                                                    "disable_tiling"))
    mel = randn(2, 2, 11, 16, seed=7)
    waveform = ours(mel)
    assert_close(waveform, voc(mel), ATOL, "vocoder")
    assert waveform.shape == (2, 2, 11 * 4)
    assert_close(ours(mel.transpose(2, 3), time_last=True), voc(mel.transpose(2, 3), time_last=True), ATOL,
                 "vocoder, time last")
    with pytest.raises(ValueError, match="3 channels x 16 mel bins = 48 features; this LTX2Vocoder takes 32"):
        ours(randn(1, 3, 11, 16))
    with pytest.raises(ValueError, match=r"spectrogram \[B, C, T, mel_bins\] \(4-D\)"):
        ours(randn(2, 32, 11))
    with pytest.raises(TypeError, match="bfloat16, but this TorchaxVAE computes in float32"):
        ours(mel.bfloat16())


@torch.no_grad()
@needs("ltx2.3-vocoder")  # by diffusers' version (0.38 added it)
def test_vocoder_with_bandwidth_extension_matches_pytorch():
    """LTX-2.3's LTX2VocoderWithBWE: the vocoder, its output's log-mel spectrogram (a causal STFT inside), the
    bandwidth extension and the resampled skip, one program. A small config of the released one's proportions (48 kHz
    from 16 kHz: the extension upsamples by 3 x the STFT's hop); the released one in
    test_released_vocoders_match_pytorch."""
    from diffusers.pipelines.ltx2 import vocoder as module

    torch.manual_seed(0)
    voc = module.LTX2VocoderWithBWE(**BWE).eval()
    ours = TorchaxVAE(voc)
    mel = randn(2, 2, 9, 16, seed=8)
    expected = voc(mel)
    assert_close(ours(mel), expected, ATOL, "vocoder with BWE")
    assert expected.abs().max() > 0.1 and ours.sampling_rate == 48000


@pytest.mark.slow
@pytest.mark.heavy  # about 2 minutes on 2 cores
@torch.no_grad()
def test_plan_and_precompile_take_the_vocoders_spectrogram():
    """`plan` and `precompile` of a vocoder (its call, as a decode) take its spectrogram [B, C, T, mel_bins] as
    `forward` does, C x mel_bins its in_channels, and compile the program `forward` then runs; another split of
    the features is refused in one line."""
    from diffusers.pipelines.ltx2 import vocoder as module

    from torchax_vae.plan import plan

    classes = [(VOCODER, module.LTX2Vocoder)] + ([(BWE, module.LTX2VocoderWithBWE)]
                                                if not requires("ltx2.3-vocoder") else [])
    for config, make in classes:
        torch.manual_seed(0)
        voc = make(**config).eval()
        ours = TorchaxVAE(voc)
        spectrogram = torch.randn(1, 2, 9, config["in_channels"] // 2, generator=torch.Generator().manual_seed(2))
        with torch.no_grad():
            expected = voc(spectrogram)
            assert expected.abs().max() > 1e-3
        planned = plan(ours, "decode", tuple(spectrogram.shape), "h100")
        assert tuple(planned.output_shape) == tuple(expected.shape), (planned.output_shape, expected.shape)
        assert [s["name"] for s in ours.precompile("decode", tuple(spectrogram.shape))] == ["vocoder"]
        before = len(ours.compile_stats())
        with torch.no_grad():
            assert_close(ours(spectrogram), expected, ATOL, f"{type(voc).__name__} after precompile")
        assert len(ours.compile_stats()) == before
        with pytest.raises(ValueError, match=r"has 4 channels x .* mel bins = .* features; this LTX2Vocoder"):
            plan(ours, "decode", (1, 4, 9, config["in_channels"] // 2), "h100")


def test_the_plan_command_takes_spectrograms(tmp_path, capsys):
    """`torchax-vae plan --shape B,C,T,MEL`: LTX-2's audio VAE (its spectrogram to encode, its latents to decode)
    and vocoder take their 4-D inputs as they are; a split of the vocoder's features it does not take, and a 4-D
    shape for a video VAE, are one line, exit 2."""
    import json

    from diffusers.pipelines.ltx2.vocoder import LTX2Vocoder

    from torchax_vae import cli

    audio_vae(**THREE_LEVELS).save_pretrained(tmp_path / "audio_vae")
    LTX2Vocoder(**VOCODER).save_pretrained(tmp_path / "vocoder")
    random_vae("ltx2-tiny").save_pretrained(tmp_path / "vae")
    cases = [("audio_vae", "encode", "1,2,17,16", [1, 8, 5, 4]), ("audio_vae", "decode", "1,4,5,4", [1, 2, 17, 16]),
             ("vocoder", "decode", "1,2,9,16", [1, 2, 36])]
    for folder, kind, shape, output in cases:
        code = cli.main(["plan", "--model", str(tmp_path / folder), "--target", "h100", "--kind", kind, "--shape",
                         shape, "--json", "--no-progress"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert json.loads(out)["output_shape"] == output, (folder, kind, out)
    for folder, shape, message in (("vocoder", "1,4,9,16", "4 channels x 16 mel bins = 64 features"),
                                   ("vae", "1,8,2,4", "takes videos \\[B, C, F, H, W\\]")):
        code = cli.main(["plan", "--model", str(tmp_path / folder), "--target", "h100", "--shape", shape,
                         "--no-progress"])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and re.search(message, err), err


@pytest.mark.slow  # 60 s: released sizes (the contract's rows: every run) (CI: every sixth run)
def test_released_audio_vae_and_vocoders_match_pytorch():
    """The released architectures (the classes' defaults: 53 M, 56 M and 129 M parameters) on a short clip: 5
    latent frames, 17 spectrogram frames, 4080 samples (LTX-2) and 8160 (LTX-2.3)."""
    from diffusers import AutoencoderKLLTX2Audio
    from diffusers.pipelines.ltx2 import vocoder as module

    torch.manual_seed(0)
    vae = AutoencoderKLLTX2Audio().eval()
    x = randn(1, 2, 17, 64, seed=10)
    check_encode_decode(vae, TorchaxVAE(vae), x, "released ltx2 audio")
    mel = vae.decode(vae.encode(x).latent_dist.mode()).sample
    for name in ("LTX2Vocoder", "LTX2VocoderWithBWE"):
        if hasattr(module, name):
            torch.manual_seed(0)
            voc = getattr(module, name)().eval()
            assert_close(TorchaxVAE(voc)(mel), voc(mel), ATOL, f"released {name}")
