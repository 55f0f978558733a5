"""The offline stand-ins of `hf-internal-testing/tiny-wan-animate-2-modular` and its distilled twin, which diffusers'
Wan Animate 2 modular tests load (tests/modular_pipelines/wan_animate_2).

Wan Animate 2 is modular only: no pipeline test builds its components, so the repositories are written here as
diffusers' converters write a modular one (`modular_model_index.json` with a loading spec per component; the guider
and the processors are created from the blocks' own configs), from the smallest models that fit what the blocks and
the transformer's model test fix (tests/models/transformers/test_models_transformer_wan_animate_2.py at the vendored
commit, whose `get_init_dict` "mirrors the config of the tiny checkpoint"):
- the transformer: that model test's config (16 latent channels, 20 condition channels, text width 32);
- the VAE: a Wan 2.1 VAE of 16 latent channels, 8x in space and 4x in time (the blocks' processors fix
  `vae_scale_factor` 8), Wan Animate's pipeline test config;
- the text encoder: hub_standins' UMT5 of width 32 with tiny-random-t5's tokenizer;
- the image encoder: a CLIP vision tower of width 1280 (the transformer's image projection hard-codes it) and two
  layers (the blocks read `hidden_states[-2]` at 224x224), seeded;
- the scheduler: FlowMatchEulerDiscreteScheduler (the blocks take any SchedulerMixin; Wan's flow matching).
"""

import pathlib

import torch

from hub_standins import _t5_tokenizer, _umt5, absent, modular_index, snapshot

REPOS = {"hf-internal-testing/tiny-wan-animate-2-modular": ("WanAnimate2ModularPipeline", "WanAnimate2Blocks"),
         "hf-internal-testing/tiny-wan-animate-2-distilled-modular": ("WanAnimate2DistilledModularPipeline",
                                                                      "WanAnimate2DistilledBlocks")}
TRANSFORMER = dict(patch_size=(1, 2, 2), text_len=16, in_dim=16 + 20, dim=128, ffn_dim=256, freq_dim=64, text_dim=32,
                   out_dim=16, num_heads=4, num_layers=2, cross_attn_norm=True, use_img_emb=True)
VAE = dict(base_dim=3, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1, temperal_downsample=[False, True, True])
CLIP = dict(hidden_size=1280, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=224,
            patch_size=14)
COMPONENTS = {
    "text_encoder": ("transformers", "UMT5EncoderModel"),
    "tokenizer": ("transformers", "T5TokenizerFast"),
    "image_encoder": ("transformers", "CLIPVisionModel"),
    "vae": ("diffusers", "AutoencoderKLWan"),
    "transformer": ("diffusers", "WanAnimate2Transformer3DModel"),
    "scheduler": ("diffusers", "FlowMatchEulerDiscreteScheduler"),
}


def _write(path: pathlib.Path) -> None:
    from diffusers import AutoencoderKLWan, FlowMatchEulerDiscreteScheduler, WanAnimate2Transformer3DModel
    from transformers import CLIPVisionConfig, CLIPVisionModel

    _umt5(path / "text_encoder")
    _t5_tokenizer().save_pretrained(path / "tokenizer")
    torch.manual_seed(0)
    CLIPVisionModel(CLIPVisionConfig(**CLIP)).eval().save_pretrained(path / "image_encoder")
    torch.manual_seed(0)
    AutoencoderKLWan(**VAE).save_pretrained(path / "vae")
    torch.manual_seed(0)
    WanAnimate2Transformer3DModel(**TRANSFORMER).save_pretrained(path / "transformer")
    FlowMatchEulerDiscreteScheduler(shift=5.0).save_pretrained(path / "scheduler")


def build(root: pathlib.Path, repo: str) -> pathlib.Path:
    """Writes `repo` (one of REPOS) into the hub cache folder `root` and returns its snapshot folder."""
    path = snapshot(root, repo)
    _write(path)
    modular_index(path, repo, *REPOS[repo], COMPONENTS)
    absent(root, repo, ["tokenizer/config.json"])  # AutoTokenizer asks for it
    return path
