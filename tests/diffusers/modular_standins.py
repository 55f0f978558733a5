"""Offline stand-ins for the tiny hub pipelines diffusers' modular pipeline tests load (tests/modular_pipelines).

Those tests build their pipelines with `Blocks().init_pipeline("hf-internal-testing/tiny-wan-modular-pipe")` and
`load_components()`: whole tiny pipelines from the hub, which is out of reach here. diffusers' (non-modular)
pipeline fast tests of the same models build components of the same kinds from small configs
(`get_dummy_components()`), so each stand-in is that pipeline, built by the vendored test's own method, saved with
the pipeline's `save_pretrained` into the hub cache layout of hub_standins.py: a modular pipeline falls back to
`model_index.json` where a repository has no `modular_model_index.json`. A model that is modular only has no such test:
its repository is written as diffusers' converter writes one (`WRITTEN`: MiniMax H3, MiniMax Music 3, ...). Both runs of the tests (plain
diffusers and TorchaxVAE) load the same stand-ins.
"""

import functools
import importlib
import json
import pathlib

import torch

import anima_standin
import ernie_image_standin
import minimax_h3_standin
import minimax_music3_standin
import wan_animate_2_standin
from hub_standins import modular_index, snapshot

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
    "akshan-main/tiny-hunyuanvideo1_5-modular-pipe": (_P + "hunyuan_video1_5.test_hunyuan_1_5",
                                                      "HunyuanVideo15PipelineFastTests"),
    "hf-internal-testing/tiny-ltx2-5-modular-pipe": (_P + "ltx2.test_ltx2", "LTX2PipelineFastTests"),
    "hf-internal-testing/tiny-krea2-modular-pipe": (_P + "krea2.test_krea2", "Krea2PipelineFastTests"),
    "hf-internal-testing/tiny-krea2-turbo-modular-pipe": (_P + "krea2.test_krea2", "Krea2PipelineFastTests"),
}


def _krea2_released_layers(components: dict) -> dict:
    """Krea 2's modular text encoder step stacks the released hidden states (2, 5, ..., 35:
    `KREA2_TEXT_ENCODER_SELECT_LAYERS`, fixed) of its Qwen3-VL, where the pipeline test's pipeline takes 3 of a 2-layer
    one (`text_encoder_select_layers=(0, 1, 2)`). The same test models, seeded, with 36 text layers and a transformer
    that takes 12 of them."""
    from diffusers.modular_pipelines.krea2.encoders import KREA2_TEXT_ENCODER_SELECT_LAYERS as LAYERS

    text_encoder, transformer = components["text_encoder"], components["transformer"]
    config = text_encoder.config.to_dict()
    config["text_config"]["num_hidden_layers"] = max(LAYERS) + 1
    config["text_config"].pop("layer_types", None)  # (derived from the layer count)
    torch.manual_seed(0)
    text_encoder = type(text_encoder)(type(text_encoder.config)(**config)).eval()
    torch.manual_seed(0)
    transformer = type(transformer)(**{**transformer.config, "num_text_layers": len(LAYERS)})
    return {**components, "text_encoder": text_encoder, "transformer": transformer,
            "text_encoder_select_layers": LAYERS}


def _ltx2_duration_head(components: dict) -> dict:
    """LTX-2's modular blocks predict `num_frames` when it is omitted, with a duration head (`LTX2DurationHead`, from
    LTX-2.5's checkpoints on) that the non-modular pipeline has no place for: a seeded tiny one over the widths of the
    pipeline test's text connectors (4 heads of 8 each way), saved beside the pipeline (`EXTRA`)."""
    from diffusers.pipelines.ltx2.duration_head import LTX2DurationHead

    config = components["connectors"].config
    torch.manual_seed(0)
    head = LTX2DurationHead(
        video_cross_attention_dim=config.video_connector_num_attention_heads * config.video_connector_attention_head_dim,
        audio_cross_attention_dim=config.audio_connector_num_attention_heads * config.audio_connector_attention_head_dim,
        pooler_hidden_dim=16, num_pooler_heads=2, mlp_hidden_dim=16)
    return {**components, "duration_head": head.eval()}


def _ltx25_diffusion_decoder(components: dict) -> dict:
    """LTX-2.5's blocks decode video with a diffusion decoder (`LTX2VideoDiffusionDecoderModel`, "the native default
    from LTX-2.5 on"), and predict durations as LTX-2's do: LTX-2's stand-in with a seeded tiny decoder (one upsample
    to the test VAE's own compression, 2x in time and space, through 16 channels, over 2x2 patches; the diffusion
    decode pipeline test's block settings otherwise) and the duration head, both saved beside the pipeline
    (`EXTRA`)."""
    from diffusers import LTX2VideoDiffusionDecoderModel

    vae = components["vae"]
    space, time = vae.spatial_compression_ratio, vae.temporal_compression_ratio
    patch = 2  # the last stage attends over 2x2 pixel patches: at patch 1, 23 frames of 32x32 took 20 GB on the CPU
    torch.manual_seed(0)
    decoder = LTX2VideoDiffusionDecoderModel(
        out_channels=3, latent_channels=vae.config.latent_channels, patch_size=patch, decoder_head_dim=8,
        decoder_stage_channels=(16,) * 5, decoder_stage_depths=(1,) * 5, decoder_stage_kernels=((3, 3, 3),) * 4,
        decoder_upsample_strides=((time, space // patch, space // patch),) + ((1, 1, 1),) * 3,
        decoder_upsample_channel_reductions=(1,) * 4, decoder_stage5_kernel=(3, 3, 3), decoder_t_emb_dim=32,
        spatial_compression_ratio=space, temporal_compression_ratio=time)
    return {**_ltx2_duration_head(components), "diffusion_decoder": decoder.eval()}


# hub repository -> what its stand-in changes in the pipeline test's components, for the modular blocks
CHANGES = {"hf-internal-testing/tiny-krea2-modular-pipe": _krea2_released_layers,
           "hf-internal-testing/tiny-krea2-turbo-modular-pipe": _krea2_released_layers,
           "hf-internal-testing/tiny-ltx2-modular-pipe": _ltx2_duration_head,
           "hf-internal-testing/tiny-ltx2-5-modular-pipe": _ltx25_diffusion_decoder}
# components a stand-in has that its non-modular pipeline class does not take: saved in their own subfolders and
# listed in the modular index
EXTRA = ("duration_head", "diffusion_decoder")
# hub repository -> (modular pipeline class, blocks class) of the modular_model_index.json it is given, where
# `model_index.json` alone names no modular pipeline ("No pipeline blocks could be resolved"). The index lists the
# saved components as diffusers' converters write one (a loading spec each) but the guider: the pipeline test's
# (guidance_scale=1.0) leaves HunyuanVideo 1.5's modular text encoder step without the negative embeddings its
# outputs declare, so the blocks create theirs from config, as for a modular repository without one.
MODULAR_INDEX = {"akshan-main/tiny-hunyuanvideo1_5-modular-pipe": ("HunyuanVideo15ModularPipeline",
                                                                    "HunyuanVideo15AutoBlocks"),
                 "hf-internal-testing/tiny-ltx2-modular-pipe": ("LTX2ModularPipeline", "LTX2AutoBlocks"),
                 "hf-internal-testing/tiny-ltx2-5-modular-pipe": ("LTX25ModularPipeline", "LTX25AutoBlocks")}


def _library(cls: type) -> str:
    """The library a model index names for a class, as diffusers' `save_pretrained` writes it: a pipeline's own module
    for classes under diffusers.pipelines ("ltx2" for LTX2DurationHead), else the top package."""
    parts = cls.__module__.split(".")
    return parts[2] if parts[:2] == ["diffusers", "pipelines"] else parts[0]


def _modular_index(path: pathlib.Path, repo: str, pipeline: str, blocks: str, extra: dict) -> None:
    saved = json.loads((path / "model_index.json").read_text())
    components = {name: tuple(value) for name, value in saved.items() if not name.startswith("_") and name != "guider"
                  and isinstance(value, list) and None not in value}
    components |= {name: (_library(type(model)), type(model).__name__) for name, model in extra.items()}
    modular_index(path, repo, pipeline, blocks, components)


# hub repository -> the function that writes it into a hub cache folder: models that are modular only, with no
# pipeline test to build them from
WRITTEN = {minimax_h3_standin.REPO: minimax_h3_standin.build, ernie_image_standin.REPO: ernie_image_standin.build,
           anima_standin.REPO: anima_standin.build, minimax_music3_standin.REPO: minimax_music3_standin.build,
           **{repo: functools.partial(wan_animate_2_standin.build, repo=repo) for repo in wan_animate_2_standin.REPOS}}


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
        components = CHANGES.get(repo, dict)(components)
        extra = {name: components.pop(name) for name in EXTRA if name in components}
        path = snapshot(root, repo)
        pipeline_class(**components).save_pretrained(path)
        for name, model in extra.items():
            model.save_pretrained(path / name)
        if repo in MODULAR_INDEX:
            _modular_index(path, repo, *MODULAR_INDEX[repo], extra)
    for repo, write in WRITTEN.items():
        if any(repo in source for source in sources):
            write(root)
    return root
