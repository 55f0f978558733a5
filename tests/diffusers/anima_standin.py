"""The offline stand-in of `hf-internal-testing/tiny-anima-modular-pipe`, which diffusers' Anima modular tests load
(tests/modular_pipelines/anima).

Anima is modular only: no pipeline test builds its components, so the repository is written here as diffusers'
converters write a modular one (`modular_model_index.json` with a loading spec per component; the guider and the image
processor are created from the blocks' own configs), from the smallest models that fit what the tests fix:
- the transformer: Cosmos 2's, as Cosmos 2's text-to-image pipeline test builds it (inner width 32 and an AdaLN-LoRA
  rank of 4, the shapes the LoRA test's weights have; the padding mask concatenated, as Anima's blocks give one), with
  a text width of 16, the conditioner's;
- the text conditioner: the test's own (`AnimaTextConditionerFastTests`: widths 16, 2 layers, 4 heads), over the T5
  tokenizer's vocabulary;
- the text encoder: a seeded Qwen 3 of width 16 over Qwen's vocabulary (151936), with qwen_standins' tokenizer;
- the T5 tokenizer: hub_standins' tiny-random-t5 kind;
- the VAE: Qwen-Image's, as its pipeline test builds it, with 16 latent channels (the transformer's);
- the scheduler: FlowMatchEulerDiscreteScheduler.

The transformer's padding mask is resized with torchvision, so the pipeline runs only in the second environment of
SOURCE.md; the tests that run it are skipped elsewhere (modular_expectations.SECOND_ENVIRONMENT_CLASSES).
"""

import pathlib

import torch

from hub_standins import _t5_tokenizer, absent, bpe_tokenizer, modular_index, snapshot
from qwen_standins import QWEN_FIRST_SPECIAL, QWEN_SPECIALS

REPO = "hf-internal-testing/tiny-anima-modular-pipe"
TRANSFORMER = dict(in_channels=16, out_channels=16, num_attention_heads=2, attention_head_dim=16, num_layers=2,
                   mlp_ratio=2, text_embed_dim=16, adaln_lora_dim=4, max_size=(4, 32, 32), patch_size=(1, 2, 2),
                   rope_scale=(2.0, 1.0, 1.0), concat_padding_mask=True, extra_pos_embed_type="learnable")
CONDITIONER = dict(source_dim=16, target_dim=16, model_dim=16, num_layers=2, num_attention_heads=4,
                   min_sequence_length=8)
VAE = dict(base_dim=24, z_dim=16, dim_mult=[1, 2, 4], num_res_blocks=1, temperal_downsample=[False, True],
           latents_mean=[0.0] * 16, latents_std=[1.0] * 16)
QWEN3 = dict(vocab_size=151936, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
             num_key_value_heads=1, head_dim=8, max_position_embeddings=1024)
COMPONENTS = {
    "text_encoder": ("transformers", "Qwen3Model"),
    "tokenizer": ("transformers", "Qwen2Tokenizer"),
    "t5_tokenizer": ("transformers", "T5TokenizerFast"),
    "text_conditioner": ("diffusers", "AnimaTextConditioner"),
    "transformer": ("diffusers", "CosmosTransformer3DModel"),
    "vae": ("diffusers", "AutoencoderKLQwenImage"),
    "scheduler": ("diffusers", "FlowMatchEulerDiscreteScheduler"),
}


def build(root: pathlib.Path) -> pathlib.Path:
    """Writes the repository into the hub cache folder `root` and returns its snapshot folder."""
    from diffusers import (AnimaTextConditioner, AutoencoderKLQwenImage, CosmosTransformer3DModel,
                           FlowMatchEulerDiscreteScheduler)
    from transformers import Qwen2Tokenizer, Qwen3Config, Qwen3Model

    path = snapshot(root, REPO)
    bpe_tokenizer(Qwen2Tokenizer, QWEN_SPECIALS, first_special=QWEN_FIRST_SPECIAL).save_pretrained(path / "tokenizer")
    t5 = _t5_tokenizer()
    t5.save_pretrained(path / "t5_tokenizer")
    torch.manual_seed(0)
    Qwen3Model(Qwen3Config(**QWEN3)).eval().save_pretrained(path / "text_encoder")
    for seed, (name, cls, config) in enumerate([
            ("text_conditioner", AnimaTextConditioner, {**CONDITIONER, "target_vocab_size": len(t5)}),
            ("transformer", CosmosTransformer3DModel, TRANSFORMER), ("vae", AutoencoderKLQwenImage, VAE)]):
        torch.manual_seed(seed)
        cls(**config).save_pretrained(path / name)
    FlowMatchEulerDiscreteScheduler().save_pretrained(path / "scheduler")
    modular_index(path, REPO, "AnimaModularPipeline", "AnimaAutoBlocks", COMPONENTS)
    absent(root, REPO, ["tokenizer/config.json", "t5_tokenizer/config.json"])  # AutoTokenizer asks for them
    return path
