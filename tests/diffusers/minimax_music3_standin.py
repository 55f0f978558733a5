"""The offline stand-in of `hf-internal-testing/tiny-minimax-music3-modular-pipe`, which diffusers' MiniMax Music 3
modular tests load (tests/modular_pipelines/minimax_music3).

MiniMax Music 3 is modular only, so it is written as diffusers' own converter writes a repository
(scripts/convert_minimax_music3_to_diffusers.py at the vendored commit: `modular_model_index.json` with one loading
spec per component; its scheduler `FlowMatchEulerDiscreteScheduler(num_train_timesteps=1, shift=1.0,
invert_sigmas=True)`), with the smallest models that fit together:
- the language model is a Qwen3 of width 16 whose vocabulary reaches past the audio codes (the pipeline samples
  ids from 151675 to 151675 + 16384 and stops at 151670), with Qwen's tokenizer (qwen_standins.py: its real
  special-token ids) and the music prompt's tags as special tokens;
- the RVQ depth decoder has width 16 and 8 codebooks, so a frame's hidden states (the language model's and the seven
  depth steps') are 8 x 16 wide: the condition encoder's 8 layers of 16 (the modular test's own condition encoder);
- the transformer is its model test's (8 latent channels, condition width 16), and the vocoder takes those 8
  channels at the released hop of 512 samples (the condition encoder's `output_hop_length`, by which the decode step
  crops).
Weights are seeded random.
"""

import pathlib

import torch

from hub_standins import bpe_tokenizer, modular_index, snapshot
from qwen_standins import QWEN_FIRST_SPECIAL, QWEN_SPECIALS

REPO = "hf-internal-testing/tiny-minimax-music3-modular-pipe"
WIDTH = 16
# the pipeline's audio code ids (modular_pipelines/minimax_music3/encoders.py): codes from 151675, 16384 of them
VOCABULARY = 151675 + 16384 + 5  # (a multiple of 8, as released vocabularies are padded)
MUSIC_TAGS = ["<|caption_start|>", "<|caption_end|>", "<|lyrics_start|>", "<|lyrics_end|>", "<|audio_start|>"]
LANGUAGE_MODEL = dict(vocab_size=VOCABULARY, hidden_size=WIDTH, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, head_dim=8, max_position_embeddings=1024,
                      tie_word_embeddings=False)
RVQ_DEPTH_DECODER = dict(hidden_size=WIDTH, num_layers=1, num_attention_heads=2, intermediate_size=32,
                         audio_vocab_size=32, num_codebooks=8)
CONDITION_ENCODER = dict(condition_hidden_dim=WIDTH, num_condition_layers=8, out_dim=16, input_sampling_rate=24000,
                         input_hop_length=960, output_sampling_rate=44100, output_hop_length=512)
TRANSFORMER = dict(in_channels=8, condition_dim=16, num_layers=2, num_attention_heads=2, attention_head_dim=8,
                   ff_inner_dim=32, rotary_dim=4, fourier_embedding_dim=8)
VOCODER = dict(latent_channels=8, decoder_input_dim=16, decoder_hidden_dim=32, upsampling_ratios=(8, 8, 4, 2))
# the converter's components: component -> (library, class)
COMPONENTS = {
    "tokenizer": ("transformers", "Qwen2Tokenizer"),
    "language_model": ("transformers", "Qwen3ForCausalLM"),
    "rvq_depth_decoder": ("diffusers", "MiniMaxMusic3RVQDepthDecoder"),
    "condition_encoder": ("diffusers", "MiniMaxMusic3ConditionEncoder"),
    "transformer": ("diffusers", "MiniMaxMusic3Transformer1DModel"),
    "vocoder": ("diffusers", "MiniMaxMusic3Vocoder"),
    "scheduler": ("diffusers", "FlowMatchEulerDiscreteScheduler"),
}


def build(root: pathlib.Path) -> pathlib.Path:
    """Writes the repository into the hub cache folder `root` and returns its snapshot folder."""
    from diffusers import (FlowMatchEulerDiscreteScheduler, MiniMaxMusic3ConditionEncoder,
                           MiniMaxMusic3Transformer1DModel, MiniMaxMusic3Vocoder)
    from diffusers.models.transformers.minimax_music3_rvq_depth_decoder import MiniMaxMusic3RVQDepthDecoder
    from transformers import Qwen2Tokenizer, Qwen3Config, Qwen3ForCausalLM

    path = snapshot(root, REPO)
    modular_index(path, REPO, "MiniMaxMusic3ModularPipeline", "MiniMaxMusic3Blocks", COMPONENTS)
    bpe_tokenizer(Qwen2Tokenizer, QWEN_SPECIALS + MUSIC_TAGS,
                  first_special=QWEN_FIRST_SPECIAL).save_pretrained(path / "tokenizer")
    torch.manual_seed(0)
    Qwen3ForCausalLM(Qwen3Config(**LANGUAGE_MODEL)).save_pretrained(path / "language_model")
    for seed, (name, cls, config) in enumerate([("rvq_depth_decoder", MiniMaxMusic3RVQDepthDecoder, RVQ_DEPTH_DECODER),
                                                ("condition_encoder", MiniMaxMusic3ConditionEncoder, CONDITION_ENCODER),
                                                ("transformer", MiniMaxMusic3Transformer1DModel, TRANSFORMER),
                                                ("vocoder", MiniMaxMusic3Vocoder, VOCODER)], start=1):
        torch.manual_seed(seed)
        cls(**config).save_pretrained(path / name)
    FlowMatchEulerDiscreteScheduler(num_train_timesteps=1, shift=1.0,
                                    invert_sigmas=True).save_pretrained(path / "scheduler")
    return path
