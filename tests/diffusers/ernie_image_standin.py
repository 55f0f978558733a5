"""The offline stand-in of `akshan-main/tiny-ernie-image-modular-pipe`, which diffusers' ERNIE-Image modular tests
load (tests/modular_pipelines/ernie_image).

ERNIE-Image is modular only: no pipeline test builds its components, so the repository is written here as diffusers'
converters write a modular one (`modular_model_index.json` with a loading spec per component; the guider and the image
processor are created from the blocks' own configs), from the smallest models that fit what the blocks fix:
- the transformer: its model test's config (tests/models/transformers/test_models_transformer_ernie_image.py at the
  vendored commit): 16 input channels, text width 16;
- the VAE: Flux.2's, as Flux.2's pipeline test builds it, with 4 latent channels (the blocks pack them 2x2 into the
  transformer's 16; its batch norm covers the packed 16);
- the text encoder: a Mistral 3 of text width 16 (Flux.2's pipeline test config, two text layers: the blocks read
  `hidden_states[-2]`), with hub_standins' Mistral tokenizer (ids below its 32000);
- the prompt enhancer (`pe`, run only with `use_pe=True`): a seeded Ministral 3 causal LM of width 16 beside the same
  tokenizer, whose chat template it applies;
- the scheduler: FlowMatchEulerDiscreteScheduler.
"""

import pathlib

import torch

from hub_standins import _mistral_processor_tokenizer, absent, modular_index, snapshot

REPO = "akshan-main/tiny-ernie-image-modular-pipe"
TRANSFORMER = dict(hidden_size=16, num_attention_heads=1, num_layers=1, ffn_hidden_size=16, in_channels=16,
                   out_channels=16, patch_size=1, text_in_dim=16, rope_theta=256, rope_axes_dim=(8, 4, 4), eps=1e-6,
                   qk_layernorm=True)
VAE = dict(sample_size=32, in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",),
           up_block_types=("UpDecoderBlock2D",), block_out_channels=(4,), layers_per_block=1, latent_channels=4,
           norm_num_groups=1, use_quant_conv=False, use_post_quant_conv=False)
MISTRAL_TEXT = dict(model_type="mistral", vocab_size=32000, hidden_size=16, intermediate_size=37,
                    max_position_embeddings=512, num_attention_heads=4, num_hidden_layers=2, num_key_value_heads=2,
                    rms_norm_eps=1e-05, rope_theta=1000000000.0, sliding_window=None, bos_token_id=2, eos_token_id=3,
                    pad_token_id=4)
PIXTRAL = dict(model_type="pixtral", hidden_size=16, num_hidden_layers=1, num_attention_heads=4, intermediate_size=37,
               image_size=30, patch_size=6, num_channels=3)
COMPONENTS = {
    "text_encoder": ("transformers", "Mistral3Model"),
    "tokenizer": ("transformers", "LlamaTokenizer"),
    "pe": ("transformers", "Ministral3ForCausalLM"),
    "pe_tokenizer": ("transformers", "LlamaTokenizer"),
    "vae": ("diffusers", "AutoencoderKLFlux2"),
    "transformer": ("diffusers", "ErnieImageTransformer2DModel"),
    "scheduler": ("diffusers", "FlowMatchEulerDiscreteScheduler"),
}


def build(root: pathlib.Path) -> pathlib.Path:
    """Writes the repository into the hub cache folder `root` and returns its snapshot folder."""
    from diffusers import AutoencoderKLFlux2, ErnieImageTransformer2DModel, FlowMatchEulerDiscreteScheduler
    from transformers import Ministral3Config, Ministral3ForCausalLM, Mistral3Config, Mistral3Model

    path = snapshot(root, REPO)
    tokenizer = _mistral_processor_tokenizer()
    for name in ("tokenizer", "pe_tokenizer"):
        tokenizer.save_pretrained(path / name)
    torch.manual_seed(0)
    config = Mistral3Config(text_config=MISTRAL_TEXT, vision_config=PIXTRAL, bos_token_id=2, eos_token_id=3,
                            pad_token_id=4, image_seq_length=4, vision_feature_layer=-1, image_token_index=1)
    Mistral3Model(config).eval().save_pretrained(path / "text_encoder")
    torch.manual_seed(0)
    pe_config = {k: v for k, v in MISTRAL_TEXT.items() if k != "model_type"}
    Ministral3ForCausalLM(Ministral3Config(**pe_config)).eval().save_pretrained(path / "pe")
    torch.manual_seed(0)
    AutoencoderKLFlux2(**VAE).save_pretrained(path / "vae")
    torch.manual_seed(0)
    ErnieImageTransformer2DModel(**TRANSFORMER).save_pretrained(path / "transformer")
    FlowMatchEulerDiscreteScheduler().save_pretrained(path / "scheduler")
    modular_index(path, REPO, "ErnieImageModularPipeline", "ErnieImageAutoBlocks", COMPONENTS)
    absent(root, REPO, ["tokenizer/config.json", "pe_tokenizer/config.json"])  # AutoTokenizer asks for them
    return path
