"""The offline stand-in of `hf-internal-testing/tiny-minimax-h3-modular-pipe`, which diffusers' MiniMax H3 modular
tests load (tests/modular_pipelines/minimax_h3).

MiniMax H3 is modular only, so there is no (non-modular) pipeline test to build it from as modular_standins.py
builds the others. It is written here as diffusers' own converter writes a repository
(scripts/convert_minimax_h3_to_diffusers.py at the vendored commit: `modular_model_index.json` with one loading spec
per component, two scheduler folders, the two transformer partitions), with the smallest models that give the shapes
the tests fix:
- the video VAE compresses 16x in space and 4x in time with 4 latent channels ("a 32 pixel canvas is one (1, 2, 2)
  patch row per latent frame"; `latents = torch.randn(1, 4, 37, 2, 2)` for 124 frames);
- the audio VAE has a hop of 4 samples, 8 latent channels and a 160 Hz rate (`207 * 4` samples for 124 frames;
  references of `2 * 160` samples are "2 seconds");
- the transformers take 4 video and 8 audio latent channels, and a text width equal to the text encoder's;
- the text encoder is a Qwen3-VL of text width 16 with 51 decoder layers (MiniMax H3 reads `hidden_states[50]` and
  refuses a shorter stack), Qwen's tokenizer with its real special-token ids (qwen_standins.py), and its processor.
Everything else is the model tests' tiny configs (tests/models/.../test_models_*minimax_h3*.py, seeded random weights).

The processor's video half needs torchvision, so the repository is complete only in the second environment of
SOURCE.md; the tests that load it are skipped elsewhere (modular_expectations.SECOND_ENVIRONMENT_CLASSES).
"""

import pathlib

import torch

from hub_standins import absent, bpe_tokenizer, modular_index, snapshot
from qwen_standins import QWEN_FIRST_SPECIAL, QWEN_SPECIALS, qwen3vl_config, save_qwen3vl_processor

REPO = "hf-internal-testing/tiny-minimax-h3-modular-pipe"
TEXT_WIDTH = 16  # qwen_standins.qwen3vl_config's
VIDEO_VAE = dict(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(8, 16, 16, 16),
                 layers_per_block=1, spatial_downsample_factors=(2, 2, 2, 2), temporal_downsample_factors=(1, 2, 2, 1),
                 norm_num_groups=8, decoder_num_layers=2, decoder_num_attention_heads=2, decoder_attention_head_dim=8,
                 decoder_num_register_tokens=2, decoder_ffn_mult=2, clip_length=17, token_drop=3,
                 latents_mean=(0.0,) * 4, latents_std=(1.0,) * 4)
AUDIO_VAE = dict(encoder_dim=4, encoder_rates=(2, 2), latent_dim=32, latent_channels=8, num_attention_heads=2,
                 decoder_dim=16, decoder_rates=(2, 2), decoder_kernel_sizes=(4, 4), resblock_kernel_sizes=(3, 7),
                 resblock_dilation_sizes=((1, 3), (1, 3)), sampling_rate=160, latents_mean=[0.0] * 8,
                 latents_std=[1.0] * 8)
TRANSFORMER = dict(num_attention_heads=2, attention_head_dim=16, hidden_size=24, num_layers=2, num_refiner_layers=2,
                   ffn_dim=32, in_channels=4, audio_in_channels=8, patch_size=(1, 2, 2), text_dim=TEXT_WIDTH,
                   freq_dim=8, time_embed_hidden_dim=24, time_embed_dim=16, rope_freq_dim=2)
SCHEDULER_SHIFTS = {"scheduler": 5.0, "audio_scheduler": 3.0}  # one class at two shifts, as the converter writes
# the converter's MINIMAX_H3_COMPONENTS: component -> (library, class)
COMPONENTS = {
    "text_encoder": ("transformers", "Qwen3VLForConditionalGeneration"),
    "tokenizer": ("transformers", "Qwen2TokenizerFast"),
    "processor": ("transformers", "Qwen3VLProcessor"),
    "vae": ("diffusers", "AutoencoderKLMiniMaxH3"),
    "audio_vae": ("diffusers", "AutoencoderKLMiniMaxH3Audio"),
    "transformer": ("diffusers", "MiniMaxH3Transformer3DModel"),
    "transformer_ref": ("diffusers", "MiniMaxH3Transformer3DModel"),
    "scheduler": ("diffusers", "MiniMaxH3Scheduler"),
    "audio_scheduler": ("diffusers", "MiniMaxH3Scheduler"),
}


def _text_encoder(tokenizer, path: pathlib.Path) -> None:
    """A seeded Qwen3-VL of text width 16 and 51 decoder layers (qwen_standins' kind), its tokenizer, and where
    torchvision imports its processor."""
    from transformers import Qwen3VLForConditionalGeneration

    torch.manual_seed(0)
    Qwen3VLForConditionalGeneration(qwen3vl_config(tokenizer, layers=51)).save_pretrained(path / "text_encoder")
    tokenizer.save_pretrained(path / "tokenizer")
    save_qwen3vl_processor(tokenizer, path / "processor")


def build(root: pathlib.Path) -> pathlib.Path:
    """Writes the repository into the hub cache folder `root` and returns its snapshot folder."""
    from diffusers import (AutoencoderKLMiniMaxH3, AutoencoderKLMiniMaxH3Audio, MiniMaxH3Scheduler,
                           MiniMaxH3Transformer3DModel)
    from transformers import Qwen2Tokenizer

    path = snapshot(root, REPO)
    modular_index(path, REPO, "MiniMaxH3ModularPipeline", "MiniMaxH3Blocks", COMPONENTS)
    _text_encoder(bpe_tokenizer(Qwen2Tokenizer, QWEN_SPECIALS, first_special=QWEN_FIRST_SPECIAL), path)
    for seed, (name, cls, config) in enumerate([("vae", AutoencoderKLMiniMaxH3, VIDEO_VAE),
                                                ("audio_vae", AutoencoderKLMiniMaxH3Audio, AUDIO_VAE),
                                                ("transformer", MiniMaxH3Transformer3DModel, TRANSFORMER),
                                                ("transformer_ref", MiniMaxH3Transformer3DModel, TRANSFORMER)]):
        torch.manual_seed(seed)
        cls(**config).save_pretrained(path / name)
    for name, shift in SCHEDULER_SHIFTS.items():
        MiniMaxH3Scheduler(shift=shift).save_pretrained(path / name)
    absent(root, REPO, ["processor/config.json", "tokenizer/config.json"])  # AutoTokenizer asks for them
    return path
