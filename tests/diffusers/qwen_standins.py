"""The Qwen-VL stand-ins (hub_standins.py builds them with the others): the tokenizer, model and processor of
`hf-internal-testing/tiny-random-Qwen2VLForConditionalGeneration` and JoyImage's
`huangfeice/tiny-random-Qwen3VLForConditionalGeneration`.

Their tokenizer maps text to byte ids, but keeps Qwen's real special-token ids (151643-151656): the Qwen-VL text
encoders the tests build (vocabularies of 151936 or 152064) count image tokens by id, so an `<|image_pad|>` of
another id reads as no image at all ("Image features and image tokens do not match, tokens: 0"). The processors
(image and video) are written only where torchvision imports, as transformers' video processors need it: the
second environment of SOURCE.md.
"""

import pathlib

import torch

from file_sets import TORCHVISION, imports
from hub_standins import absent, bpe_tokenizer, snapshot

# Qwen2's chat format (text messages)
CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' }}"
          "{% if message['content'] is string %}{{ message['content'] }}{% else %}"  # a processor's [{"type", "text"}]
          "{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}"
          "{% endif %}{{ '<|im_end|>\\n' }}"
          "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
# Qwen2's special tokens, in the order of their real ids from 151643: the Qwen-VL text encoders find the image and
# vision tokens by these ids (Qwen-Image Edit's 151655), whatever the tokenizer says
QWEN_FIRST_SPECIAL = 151643
QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
                 "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
                 "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"]


def _vision_ids(tokenizer) -> dict[str, int]:
    """The Qwen-VL configs' token ids, as the tokenizer gives them (Qwen's real ones)."""
    names = {"vision_start_token_id": "<|vision_start|>", "vision_end_token_id": "<|vision_end|>",
             "image_token_id": "<|image_pad|>", "video_token_id": "<|video_pad|>"}
    return {key: tokenizer.convert_tokens_to_ids(token) for key, token in names.items()}


def _qwen2vl(tokenizer, path: pathlib.Path) -> None:
    """The model of tiny-random-Qwen2VLForConditionalGeneration's kind (EasyAnimate's tests load it: its text hidden
    size 16, as their transformer's `text_embed_dim` says), seeded, beside the tokenizer."""
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    config = Qwen2VLConfig(
        text_config={"vocab_size": len(tokenizer), "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
                     "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 1024,
                     "rope_scaling": {"type": "mrope", "mrope_section": [1, 1, 2]}},
        vision_config={"depth": 1, "embed_dim": 16, "hidden_size": 16, "num_heads": 2, "in_chans": 3,
                       "spatial_merge_size": 2, "patch_size": 14, "temporal_patch_size": 2},
        **_vision_ids(tokenizer),
    )
    torch.manual_seed(0)
    Qwen2VLForConditionalGeneration(config).save_pretrained(path)


def _qwen2vl_processor(tokenizer, path: pathlib.Path) -> None:
    """The repository's processor (Qwen-Image Edit loads it as Qwen2VLProcessor, DreamLite and NucleusMoE-Image as
    Qwen3VLProcessor, Kandinsky 5 through AutoProcessor): transformers' Qwen2-VL image and video processors at their
    defaults (14-pixel patches, merged 2x2), where torchvision imports (the second environment: the video processor
    needs it). Without it, the repository has no processor, as before."""
    if not imports(*TORCHVISION):
        return
    from transformers import Qwen2VLImageProcessor, Qwen2VLProcessor, Qwen2VLVideoProcessor

    Qwen2VLProcessor(image_processor=Qwen2VLImageProcessor(), tokenizer=tokenizer,
                     video_processor=Qwen2VLVideoProcessor(), chat_template=CHATML).save_pretrained(path)


def qwen3vl_config(tokenizer, layers: int = 2):
    """A Qwen3-VL config of text width 16 with Qwen3's vocabulary (151936) and `layers` text layers, and a one-layer
    vision tower of 16-pixel patches merged 2x2, with the tokenizer's (Qwen's real) vision token ids."""
    from transformers import Qwen3VLConfig

    return Qwen3VLConfig(
        text_config={"vocab_size": 151936, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": layers,
                     "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8, "max_position_embeddings": 4096,
                     "rope_scaling": {"rope_type": "default", "mrope_section": [1, 1, 2], "mrope_interleaved": True}},
        vision_config={"depth": 1, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2, "out_hidden_size": 16,
                       "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2,
                       "num_position_embeddings": 64, "deepstack_visual_indexes": [0]},
        **_vision_ids(tokenizer),
    )


def save_qwen3vl_processor(tokenizer, path: pathlib.Path) -> None:
    """Qwen3-VL's processor (its image processor is Qwen2-VL's, at 16-pixel patches), where torchvision imports."""
    if imports(*TORCHVISION):
        from transformers import Qwen2VLImageProcessor, Qwen3VLProcessor, Qwen3VLVideoProcessor

        Qwen3VLProcessor(image_processor=Qwen2VLImageProcessor(patch_size=16, merge_size=2, temporal_patch_size=2),
                         tokenizer=tokenizer, video_processor=Qwen3VLVideoProcessor()).save_pretrained(path)


def _qwen3vl(tokenizer, path: pathlib.Path) -> None:
    """huangfeice/tiny-random-Qwen3VLForConditionalGeneration's kind (JoyImage's text encoder and processor: the tests
    give their transformer `text_dim=16`): a seeded Qwen3-VL (`qwen3vl_config`; the tests resize its vocabulary to
    the tokenizer's), the Qwen tokenizer, and, where torchvision imports, its processor."""
    from transformers import Qwen3VLForConditionalGeneration

    torch.manual_seed(0)
    Qwen3VLForConditionalGeneration(qwen3vl_config(tokenizer)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    save_qwen3vl_processor(tokenizer, path)


def build(root: pathlib.Path) -> None:
    from transformers import Qwen2Tokenizer

    qwen = bpe_tokenizer(Qwen2Tokenizer, QWEN_SPECIALS, first_special=QWEN_FIRST_SPECIAL)
    qwen.chat_template = CHATML  # HunyuanVideo 1.5's pipeline applies it
    qwen_path = snapshot(root, "hf-internal-testing/tiny-random-Qwen2VLForConditionalGeneration")
    qwen.save_pretrained(qwen_path)
    _qwen2vl(qwen, qwen_path)
    _qwen2vl_processor(qwen, qwen_path)
    _qwen3vl(qwen, snapshot(root, "huangfeice/tiny-random-Qwen3VLForConditionalGeneration"))
    # Cosmos 3's text tokenizer is Qwen's: its tests' transformer has Qwen's 151657 ids, and the pipeline starts
    # generation at `<|vision_start|>`
    cosmos3 = "hf-internal-testing/tiny-cosmos3-modular-pipe"
    qwen.save_pretrained(snapshot(root, cosmos3) / "text_tokenizer")
    absent(root, cosmos3, ["text_tokenizer/config.json"])  # AutoTokenizer asks for it
