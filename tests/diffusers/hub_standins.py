"""Offline stand-ins for the tiny hub repositories diffusers' pipeline fast tests load.

diffusers' `get_dummy_components()` build their transformers and VAEs from small configs, but take tokenizers
(and a few text-encoder configs) from the hub: `hf-internal-testing/tiny-random-clip`, `tiny-random-t5`, ... The
hub is out of reach here, so `build(root)` writes local repositories of the same kinds into a hub cache layout
(`models--<org>--<name>/snapshots/<rev>/`, `refs/main`), and the harness points huggingface_hub's cache there with
`HF_HUB_OFFLINE=1`: `from_pretrained("hf-internal-testing/tiny-random-t5")` resolves to it, unchanged. Both runs
of the tests (plain diffusers and TorchaxVAE) use the same stand-ins.

The tokenizers are made with the `tokenizers`-backed classes of transformers 5 from small vocabularies: every id
they give is below the vocabulary sizes the tests give their text encoders (CLIP 1000, T5 1103, Llama 1000, Gemma
8: diffusers' dummy-gemma maps all text to a handful of ids, and so does this one). Tests that compare hard-coded
value slices of the real tiny repos' outputs fail on plain diffusers here too; the harness lists them.
"""

import json
import pathlib
import string

import torch

REVISION = "0" * 40


# Qwen2's chat format (text messages)
CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
          "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def _snapshot(root: pathlib.Path, repo_id: str) -> pathlib.Path:
    repo = root / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(REVISION)
    path = repo / "snapshots" / REVISION
    path.mkdir(parents=True, exist_ok=True)
    return path


def _byte_chars() -> list[str]:
    """GPT-2's byte-to-unicode alphabet (the byte-level BPE tokenizers' base vocabulary)."""
    from tokenizers import pre_tokenizers

    return sorted(pre_tokenizers.ByteLevel.alphabet())


def _clip_tokenizer():
    from transformers import CLIPTokenizer

    vocab = {}
    for char in _byte_chars():
        vocab.setdefault(char, len(vocab))
    for char in _byte_chars():
        vocab.setdefault(char + "</w>", len(vocab))
    for special in ("<|startoftext|>", "<|endoftext|>"):
        vocab[special] = len(vocab)
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=77)


def _t5_tokenizer():
    from transformers import T5Tokenizer

    pieces = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    for char in string.ascii_letters + string.digits + string.punctuation:
        pieces += [("\u2581" + char, -1.0), (char, -2.0)]
    pieces.append(("\u2581", -3.0))
    return T5Tokenizer(vocab=pieces, extra_ids=100, model_max_length=512)


def _t5_config():
    from transformers import T5Config

    # hf-internal-testing/tiny-random-t5's shape (the tests size their transformers' text dims to d_model 32)
    return T5Config(vocab_size=1103, d_model=32, d_kv=8, d_ff=37, num_layers=5, num_decoder_layers=5, num_heads=4,
                    relative_attention_num_buckets=8, dropout_rate=0.1, initializer_factor=0.002, eos_token_id=1,
                    pad_token_id=0, decoder_start_token_id=0)


def _bpe_tokenizer(cls, specials: list[str], with_bytes: bool = True, **kwargs):
    vocab = {special: i for i, special in enumerate(specials)}
    if with_bytes:
        for char in _byte_chars():
            vocab.setdefault(char, len(vocab))
    tokenizer = cls(vocab=vocab, merges=[], **kwargs)
    tokenizer.add_tokens(specials, special_tokens=True)  # whole in text ("<|im_start|>"), not split into bytes
    return tokenizer


def build(root: pathlib.Path) -> pathlib.Path:
    """Writes every stand-in under `root` (a hub cache folder) and returns it."""
    from transformers import GemmaTokenizer, LlamaTokenizer, Qwen2Tokenizer, T5EncoderModel

    root = pathlib.Path(root)
    _clip_tokenizer().save_pretrained(_snapshot(root, "hf-internal-testing/tiny-random-clip"))

    t5 = _snapshot(root, "hf-internal-testing/tiny-random-t5")
    _t5_tokenizer().save_pretrained(t5)
    torch.manual_seed(0)
    T5EncoderModel(_t5_config()).save_pretrained(t5)  # config.json and weights (some tests load the model)

    # Gemma 2 with a vocabulary of 8 in the Sana tests: pad, eos, bos, unk, mask and nothing else, so all text is unk
    _bpe_tokenizer(GemmaTokenizer, ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"], with_bytes=False,
                   ).save_pretrained(_snapshot(root, "hf-internal-testing/dummy-gemma"))
    qwen_specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                     "<|image_pad|>", "<|video_pad|>"]
    qwen = _bpe_tokenizer(Qwen2Tokenizer, qwen_specials)
    qwen.chat_template = CHATML  # HunyuanVideo 1.5's pipeline applies it
    qwen.save_pretrained(_snapshot(root, "hf-internal-testing/tiny-random-Qwen2VLForConditionalGeneration"))
    _bpe_tokenizer(LlamaTokenizer, ["<unk>", "<s>", "</s>", "<pad>"], pad_token="<pad>").save_pretrained(
        _snapshot(root, "finetrainers/dummy-hunyaunvideo") / "tokenizer")
    (_snapshot(root, "finetrainers/dummy-hunyaunvideo") / "README.md").write_text(json.dumps({"stand-in": True}))
    return root
