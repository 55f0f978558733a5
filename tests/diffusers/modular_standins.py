"""Offline stand-ins for the tiny hub pipelines diffusers' modular pipeline tests load (tests/modular_pipelines).

Those tests build their pipelines with `Blocks().init_pipeline("hf-internal-testing/tiny-wan-modular-pipe")` and
`load_components()`: whole tiny pipelines from the hub, which is out of reach here. diffusers' (non-modular)
pipeline fast tests of the same models build components of the same kinds from small configs
(`get_dummy_components()`), so each stand-in is that pipeline, built by the vendored test's own method, saved with
the pipeline's `save_pretrained` into the hub cache layout of hub_standins.py: a modular pipeline falls back to
`model_index.json` where a repository has no `modular_model_index.json`. Both runs of the tests (plain diffusers and
TorchaxVAE) load the same stand-ins.
"""

import importlib
import pathlib

from hub_standins import snapshot

# hub repository -> (the vendored pipeline test module whose get_dummy_components() builds it, its config class);
# the repositories of modular_expectations.WITHOUT_STANDIN's files are not here (it says why)
_P = "tests.pipelines."
REPOS = {
    "hf-internal-testing/tiny-wan-modular-pipe": (_P + "wan.test_wan", "WanPipelineTesterConfig"),
    "hf-internal-testing/tiny-flux-modular": (_P + "flux.test_pipeline_flux", "FluxPipelineTesterConfig"),
    "hf-internal-testing/tiny-flux-kontext-pipe": (_P + "flux.test_pipeline_flux_kontext", "FluxKontextPipelineFastTests"),
    "hf-internal-testing/tiny-flux2-modular": (_P + "flux2.test_pipeline_flux2", "Flux2PipelineTesterConfig"),
    "hf-internal-testing/tiny-flux2-klein-modular": (_P + "flux2.test_pipeline_flux2_klein",
                                                     "Flux2KleinPipelineTesterConfig"),
    "hf-internal-testing/tiny-flux2-klein-base-modular": (_P + "flux2.test_pipeline_flux2_klein",
                                                          "Flux2KleinPipelineTesterConfig"),
    "hf-internal-testing/tiny-qwenimage-modular": (_P + "qwenimage.test_qwenimage", "QwenImagePipelineTesterConfig"),
    "hf-internal-testing/tiny-sdxl-modular": (_P + "stable_diffusion_xl.test_stable_diffusion_xl",
                                              "StableDiffusionXLPipelineFastTests"),
    "hf-internal-testing/tiny-stable-diffusion-xl-pipe": (_P + "stable_diffusion_xl.test_stable_diffusion_xl",
                                                          "StableDiffusionXLPipelineFastTests"),
    "AlanPonnachan/tiny-sd3-modular": (_P + "stable_diffusion_3.test_pipeline_stable_diffusion_3",
                                       "StableDiffusion3PipelineFastTests"),
    "hf-internal-testing/tiny-zimage-modular-pipe": (_P + "z_image.test_z_image", "ZImagePipelineFastTests"),
    "akshan-main/tiny-ltx-modular-pipe": (_P + "ltx.test_ltx", "LTXPipelineFastTests"),
    "hf-internal-testing/tiny-ltx2-modular-pipe": (_P + "ltx2.test_ltx2", "LTX2PipelineFastTests"),
    "hf-internal-testing/tiny-helios-modular-pipe": (_P + "helios.test_helios", "HeliosPipelineFastTests"),
    "hf-internal-testing/tiny-helios-pyramid-modular-pipe": (_P + "helios.test_helios", "HeliosPipelineFastTests"),
    "hf-internal-testing/tiny-cosmos3-modular-pipe": (_P + "cosmos.test_cosmos3", "Cosmos3OmniPipelineFastTests"),
    "hf-internal-testing/tiny-cosmos3-distilled-modular-pipe": (_P + "cosmos.test_cosmos3",
                                                                "Cosmos3OmniPipelineFastTests"),
}


def _components(module: str, name: str) -> tuple[type, dict]:
    cls = getattr(importlib.import_module(module), name)
    config = cls.__new__(cls)  # (unittest.TestCase or a plain config class: get_dummy_components reads no state)
    return cls.pipeline_class, config.get_dummy_components()


def build(root: pathlib.Path, sources: list[str]) -> pathlib.Path:
    """Writes the stand-in pipelines the given test sources name (their text holds the repository ids) under `root`
    (a hub cache folder, after hub_standins.build, whose tokenizers and text-encoder configs the components load),
    and returns it."""
    for repo, (module, name) in REPOS.items():
        if not any(repo in source for source in sources):
            continue
        pipeline_class, components = _components(module, name)
        pipeline_class(**components).save_pretrained(snapshot(root, repo))
    return root
