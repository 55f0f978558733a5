"""What a diffusers user touches besides the numbers: errors, dtype/device, loading, the wrapped module."""

import copy
import json

import jax.numpy as jnp
import numpy as np
import pytest
import torch
from diffusers import DiffusionPipeline
from helpers import MODELS, TOLERANCE, assert_close, random_vae, settings

from torchax_vae import TorchaxVAE
from torchax_vae.models import WRAPPERS

FP32 = TOLERANCE[torch.float32]


@pytest.fixture
def fresh():
    return TorchaxVAE(random_vae("tiny"))


@pytest.mark.parametrize(
    "method,bad,error,message",
    [
        ("encode", np.zeros((1, 3, 1, 16, 16), np.float32), TypeError, "must be a torch.Tensor"),
        ("encode", torch.zeros(3, 1, 16, 16), ValueError, "must be 5-D"),
        ("encode", torch.zeros(1, 4, 1, 16, 16), ValueError, "has 4 channels .* encoder expects 3"),
        ("decode", torch.zeros(1, 16, 1, 2, 2), ValueError, "has 16 channels .* decoder expects 4"),
        ("decode", torch.zeros(1, 4, 1, 2, 2, dtype=torch.int32), TypeError, "floating-point"),
        ("decode", torch.zeros(1, 4, 0, 2, 2), ValueError, "is empty"),
        # fp16 latents into an fp32 model: refused as diffusers' own model refuses them (issue 55; they came back fp16)
        ("decode", torch.zeros(1, 4, 1, 2, 2, dtype=torch.float16), RuntimeError, "is float16, but .* computes in float32"),
        ("encode", torch.full((1, 3, 1, 16, 16), float("nan")), ValueError, "NaN or Inf"),
        ("decode", torch.tensor([float("inf")]).expand(1, 4, 1, 2, 2), ValueError, "NaN or Inf"),
    ],
)
def test_bad_input_raises_before_compiling(fresh, method, bad, error, message):
    with pytest.raises(error, match=message):
        getattr(fresh, method)(bad)
    assert fresh.compile_stats() == []


def test_wrapping_something_else_is_a_type_error():
    with pytest.raises(TypeError, match="AutoencoderKLCogVideoX"):
        TorchaxVAE(torch.nn.Conv3d(3, 3, 1))


def test_users_module_is_untouched_and_weights_are_copies():
    vae = random_vae("tiny")
    state = {k: v.clone() for k, v in vae.state_dict().items()}
    classes = [type(m) for m in vae.modules()]
    ours = TorchaxVAE(vae)
    z = torch.randn(1, 4, 3, 2, 2)
    before = ours.decode(z).sample
    assert [type(m) for m in vae.modules()] == classes
    assert all(torch.equal(state[k], v) for k, v in vae.state_dict().items())
    assert all(p.device.type == "cpu" for p in vae.parameters())
    expected = vae.decode(z).sample  # the PyTorch module still works on its own
    with torch.no_grad():
        for p in vae.parameters():
            p.mul_(0.5)  # an in-place edit of the user's weights must not reach ours
    assert torch.equal(ours.decode(z).sample, before)
    assert_close(before, expected, FP32, "decode")


def test_dtype_device_and_to():
    vae = random_vae("tiny")
    fresh = TorchaxVAE(vae)
    assert fresh.dtype == torch.float32 and fresh.device == torch.device("cpu")
    assert fresh.config.latent_channels == 4 and fresh.config.scaling_factor == pytest.approx(1.15258426)
    z = torch.randn(1, 4, 3, 2, 2)
    fp32_out = fresh.decode(z).sample
    assert fresh.to("cpu") is fresh
    assert fresh.to(torch.bfloat16).dtype == torch.bfloat16
    bf16_out = fresh.decode(z.bfloat16()).sample
    assert bf16_out.dtype == torch.bfloat16 and (bf16_out.float() - fp32_out).abs().max() > 0
    # another dtype than the model's is refused, as diffusers' own model refuses it (torch's RuntimeError), before
    # anything compiles
    compiled = len(fresh.compile_stats())
    for wrong in (z, z.half()):
        with pytest.raises(RuntimeError, match=r"is float(32|16), but this TorchaxVAE computes in bfloat16"):
            fresh.decode(wrong)
        with pytest.raises(RuntimeError):
            copy.deepcopy(vae).to(torch.bfloat16).decode(wrong)
    with pytest.raises(TypeError, match="computes in bfloat16"):
        fresh.encode(torch.zeros(1, 3, 1, 16, 16))
    assert len(fresh.compile_stats()) == compiled
    # back to fp32: its weights went through bf16, as diffusers' own model's do in the same round trip
    fresh.to(dtype=torch.float32)
    theirs = copy.deepcopy(vae).to(torch.bfloat16).to(torch.float32)
    assert_close(fresh.decode(z).sample, theirs.decode(z).sample, FP32, "decode after bf16 -> fp32")


def test_dtype_names_and_bad_dtype():
    vae = random_vae("tiny")
    assert TorchaxVAE(vae, dtype="bf16").dtype == torch.bfloat16
    assert TorchaxVAE(vae.to(torch.bfloat16)).dtype == torch.bfloat16
    with pytest.raises(TypeError, match="dtype must be"):
        TorchaxVAE(vae, dtype="int8")


def test_from_pretrained_local_directory(tmp_path, tiny_vae):
    tiny_vae.save_pretrained(tmp_path / "vae")
    ours = TorchaxVAE.from_pretrained(str(tmp_path), subfolder="vae", dtype=torch.float32)
    x = torch.randn(1, 3, 9, 16, 16)
    assert_close(ours.encode(x).latent_dist.mean, tiny_vae.encode(x).latent_dist.mean, FP32, "from_pretrained encode")


@pytest.mark.slow  # the default suite keeps a faster case of the same feature; CI runs this with -m slow
def test_odd_spatial_sizes(tiny_vae, tiny_torchax):
    x = torch.randn(1, 3, 9, 20, 28)
    expected = tiny_vae.encode(x).latent_dist.mean
    assert_close(tiny_torchax.encode(x).latent_dist.mean, expected, FP32, "encode 20x28")
    assert_close(tiny_torchax.decode(expected).sample, tiny_vae.decode(expected).sample, FP32, "decode 3x4 latents")


def test_slicing_and_tiling_switches(tiny_torchax):
    tiny_torchax.enable_slicing()
    assert tiny_torchax.use_slicing
    tiny_torchax.disable_slicing()
    assert not tiny_torchax.use_slicing
    tiny_torchax.enable_tiling(tile_sample_min_height=64, tile_sample_min_width=96)
    assert tiny_torchax.use_tiling
    assert (tiny_torchax.tile_latent_min_height, tiny_torchax.tile_latent_min_width) == (8, 12)
    tiny_torchax.disable_tiling()
    assert not tiny_torchax.use_tiling


def test_every_subpackage_ships_in_the_wheel():
    """pyproject lists packages by hand: a new folder must be listed."""
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {".".join(p.parent.relative_to(root).parts) for p in (root / "torchax_vae").rglob("__init__.py")}
    assert found == listed, f"pyproject packages {sorted(listed)} != folders with __init__.py {sorted(found)}"


def test_from_pretrained_says_nothing(tmp_path, tiny_vae):
    """No diffusers advice to install accelerate on every load (it warns once per process: a fresh one here)."""
    import subprocess
    import sys

    tiny_vae.save_pretrained(tmp_path / "vae")
    # as where accelerate is not installed (the test extra installs it for the offload test)
    code = f"import sys; sys.modules['accelerate'] = None; from torchax_vae import TorchaxVAE; TorchaxVAE.from_pretrained({str(tmp_path)!r})"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0 and "accelerate" not in proc.stderr + proc.stdout, proc.stderr[-2000:]



# ----- a TorchaxVAE saves and casts as diffusers' VAE does (issue: drop-in gaps in a pipeline) -----


@pytest.mark.parametrize("name", ["tiny", "wan-tiny", "qwenimage-tiny", "hunyuan-tiny", "hunyuan15-tiny", "allegro-tiny",
                                  "mochi-tiny", "cosmos-tiny", "magvit-tiny", "ltx091-tiny", "kl-tiny", "dc-tiny",
                                  "hunyuanimage-tiny", "tiny-tiny", "svd-tiny",
                                  *(["ltx2ts-tiny"] if "ltx2ts-tiny" in MODELS else []),
                                  "flux2-tiny"])
def test_save_pretrained_writes_the_diffusers_folder_with_the_same_weights(name, tmp_path):
    """Every family, top-level buffers too (LTX's latents_mean and latents_std)."""
    vae = random_vae(name)
    ours = TorchaxVAE(vae)
    ours.save_pretrained(tmp_path / "vae")
    config = json.loads((tmp_path / "vae" / "config.json").read_text())
    assert config["_class_name"] == type(vae).__name__
    back = type(vae).from_pretrained(tmp_path / "vae", low_cpu_mem_usage=False)  # diffusers alone
    expected, saved = vae.state_dict(), back.state_dict()
    assert saved.keys() == expected.keys()
    worst = max((saved[k] - expected[k]).abs().max().item() for k in expected)
    assert worst == 0, f"saved weights differ from the model's: max |Δ| {worst:.3e}"
    again = TorchaxVAE.from_pretrained(tmp_path / "vae")  # the VAE's own folder: no vae/ subfolder needed
    assert type(again) is type(ours) and settings(again.config) == settings(ours.config)
    # pipelines branch on their VAE's class (SanaVideoPipeline: isinstance(self.vae, AutoencoderKLWan))
    assert isinstance(ours, type(vae)) and isinstance(ours, TorchaxVAE) and isinstance(ours, torch.nn.Module)
    others = [w.model_class for w in WRAPPERS if w.model_class is not type(vae)]
    assert not any(isinstance(ours, other) for other in others), "passes for another family's class"
    with pytest.raises(TypeError, match="is a TorchaxVAE already"):
        TorchaxVAE(ours)
    # in a pipeline's folder the VAE is recorded as this adapter ([module, class]); diffusers loads it back through
    # the loading base class it looks up in that module (ModelMixin)
    pipe = _OnlyVAE(ours)
    pipe.save_pretrained(tmp_path / "pipe")
    reloaded = _OnlyVAE.from_pretrained(tmp_path / "pipe").vae
    assert type(reloaded) is type(ours) and settings(reloaded.config) == settings(ours.config)


class _OnlyVAE(DiffusionPipeline):
    """The smallest diffusers pipeline: a VAE."""

    def __init__(self, vae):
        super().__init__()
        self.register_modules(vae=vae)


def test_a_saved_bf16_vae_holds_bf16_weights_and_the_model_given_back_is_a_copy(tmp_path):
    vae = random_vae("wan-tiny")
    ours = TorchaxVAE(vae).to(torch.bfloat16)
    model = ours.diffusers_model()
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    before = ours.diffusers_model().state_dict()
    for p in model.parameters():
        p.data.mul_(0)  # the user's copy: editing it must not reach the weights TorchaxVAE computes with
    after = ours.diffusers_model().state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_torch_style_casts_recast_the_jax_weights():
    ours = TorchaxVAE(random_vae("tiny"))
    assert isinstance(ours, torch.nn.Module)  # so pipelines' .to(), save_pretrained and offload reach it
    assert ours.bfloat16().dtype == torch.bfloat16 and ours.float().dtype == torch.float32
    assert {w.dtype for group in ours._engine.weights.values() for w in group.values()} == {jnp.dtype("float32")}


# ----- the family lists (issue 28: five places listed fewer families than are served) -----


@pytest.mark.parametrize("name", ["tiny", "wan-tiny", "hunyuan-tiny", "allegro-tiny", "kl-tiny"])
def test_lower_and_plan_twins_copy_the_settings_each_family_declares(name):
    """A twin (what `lower` and `plan` compile) has this wrapper's tiling and slicing settings: the engine's and the
    ones its family declares in `settings`, and every public plain-valued setting the wrapper or its family holds is
    declared."""
    from torchax_vae.facade.ahead import ENGINE_SETTINGS

    ours = TorchaxVAE(random_vae(name))
    ours.enable_slicing()
    ours.tiling_mode = "on"
    for key in ours.family.settings:
        value = getattr(ours, key)
        if isinstance(value, int) and not isinstance(value, bool):
            setattr(ours, key, value + 8)  # a value the wrapped model does not have
    twin = ours._twin(None)
    assert {k: getattr(twin, k) for k in ENGINE_SETTINGS + ours.family.settings} == \
        {k: getattr(ours, k) for k in ENGINE_SETTINGS + ours.family.settings}
    facts = {"z_dim", "training", "memory_budget"}  # config facts; the state of this wrapper; the twin's own budget
    held = {k for holder in (ours, ours._family) for k, v in vars(holder).items() if not k.startswith("_")
            and k not in facts and (v is None or isinstance(v, (bool, int, float, str, tuple)))}
    assert held <= set(ENGINE_SETTINGS + ours.family.settings), held - set(ours.family.settings)


def test_each_facade_class_holds_its_family_and_computes_nothing_itself():
    """A TorchaxVAE holds its family by composition (issue 37): each facade class names a `Family`, which is no torch
    module and no TorchaxVAE, and reports the family's facts; the loops are the family's, not the facade's."""
    from torchax_vae.facade.family import Family
    from torchax_vae.facade.vae import FAMILY_FACTS

    for wrapper in WRAPPERS:
        family = wrapper.family
        assert issubclass(family, Family) and not issubclass(family, torch.nn.Module), wrapper.__name__
        assert {name: getattr(wrapper, name) for name in FAMILY_FACTS} == \
            {name: getattr(family, name) for name in FAMILY_FACTS}, wrapper.__name__
        loops = {"_encode", "_decode", "_calls", "_call", "_run", "_tiled", "_clip", "_frames", "_lowered"}
        assert not loops & set(dir(wrapper)), (wrapper.__name__, loops & set(dir(wrapper)))


def test_a_setting_set_on_the_facade_is_the_familys_and_the_wrapped_model_keeps_its_own():
    vae = random_vae("wan-tiny")
    ours = TorchaxVAE(vae)
    ours.enable_tiling(tile_sample_min_height=96, tile_sample_stride_height=64)
    ours.tile_sample_min_width = 80
    assert (ours._family.tile_sample_min_height, ours._family.tile_sample_stride_height) == (96, 64)
    assert ours.tile_sample_min_width == ours._family.tile_sample_min_width == 80
    assert "tile_sample_min_width" not in vars(ours)  # held once, by the family
    assert (vae.tile_sample_min_height, vae.tile_sample_min_width) != (96, 80)
    assert ours.use_tiling and not vae.use_tiling


def test_every_config_builds_here_or_says_why():
    """scripts/vaes.py gates the classes newer than diffusers 0.36 by version, and imports them loudly: a config is
    missing only where the installed diffusers lacks its class, never because an import failed quietly."""
    from vaes import MISSING, NEWER_CLASSES, installed

    for name, _, configs in NEWER_CLASSES:
        has = installed(name)
        for config in configs:
            assert (config in MODELS) == has and (config in MISSING) == (not has), (name, config, has)


def test_a_modular_pipelines_loading_spec_survives_wrapping(tmp_path, tiny_vae):
    """diffusers' modular pipelines tag what `ComponentSpec.load` loads (`_diffusers_load_id`) and rebuild a
    component's spec from that tag in `update_components`: `pipe.update_components(vae=TorchaxVAE(pipe.vae))` keeps
    the VAE's repository and subfolder, and the spec loads a TorchaxVAE of the same class back."""
    from diffusers.modular_pipelines import ComponentSpec

    tiny_vae.save_pretrained(tmp_path / "vae")
    loaded = ComponentSpec(name="vae", type_hint=type(tiny_vae), pretrained_model_name_or_path=str(tmp_path),
                           subfolder="vae").load()
    wrapped = TorchaxVAE(loaded)
    spec = ComponentSpec.from_component("vae", wrapped)
    assert spec.load_id == loaded._diffusers_load_id and spec.subfolder == "vae"
    again = spec.load()
    assert isinstance(again, TorchaxVAE) and isinstance(again, type(tiny_vae))
    with pytest.raises(ValueError, match="not created with `ComponentSpec.load"):
        ComponentSpec.from_component("vae", TorchaxVAE(random_vae("tiny")))  # untagged: diffusers' own refusal
