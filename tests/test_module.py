"""A TorchaxVAE as a torch module: its weights (state_dict, load_state_dict, parameters), training state, and
the diffusers methods beyond encode/decode (tiled_encode, tiled_decode, clear_cache, gradient checkpointing)."""

import copy

import pytest
import torch
from helpers import TOLERANCE, assert_close, random_vae

from torchax_vae import TorchaxVAE

FP32 = TOLERANCE[torch.float32]
FAMILIES = ["tiny", "wan-tiny"]


def latents(ours, frames=3, size=4, seed=0):
    return torch.randn(1, ours.latent_channels, frames, size, size, generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module", params=FAMILIES)
def pair(request):
    """(config name, diffusers' model, a TorchaxVAE of it): tests leave the TorchaxVAE with the model's weights."""
    vae = random_vae(request.param)
    return request.param, vae, TorchaxVAE(vae)


# ----- weights -----


def test_state_dict_is_the_wrapped_models_keys_shapes_and_values_as_copies(pair):
    _, vae, ours = pair
    expected, actual = vae.state_dict(), ours.state_dict()
    assert list(actual) == list(expected)
    for key, value in expected.items():
        assert actual[key].dtype == value.dtype and actual[key].device == ours.device
        assert torch.equal(actual[key], value), key
    z = latents(ours)
    before = ours.decode(z).sample
    for value in actual.values():
        value.mul_(0)  # a copy: editing it changes nothing the wrapper computes with
    assert torch.equal(ours.decode(z).sample, before)
    assert list(ours.state_dict(prefix="vae.")) == [f"vae.{k}" for k in expected]


def test_load_state_dict_replaces_the_weights_without_compiling_again(pair):
    name, vae, ours = pair
    other = random_vae(name, seed=1)
    z = latents(ours)
    ours.decode(z)
    compiled = len(ours.compile_stats())
    try:
        result = ours.load_state_dict(other.state_dict())
        assert result.missing_keys == [] and result.unexpected_keys == []
        assert_close(ours.decode(z).sample, other.decode(z).sample, FP32, "decode with the loaded weights")
        assert len(ours.compile_stats()) == compiled  # weights are arguments: nothing new to compile
        assert all(torch.equal(v, other.state_dict()[k]) for k, v in ours.state_dict().items())
    finally:
        ours.load_state_dict(vae.state_dict())
    assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, "decode after loading the first weights back")


def test_load_state_dict_follows_torchs_strict_rules_and_changes_nothing_on_error():
    vae = random_vae("wan-tiny")
    ours = TorchaxVAE(vae)
    state = vae.state_dict()
    first = next(iter(state))
    doubled = {k: v * 2 for k, v in state.items()}
    missing = {k: v for k, v in doubled.items() if k != first}
    with pytest.raises(RuntimeError, match=rf'Error\(s\) in loading state_dict for WanVAE:\n\tMissing key\(s\) in state_dict: "{first}"'):
        ours.load_state_dict(missing)
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "extra.weight"'):
        ours.load_state_dict({**doubled, "extra.weight": torch.zeros(1)})
    wrong = {**doubled, first: torch.zeros(2, 2)}
    for strict in (True, False):  # a wrong shape raises either way, as in torch
        with pytest.raises(RuntimeError, match=f"size mismatch for {first}: copying a param with shape"):
            ours.load_state_dict(wrong, strict=strict)
    with pytest.raises(RuntimeError, match="expected torch.Tensor"):
        ours.load_state_dict({**doubled, first: [1.0]})
    with pytest.raises(TypeError, match="dict-like"):
        ours.load_state_dict([("a", torch.zeros(1))])
    assert all(torch.equal(v, state[k]) for k, v in ours.state_dict().items())  # nothing was replaced
    result = ours.load_state_dict({**missing, "extra.weight": torch.zeros(1)}, strict=False)
    assert result.missing_keys == [first] and result.unexpected_keys == ["extra.weight"]
    after = ours.state_dict()
    assert torch.equal(after[first], state[first]) and all(torch.equal(after[k], v) for k, v in missing.items())


def test_load_state_dict_casts_to_the_wrappers_dtype():
    vae = random_vae("tiny")
    ours = TorchaxVAE(vae, dtype=torch.bfloat16)
    ours.load_state_dict(vae.state_dict())  # fp32 tensors into a bf16 wrapper, as torch's copy_ casts
    assert {v.dtype for v in ours.state_dict().values()} == {torch.bfloat16}
    assert all(torch.equal(v, vae.state_dict()[k].bfloat16()) for k, v in ours.state_dict().items())


def test_parameters_count_and_locate_like_the_wrapped_model(pair):
    _, vae, ours = pair
    assert ours.num_parameters() == vae.num_parameters() > 0
    assert ours.num_parameters(only_trainable=True) == 0  # gradients reach inputs, not weights
    first = next(ours.parameters())  # what pipelines and accelerate read a module's device and dtype from
    assert isinstance(first, torch.nn.Parameter) and not first.requires_grad
    assert (first.dtype, first.device) == (ours.dtype, ours.device)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in vae.named_parameters()]
    assert ours.get_memory_footprint() == vae.get_memory_footprint()
    assert ours.requires_grad_(False) is ours  # freezing the VAE, as training scripts do
    with pytest.raises(NotImplementedError, match="inputs only"):
        ours.requires_grad_(True)


def test_a_meta_wrapper_gets_real_weights_from_load_state_dict():
    vae = random_vae("wan-tiny")
    with torch.device("meta"):
        abstract = type(vae).from_config(vae.config)
    ours = TorchaxVAE(abstract)
    assert {v.device.type for v in ours.state_dict().values()} == {"meta"}
    z = latents(ours)
    with pytest.raises(ValueError, match="meta device"):
        ours.decode(z)
    ours.load_state_dict(vae.state_dict())
    assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, "decode after loading real weights")


@pytest.mark.parametrize("name", ["qwenimage-tiny", "hunyuan-tiny", "hunyuan15-tiny", "allegro-tiny",
                                  "mochi-tiny", "cosmos-tiny", "magvit-tiny", "ltx091-tiny",
                                  pytest.param("ltx2ts-tiny", marks=pytest.mark.slow)])
@pytest.mark.slow  # 41 s, eight families (CogVideoX's, Wan's: every run) (CI: every sixth run)
def test_state_dict_round_trips_in_the_other_families(name):
    vae, other = random_vae(name), random_vae(name, seed=1)
    ours = TorchaxVAE(vae)
    assert list(ours.state_dict()) == list(vae.state_dict())
    assert all(torch.equal(v, vae.state_dict()[k]) for k, v in ours.state_dict().items())
    with torch.no_grad():  # LTX's latents_mean / latents_std buffers travel too
        for key in ("latents_mean", "latents_std"):
            if key in other.state_dict():
                other.get_buffer(key).add_(0.5)
    ours.load_state_dict(other.state_dict())
    for key in ("latents_mean", "latents_std"):
        if key in other.state_dict():
            assert torch.equal(getattr(ours, key), other.get_buffer(key))
    z = latents(ours, frames=1, size=2)
    if name == "allegro-tiny":  # one whole latent tile; diffusers' class decodes only tiled
        z = latents(ours, frames=6, size=16)
        other.enable_tiling()
    args = (torch.tensor([0.05]),) if getattr(vae.config, "timestep_conditioning", False) else ()
    assert_close(ours.decode(z, *args).sample, other.decode(z, *args).sample, FP32, f"{name} decode with loaded weights")


# ----- training state -----


def test_training_follows_the_wrapped_model_and_eval_train():
    vae = random_vae("tiny")
    assert TorchaxVAE(vae.eval()).training is False
    ours = TorchaxVAE(copy.deepcopy(vae).train())
    assert ours.training is True
    assert ours.eval() is ours and ours.training is False
    assert ours.train() is ours and ours.training is True


def test_training_mode_is_refused_where_it_would_compute_otherwise():
    """A model with dropout may be wrapped in training mode (diffusers' tests build them so and call .eval() later),
    but computing in training mode raises, before anything compiles; after .eval() it computes."""
    vae = random_vae("wan-tiny")
    vae.encoder.down_blocks[0].dropout.p = 0.1
    x = torch.randn(1, 3, 1, 16, 16)
    ours = TorchaxVAE(vae.train())
    assert ours.training
    with pytest.raises(ValueError, match="differ in training mode .*dropout.*call .eval()"):
        ours.encode(x)
    assert ours.compile_stats() == []
    ours.eval()
    expected = vae.eval().encode(x).latent_dist.mean
    got = ours.encode(x).latent_dist.mean
    assert (got - expected).abs().max() < 1e-4, (got - expected).abs().max()
    with pytest.raises(ValueError, match="differ in training mode"):
        ours.train().decode(got)


# ----- the rest of diffusers' VAE methods -----


# Wan's exact-shape tiles: 60 s on 2 cores, with the official-config cases (its tiling: tests/test_wan.py)
@pytest.mark.slow  # 27 s on 2 cores (tiling itself: tests/test_tiling.py)
@pytest.mark.parametrize("name", ["tiny", pytest.param("wan-tiny", marks=[pytest.mark.heavy, pytest.mark.by_hand])])  # Wan: 109 s
def test_tiled_encode_and_tiled_decode_are_diffusers(name):
    vae = random_vae(name)
    ours = TorchaxVAE(vae)
    if name == "tiny":  # as tests/test_tiling.py: short edge tiles on both axes
        settings = dict(tile_sample_min_height=32, tile_sample_min_width=24, tile_overlap_factor_height=1 / 4,
                        tile_overlap_factor_width=1 / 3)
    else:
        settings = dict(tile_sample_min_height=32, tile_sample_min_width=32,
                        tile_sample_stride_height=16, tile_sample_stride_width=16)
    vae.enable_tiling(**settings)
    ours.enable_tiling(**settings)
    ours.disable_tiling()  # tiled_* tile whatever the mode, as diffusers' do
    x = torch.randn(1, 3, 5, 40, 48, generator=torch.Generator().manual_seed(2))
    assert_close(ours.tiled_encode(x), vae.tiled_encode(x), FP32, "tiled_encode")
    z = vae.encode(x).latent_dist.mean
    expected = vae.tiled_decode(z).sample
    assert_close(ours.tiled_decode(z).sample, expected, FP32, "tiled_decode")
    assert_close(ours.tiled_decode(z, return_dict=False)[0], expected, FP32, "tiled_decode, return_dict=False")


@pytest.mark.slow  # 23 s on 2 cores
def test_wan22_tiled_encode_takes_the_patchified_video_as_diffusers():
    from diffusers.models.autoencoders.autoencoder_kl_wan import patchify

    vae = random_vae("wan2.2-tiny")
    ours = TorchaxVAE(vae)
    settings = dict(tile_sample_min_height=32, tile_sample_min_width=32,
                    tile_sample_stride_height=16, tile_sample_stride_width=16)
    vae.enable_tiling(**settings)
    ours.enable_tiling(**settings)
    x = patchify(torch.randn(1, 3, 5, 64, 64, generator=torch.Generator().manual_seed(3)), patch_size=2)
    assert_close(ours.tiled_encode(x), vae.tiled_encode(x), FP32, "Wan 2.2 tiled_encode")


def test_clear_cache_is_there_and_harmless():
    vae = random_vae("wan-tiny")
    ours = TorchaxVAE(vae)
    z = latents(ours)
    before = ours.decode(z).sample
    ours.clear_cache()
    assert torch.equal(ours.decode(z).sample, before)


# ----- config (ConfigMixin) -----


def test_config_methods_behave_as_on_the_wrapped_class(tmp_path):
    """register_to_config, save_config, load_config, from_config and extract_init_dict, as diffusers' models have."""
    vae = random_vae("wan-tiny")
    ours = TorchaxVAE(vae)
    assert ours.config == vae.config
    ours.register_to_config(test_attribute=5)
    assert ours.config.test_attribute == 5 and "test_attribute" not in vae.config  # the wrapped model keeps its own
    with pytest.warns(FutureWarning):  # config attributes on the model itself: diffusers' deprecation, as there
        assert ours.test_attribute == 5
    with pytest.raises(AttributeError, match="'WanVAE' object has no attribute 'does_not_exist'"):
        ours.does_not_exist  # noqa: B018
    ours.save_config(tmp_path)
    saved = TorchaxVAE.load_config(tmp_path)
    assert saved["_class_name"] == "AutoencoderKLWan" and saved["test_attribute"] == 5
    assert "_class_name" not in ours.config  # writing the file named the class without touching the config
    assert type(vae).from_config(saved).config.z_dim == vae.config.z_dim  # diffusers alone reads it
    again = TorchaxVAE.from_config(saved, dtype=torch.bfloat16)
    assert type(again) is type(ours) and again.dtype == torch.bfloat16 and again.config.z_dim == vae.config.z_dim
    assert type(ours).extract_init_dict(dict(vae.config))[0]["z_dim"] == vae.config.z_dim
    assert TorchaxVAE.extract_init_dict(saved)[0] == type(vae).extract_init_dict(saved)[0]
    with pytest.raises(ValueError, match="no `_class_name`"):
        TorchaxVAE.extract_init_dict(dict(vae.config))
    assert ours._supports_gradient_checkpointing  # enable_gradient_checkpointing works for every family
