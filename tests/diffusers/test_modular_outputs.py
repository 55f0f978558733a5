"""diffusers' modular pipelines (tests/modular_pipelines) as the judge of their outputs: each vendored modular test
config's pipeline (its offline stand-in, modular_standins.py) and dummy inputs, run on plain diffusers, then with its
served VAEs swapped in the user's way, `pipe.update_components(vae=TorchaxVAE(pipe.vae))`, must give the same output.

The vendored modular tests check shapes, batching and loading, not values against plain diffusers; here the outputs
are compared at test_pipeline_outputs.py's decode-only tolerance (these configs only decode), a TorchaxVAE program
must have run, a near-constant output is refused as evidence, and the swapped VAE must keep its loading spec (the
modular index a saved pipeline writes points at the same repository and subfolder).
"""

import importlib

import numpy as np
import pytest
import torch

from file_sets import imports
from modular_expectations import SECOND_ENVIRONMENT_CLASSES
from test_pipeline_outputs import _as_array, decode_tolerance, judged
from torchax_vae import TorchaxVAE
from wrapping import wrap_served_vaes

_M = "tests.modular_pipelines."
# module under tests/modular_pipelines, its fast-test class (text-to-image or text-to-video: decode only)
CASES = [
    ("wan.test_modular_pipeline_wan", "TestWanModularPipelineFast"),
    ("flux.test_modular_pipeline_flux", "TestFluxModularPipelineFast"),
    ("flux2.test_modular_pipeline_flux2", "TestFlux2ModularPipelineFast"),
    ("flux2.test_modular_pipeline_flux2_klein", "TestFlux2KleinModularPipelineFast"),
    ("qwen.test_modular_pipeline_qwenimage", "TestQwenImageModularPipelineFast"),
    ("stable_diffusion_3.test_modular_pipeline_stable_diffusion_3", "TestStableDiffusion3ModularPipelineFast"),
    ("stable_diffusion_xl.test_modular_pipeline_stable_diffusion_xl", "TestSDXLModularPipelineFast"),
    ("z_image.test_modular_pipeline_z_image", "TestZImageModularPipelineFast"),
    ("ltx.test_modular_pipeline_ltx", "TestLTXModularPipelineFast"),
    ("ltx2.test_modular_pipeline_ltx2", "TestLTX2Text2VideoModularPipelineFast"),
    ("ltx2.test_modular_pipeline_ltx25", "TestLTX25Text2VideoModularPipelineFast"),
    ("helios.test_modular_pipeline_helios", "TestHeliosModularPipelineFast"),
    ("cosmos.test_modular_pipeline_cosmos3", "TestCosmos3OmniModularPipelineFast"),
    ("anima.test_modular_pipeline_anima", "TestAnimaModularPipelineFast"),  # the second environment
    ("ernie_image.test_modular_pipeline_ernie_image", "TestErnieImageModularPipelineFast"),
    ("hunyuan_video1_5.test_modular_pipeline_hunyuan_video1_5", "TestHunyuanVideo15ModularPipelineFast"),
    ("krea2.test_modular_pipeline_krea2", "TestKrea2ModularPipelineFast"),
    ("krea2.test_modular_pipeline_krea2_turbo", "TestKrea2TurboModularPipelineFast"),
    ("wan_animate_2.test_modular_pipeline_wan_animate_2", "TestWanAnimate2ModularPipelineFast"),
    ("wan_animate_2.test_modular_pipeline_wan_animate_2", "TestWanAnimate2DistilledModularPipelineFast"),
    ("minimax_h3.test_modular_pipeline_minimax_h3", "TestMiniMaxH3ModularPipelineFast"),  # the second environment
    ("minimax_music3.test_modular_pipeline_minimax_music3", "TestMiniMaxMusic3ModularPipelineFast"),  # sound alone
]
IN_CI = {"TestWanModularPipelineFast"}  # the others rotate (about 10-40 s each on 2 cores): a slice per CI run


def _case(module, name):
    marks = () if name in IN_CI else (pytest.mark.rotate,)
    needs = SECOND_ENVIRONMENT_CLASSES.get(f"{module.replace('.', '/')}.py::{name}", ())
    if needs:  # by hand: the second environment (torch 2.14)
        reason = f"its pipeline needs {', '.join(needs)}: run it in the second environment of tests/diffusers/SOURCE.md"
        marks = (pytest.mark.heavy, pytest.mark.skipif(not imports(*needs), reason=reason))
    return pytest.param(module, name, id=name.removeprefix("Test").removesuffix("ModularPipelineFast"), marks=marks)


# test class -> what its dummy inputs change for the comparison, and why
INPUT_CHANGES = {
    # its dummy inputs stop at the latents (output_type="latent"): the comparison asks for the decoded video
    "TestCosmos3OmniModularPipelineFast": {"output_type": "pt"},
}
# test class -> the outputs compared, and the served components whose TorchaxVAE programs must have run to make them;
# by default its `output_name`, made by its `vae`
OUTPUTS = {
    "TestMiniMaxH3ModularPipelineFast": {"videos": ("vae",), "audio": ("audio_vae",)},  # video with sound
    "TestLTX2Text2VideoModularPipelineFast": {"videos": ("vae",), "audio": ("audio_vae", "vocoder")},
    # LTX-2.5 decodes its video with a diffusion decoder (not a VAE: its output shows the rest is unchanged)
    "TestLTX25Text2VideoModularPipelineFast": {"videos": (), "audio": ("audio_vae", "vocoder")},
    "TestMiniMaxMusic3ModularPipelineFast": {"audios": ("vocoder",)},  # its vocoder is its whole stage 3
}


def _made_by(tester) -> dict[str, tuple[str, ...]]:
    return OUTPUTS.get(type(tester).__name__, {tester.output_name: ("vae",)})


def _outputs(tester, pipe) -> dict[str, np.ndarray]:
    torch.manual_seed(0)
    inputs = {**tester.get_dummy_inputs(), **INPUT_CHANGES.get(type(tester).__name__, {})}
    state = pipe(**inputs)
    return {name: _as_array(state.get(name)) for name in _made_by(tester)}


@pytest.mark.parametrize("module,name", [_case(*case) for case in CASES])
def test_modular_output_equals_plain_diffusers(module, name):
    cls = getattr(importlib.import_module(_M + module), name)
    tester = cls()
    pipe = tester.get_pipeline()
    with torch.no_grad():
        expected = _outputs(tester, pipe)
        plain = {k: v for k, v in pipe.components.items() if v is not None}
        swapped = {k: v for k, v in wrap_served_vaes(plain).items() if v is not plain[k]}
        needed = {c for made_by in _made_by(tester).values() for c in made_by}
        assert swapped and needed <= set(swapped), \
            f"{name}: served {sorted(swapped)} of {sorted(plain)}, needs {sorted(needed)}"
        specs = {k: pipe._component_specs[k].load_id for k in swapped}
        pipe.update_components(**swapped)  # what a user writes: pipe.update_components(vae=TorchaxVAE(pipe.vae))
        assert {k: pipe._component_specs[k].load_id for k in swapped} == specs, "the loading spec changed"
        got = _outputs(tester, pipe)
    for component in needed:
        vae = getattr(pipe, component)
        assert isinstance(vae, TorchaxVAE) and vae.compile_stats(), f"{name}: no TorchaxVAE program of {component} ran"
    for output, want in expected.items():
        assert got[output].shape == want.shape, (output, got[output].shape, want.shape)
        spread = float(want.std())
        assert spread > 1e-3, f"{name} {output}: a near-constant output (std {spread:.3g}) proves nothing"
        delta = float(np.abs(got[output] - want).max())
        print(f"{name} {output}: max |delta| {delta:.3g} on outputs up to {float(np.abs(want).max()):.3g}")
        judged(delta, decode_tolerance(want), f"{name} {output}")
