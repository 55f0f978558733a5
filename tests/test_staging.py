"""One program per layer (torchax_vae/engine/staging.py): the plan, parity with one program per batch, memory."""

import pytest
import torch
from helpers import TOLERANCE, assert_close, random_vae

from torchax_vae import TorchaxVAE
from torchax_vae.engine import staging
from torchax_vae.engine.lowering import private_copy
from torchax_vae.models.cogvideox import STAGES
from torchax_vae.patches import frame_conv

FP32 = TOLERANCE[torch.float32]


def test_plan_of_the_official_decoder():
    decoder = random_vae("official").decoder
    stages = staging.plan(decoder, STAGES)
    names = [(s.path, s.sub_path) for s in stages]
    assert names[0] == ("conv_in", None) and names[-1] == ("conv_out", None)
    assert names[-3:-1] == [("norm_out", None), ("conv_act", None)]
    # every resnet runs as one program per convolution, a channel-changing one with its shortcut last
    assert [sub for path, sub in names if path == "up_blocks.3.resnets.0"] == [
        f"up_blocks.3.resnets.0.{conv}" for conv in ("conv1", "conv2", "conv_shortcut")
    ]
    assert [sub for path, sub in names if path == "mid_block.resnets.1"] == [
        "mid_block.resnets.1.conv1", "mid_block.resnets.1.conv2"
    ]
    assert ("up_blocks.2.upsamplers.0", None) in names
    resnets = {path for path, sub in names if sub is not None}
    assert len(resnets) == 2 + 4 * 4  # mid block 2, four up blocks of layers_per_block + 1 = 4
    # the last sub-stage of a resnet hands the resnet's output on; the others hand on their convolution's
    assert all(s.last_sub == (s.sub is None or s.sub_path == [t.sub_path for t in stages if t.path == s.path][-1])
               for s in stages)


def test_wrapped_modules_behave_as_before_outside_a_stage_trace(tiny_vae):
    model = private_copy(tiny_vae)
    model.load_state_dict(tiny_vae.state_dict(), assign=True)
    z = torch.randn(1, 4, 3, 4, 6)
    expected, _ = tiny_vae.decoder(z)
    staging.install(model.decoder, STAGES)
    actual, _ = model.decoder(z)
    assert torch.equal(actual, expected)


@pytest.mark.slow  # 56 s on 2 cores: CI's slow set (the default suite under 20 minutes)
@pytest.mark.parametrize("frames", [pytest.param(1, marks=[pytest.mark.slow, pytest.mark.heavy]), 9, pytest.param(17, marks=[pytest.mark.slow, pytest.mark.heavy])])
def test_layer_programs_equal_batch_programs_and_pytorch(tiny_vae, frames):
    """Both splits against PyTorch: several frame batches, so every layer's conv_cache is carried."""
    x = torch.randn(2, 3, frames, 16, 24, generator=torch.Generator().manual_seed(frames))
    expected = tiny_vae.encode(x).latent_dist.mean
    decoded = tiny_vae.decode(expected).sample
    for split in ("layer", "batch"):
        ours = TorchaxVAE(tiny_vae)
        ours.program_split = split
        assert_close(ours.encode(x).latent_dist.mean, expected, FP32, f"{split} encode {frames}f")
        assert_close(ours.decode(expected).sample, decoded, FP32, f"{split} decode {frames}f")
        names = {stats["name"].split("+")[0] for stats in ours.compile_stats()}
        if split == "batch":
            assert names == {"encoder", "decoder"}
        else:
            assert len(names) == len(ours._family.lowered.stages["encoder"]) + len(ours._family.lowered.stages["decoder"])


def test_auto_split_is_layers_on_cpu_and_settable(tiny_vae):
    ours = TorchaxVAE(tiny_vae)
    assert ours.program_split == "auto" and ours._family._layered  # JAX's CPU backend here
    ours.program_split = "batch"
    assert not ours._family._layered
    with pytest.raises(ValueError, match="program_split must be 'batch', 'layer' or 'auto', got 'layers'"):
        ours.program_split = "layers"


def test_stage_order_is_checked(tiny_vae):
    """A forward that calls its stage modules in another order than registered is an error, not a wrong result."""
    stages = staging.plan(tiny_vae.decoder, STAGES)
    swapped = [stages[1], stages[0], *stages[2:]]
    model = private_copy(tiny_vae)
    model.load_state_dict(tiny_vae.state_dict(), assign=True)
    staging.install(model.decoder, STAGES)
    z = torch.randn(1, 4, 1, 4, 6)
    with pytest.raises(RuntimeError, match="calls its layers in another order"):
        staging.run(swapped, swapped[1], z, None, None, lambda: model.decoder(z))


@pytest.mark.slow  # the default suite keeps a faster case of the same feature; CI runs this with -m slow
def test_layer_programs_bound_memory_of_a_large_batch(tiny_vae, monkeypatch):
    """Compile-only: the largest layer program's temp memory is a fraction of the whole-batch program's.

    The frame loop of torchax_vae/patches/frame_conv.py is made to start at one full-size frame
    of the tiny model, as it does for the official model's 480x720 frames.
    """
    monkeypatch.setattr(frame_conv, "STEP_BYTES", 16 * 256 * 384 * 4)
    shape = (1, 4, 3, 64, 96)  # 9 frames of 256x384
    temps = {}
    for split in ("batch", "layer"):
        ours = TorchaxVAE(tiny_vae)
        ours.program_split = split
        ours.disable_tiling()
        temps[split] = max(stats["temp_bytes"] for stats in ours.precompile("decode", shape))
    assert temps["layer"] <= 0.4 * temps["batch"], temps


@pytest.mark.slow  # the default suite keeps a faster case of the same feature; CI runs this with -m slow
def test_auto_tiling_counts_layer_inputs_and_carried_caches(tiny_vae):
    ours = TorchaxVAE(tiny_vae, memory_budget=10**12)
    ours.enable_tiling(tile_sample_min_height=16, tile_sample_min_width=16)
    ours.tiling_mode = "auto"
    source_shape = (1, 4, 3, 8, 8)
    assert not any("tile" in stats["name"] for stats in ours.precompile("decode", source_shape))
    largest = max(stats["temp_bytes"] + stats["output_bytes"] + stats["argument_bytes"] for stats in ours.compile_stats())
    ours.memory_budget = largest  # enough for the largest program, not for it plus the carried caches
    assert any("tile" in stats["name"] for stats in ours.precompile("decode", source_shape))
