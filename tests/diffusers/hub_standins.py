"""Offline stand-ins for the tiny hub repositories diffusers' pipeline fast tests load.

diffusers' `get_dummy_components()` build their transformers and VAEs from small configs, but take tokenizers
(and a few text-encoder configs) from the hub: `hf-internal-testing/tiny-random-clip`, `tiny-random-t5`, ... The
hub is out of reach here, so `build(root)` writes local repositories of the same kinds into a hub cache layout
(`models--<org>--<name>/snapshots/<rev>/`, `refs/main`), and the harness points huggingface_hub's cache there with
`HF_HUB_OFFLINE=1`: `from_pretrained("hf-internal-testing/tiny-random-t5")` resolves to it, unchanged. Both runs
of the tests (plain diffusers and TorchaxVAE) use the same stand-ins.

The tokenizers are made with the `tokenizers`-backed classes of transformers 5 from small vocabularies: every id
they give is below the vocabulary sizes the tests give their text encoders (CLIP 1000, T5 1103, Llama 1000, Gemma
8, and the stand-in text encoders' own (Bert, UMT5), and tiny-gemma3's own, sized to its tokenizer: diffusers'
dummy-gemma maps all text to a handful of ids, and so does this one). Two differ: in the Qwen tokenizer
(qwen_standins.py) and GLM-Image's, text takes byte ids but the special tokens keep the real ids (Qwen's
151643-151656, GLM-Image's `<|image|>` 167855), because the models the tests build find such tokens by id. Tests that
compare hard-coded value slices of the real tiny repos' outputs fail on plain diffusers here too; the harness lists
them.
"""

import json
import pathlib
import string

import torch

REVISION = "0" * 40


# Mistral 3's chat format (a system prompt, then user turns of text and image parts)
MISTRAL = ("{{ bos_token }}{% for message in messages %}"
           "{% if message['role'] == 'system' %}{{ '[SYSTEM_PROMPT]' }}{% elif message['role'] == 'user' %}{{ '[INST]' }}"
           "{% endif %}{% if message['content'] is string %}{{ message['content'] }}{% else %}"
           "{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}"
           "{% elif part['type'] == 'image' %}{{ '[IMG]' }}{% endif %}{% endfor %}{% endif %}"
           "{% if message['role'] == 'system' %}{{ '[/SYSTEM_PROMPT]' }}{% elif message['role'] == 'user' %}{{ '[/INST]' }}"
           "{% else %}{{ eos_token }}{% endif %}{% endfor %}")


def snapshot(root: pathlib.Path, repo_id: str) -> pathlib.Path:
    repo = root / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(REVISION)
    path = repo / "snapshots" / REVISION
    path.mkdir(parents=True, exist_ok=True)
    return path


def absent(root: pathlib.Path, repo_id: str, names: list[str]) -> None:
    """Records files as absent from a stand-in, as huggingface_hub's cache does (`.no_exist/<revision>/<name>`), so
    that offline lookups of them return nothing instead of raising."""
    folder = root / ("models--" + repo_id.replace("/", "--")) / ".no_exist" / REVISION
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:  # (a name may be in a subfolder: "text_tokenizer/config.json")
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).touch()


def modular_index(path: pathlib.Path, repo_id: str, pipeline: str, blocks: str, components: dict) -> None:
    """Writes `modular_model_index.json` as diffusers' converters write one (scripts/convert_minimax_h3_to_diffusers.py's
    `write_model_index`): the modular pipeline and blocks classes, and a loading spec per component (name ->
    (library, class)) in the repository's own subfolder."""
    import diffusers

    index = {"_class_name": pipeline, "_diffusers_version": diffusers.__version__, "_blocks_class_name": blocks}
    for name, (library, class_name) in components.items():
        index[name] = [library, class_name, {"type_hint": [library, class_name], "pretrained_model_name_or_path": repo_id,
                                             "subfolder": name, "variant": None, "revision": None}]
    (path / "modular_model_index.json").write_text(json.dumps(index, indent=2))


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


def _bert(path: pathlib.Path) -> None:
    """hf-internal-testing/tiny-random-BertModel's kind (HunyuanDiT's first text encoder: the tests give its
    transformer `cross_attention_dim=32`): a seeded BertModel of width 32 and a WordPiece tokenizer of characters,
    whose ids stay below its vocabulary."""
    from transformers import BertConfig, BertModel, BertTokenizer

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = string.ascii_lowercase + string.digits + string.punctuation
    vocab = {token: i for i, token in enumerate(specials + list(chars) + ["##" + char for char in chars])}
    tokenizer = BertTokenizer(vocab=vocab, model_max_length=512)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=37, max_position_embeddings=512, pad_token_id=0)
    torch.manual_seed(0)
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)


def _umt5(path: pathlib.Path) -> None:
    """hf-internal-testing/tiny-random-umt5's kind (AuraFlow's text encoder, beside tiny-random-t5's tokenizer: the
    tests give its transformer `joint_attention_dim=32`): a seeded UMT5 encoder of width 32 over T5's vocabulary."""
    from transformers import UMT5Config, UMT5EncoderModel

    t5 = _t5_config()
    config = UMT5Config(vocab_size=t5.vocab_size, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4,
                        relative_attention_num_buckets=8, eos_token_id=1, pad_token_id=0, decoder_start_token_id=0)
    torch.manual_seed(0)
    UMT5EncoderModel(config).save_pretrained(path)


def bpe_tokenizer(cls, specials: list[str], with_bytes: bool = True, first_special: int | None = None, **kwargs):
    """A byte-level tokenizer without merges (a character per token). The specials take the first ids, or, with
    `first_special`, the ids from there on as added tokens, after a base vocabulary of that size (the bytes, then
    unused fillers that no text can produce): where models find tokens by their real ids (Qwen's `<|image_pad|>` is
    151655)."""
    vocab = {} if first_special else {special: i for i, special in enumerate(specials)}
    if with_bytes:
        for char in _byte_chars():
            vocab.setdefault(char, len(vocab))
    if first_special:
        vocab.update({f"<|unused_{i}|>": i for i in range(len(vocab), first_special)})
    tokenizer = cls(vocab=vocab, merges=[], **kwargs)
    tokenizer.add_tokens(specials, special_tokens=True)  # whole in text ("<|im_start|>"), not split into bytes
    return tokenizer


def _mclip_tokenizer():
    """YiYiXu/tiny-random-mclip-base's kind (Kandinsky 2.1's tests: an XLM-RoBERTa tokenizer beside their multilingual
    CLIP of vocabulary 1005): a Unigram model of printable characters, each with and without the word-start mark,
    the specials at XLM-R's ids (<s> 0, <pad> 1, </s> 2, <unk> 3), 194 ids in all."""
    import string

    from transformers import XLMRobertaTokenizerFast

    chars = sorted(set(string.printable) - set(string.whitespace))
    pieces = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    pieces += [("\u2581" + c, -1.0) for c in chars] + [(c, -2.0) for c in chars] + [("\u2581", -3.0), ("<mask>", 0.0)]
    return XLMRobertaTokenizerFast(vocab=pieces)


def _gemma3(path: pathlib.Path) -> None:
    """hf-internal-testing/tiny-gemma3's kind: a Gemma 3 with a two-layer text model of width 32 (the LTX-2 tests
    size their connectors from its hidden size and layer count, and their connectors' 4 heads of 8 take that width) and a one-layer vision tower, seeded weights, and a byte-level
    tokenizer whose ids stay below its vocabulary."""
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, GemmaTokenizer

    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_image>", "<end_of_image>", "<image_soft_token>"]
    tokenizer = bpe_tokenizer(GemmaTokenizer, specials, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>",
                              unk_token="<unk>")
    vocab = len(tokenizer)
    config = Gemma3Config(
        text_config={"vocab_size": vocab, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                     "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 8, "sliding_window": 16,
                     "max_position_embeddings": 1024},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": 32, "patch_size": 8},
        mm_tokens_per_image=4, boi_token_index=tokenizer.convert_tokens_to_ids("<start_of_image>"),
        eoi_token_index=tokenizer.convert_tokens_to_ids("<end_of_image>"),
        image_token_index=tokenizer.convert_tokens_to_ids("<image_soft_token>"),
    )
    torch.manual_seed(0)
    Gemma3ForConditionalGeneration(config).save_pretrained(path)
    tokenizer.save_pretrained(path)


def _llama_tokenizer():
    """Llama's kind (hf-internal-testing/llama-tokenizer's, OmniGen's): `<unk>` 0, `<s>` 1 (put before text, as
    OmniGen's processor expects), `</s>` 2, then bytes."""
    from transformers import LlamaTokenizer

    return bpe_tokenizer(LlamaTokenizer, ["<unk>", "<s>", "</s>"], unk_token="<unk>", bos_token="<s>",
                         eos_token="</s>")


def _llama(path: pathlib.Path) -> None:
    """hf-internal-testing/tiny-random-LlamaForCausalLM's kind (HiDream's fourth text encoder: the tests give its
    transformer `caption_channels=[32, 16]` and `llama_layers=(0, 1)`): a seeded LlamaForCausalLM of width 16 and two
    layers, and a byte-level tokenizer whose ids stay below its vocabulary."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = _llama_tokenizer()
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=2048,
                         bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)


def _siglip(path: pathlib.Path) -> None:
    """hf-internal-testing/tiny-random-SiglipVisionModel's kind (FramePack's image encoder: the tests give its
    transformer `image_proj_dim=32` and its image processor 30x30 images): a seeded SiglipVisionModel of width 32 on
    30x30 images, and its image processor."""
    from transformers import SiglipImageProcessor, SiglipVisionConfig, SiglipVisionModel

    config = SiglipVisionConfig(hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4,
                                image_size=30, patch_size=2)
    torch.manual_seed(0)
    SiglipVisionModel(config).save_pretrained(path)
    SiglipImageProcessor(size={"height": 30, "width": 30}).save_pretrained(path)


def _glm4_tokenizer():
    """THUDM/glm-4-9b-chat's tokenizer, as CogView4's tests load it (`trust_remote_code=True`: this one is
    transformers' own class, no remote code): byte-level, padding on the left as GLM-4's does, ids far below the
    tests' GlmConfig vocabulary (151552)."""
    from transformers import Qwen2Tokenizer

    return bpe_tokenizer(Qwen2Tokenizer, ["<|endoftext|>", "[gMASK]", "<sop>"], pad_token="<|endoftext|>",
                         eos_token="<|endoftext|>", padding_side="left")


def _glm_image_processor(path: pathlib.Path) -> None:
    """zai-org/GLM-Image's `processor` folder (GLM-Image's tests load it; the real repository is a released model's):
    transformers' GlmImageProcessor over its PIL image processor (no torchvision needed), a byte-level tokenizer with
    the special tokens the processor reads (`image_token`, `grid_bos_token`, `grid_eos_token`, `bos_token`) from
    167855, GlmImageConfig's `image_token_id`, inside the tests' 168064-token vocabulary, and a GLM-4-style chat
    template. The tests generate images from text only, so no image token reaches the model."""
    try:  # (transformers 5.x before GLM-Image's PIL image processor: no stand-in, and GLM-Image's tests cannot load)
        from transformers import GlmImageProcessor, PreTrainedTokenizerFast
        from transformers.models.glm_image.image_processing_pil_glm_image import GlmImageImageProcessorPil
    except ImportError:
        return

    specials = ["<|image|>", "<|endoftext|>", "[gMASK]", "<sop>", "<eop>", "<|user|>", "<|assistant|>",
                "<|begin_of_image|>", "<|end_of_image|>"]
    tokenizer = bpe_tokenizer(
        PreTrainedTokenizerFast, specials, first_special=167855, eos_token="<|endoftext|>", pad_token="<|endoftext|>",
        bos_token="<|begin_of_image|>", padding_side="left",
        extra_special_tokens={"image_token": "<|image|>", "grid_bos_token": "<sop>", "grid_eos_token": "<eop>"})
    template = ("[gMASK]<sop>{% for m in messages %}<|{{ m['role'] }}|>\n{% if m['content'] is string %}"
                "{{ m['content'] }}{% else %}{% for part in m['content'] %}{% if part['type'] == 'image' %}"
                "<|begin_of_image|><|image|><|end_of_image|>{% elif part['type'] == 'text' %}{{ part['text'] }}"
                "{% endif %}{% endfor %}{% endif %}{% endfor %}<|assistant|>\n")
    GlmImageProcessor(image_processor=GlmImageImageProcessorPil(), tokenizer=tokenizer,
                      chat_template=template).save_pretrained(path)


def _chatglm3(path: pathlib.Path) -> None:
    """hf-internal-testing/tiny-random-chatglm3-6b's kind (Kolors' text encoder and tokenizer, diffusers' own
    ChatGLMModel and ChatGLMTokenizer: the tests give their UNet `cross_attention_dim=8`): a seeded ChatGLM of width 8
    and two layers, and a SentencePiece model of characters (ChatGLMTokenizer reads `tokenizer.model`)."""
    import io

    import sentencepiece
    from diffusers.pipelines.kolors import ChatGLMModel, ChatGLMTokenizer
    from diffusers.pipelines.kolors.text_encoder import ChatGLMConfig

    chars = string.ascii_letters + string.digits + string.punctuation
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter([" ".join(chars)] * 8), model_writer=model, model_type="char", vocab_size=len(chars) + 4,
        character_coverage=1.0, hard_vocab_limit=False, minloglevel=2)
    (path / "tokenizer.model").write_bytes(model.getvalue())
    tokenizer = ChatGLMTokenizer(vocab_file=str(path / "tokenizer.model"))
    config = ChatGLMConfig(num_layers=2, padded_vocab_size=128, hidden_size=8, ffn_hidden_size=16, kv_channels=4,
                           num_attention_heads=2, seq_length=512, add_qkv_bias=True, multi_query_attention=True,
                           multi_query_group_num=1, original_rope=True)  # ChatGLM3's own choices
    torch.manual_seed(0)
    model = ChatGLMModel(config)
    with torch.no_grad():  # its RMSNorm weights start as torch.empty, and nothing initializes them
        for name, parameter in model.named_parameters():
            if name.endswith("layernorm.weight"):
                parameter.fill_(1.0)
            else:
                parameter.normal_(0.0, 0.02)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)


def _audioldm2(root: pathlib.Path) -> None:
    """AudioLDM 2's tests: hf-internal-testing/tiny-random-roberta's tokenizer (byte-level, ids below the tests' CLAP
    text vocabulary of 1000; `<pad>` 1 as their config says), tiny-random-ClapModel's feature extractor (transformers'
    defaults; the tests set its hop length) and tiny-random-T5Model's tokenizer (T5's, as tiny-random-t5's)."""
    from transformers import ClapFeatureExtractor, RobertaTokenizer

    bpe_tokenizer(RobertaTokenizer, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"], bos_token="<s>", pad_token="<pad>",
                  eos_token="</s>", unk_token="<unk>", mask_token="<mask>",
                  ).save_pretrained(snapshot(root, "hf-internal-testing/tiny-random-roberta"))
    ClapFeatureExtractor().save_pretrained(snapshot(root, "hf-internal-testing/tiny-random-ClapModel"))
    _t5_tokenizer().save_pretrained(snapshot(root, "hf-internal-testing/tiny-random-T5Model"))


def _mistral_processor_tokenizer():
    """hf-internal-testing/Mistral-Small-3.1-24B-Instruct-2503-only-processor's kind (the Flux.2 tests' `tokenizer`),
    as its tokenizer alone: transformers' PixtralProcessor needs torchvision, which cannot be installed beside this
    torch build, and a repository without a processor config makes `AutoProcessor.from_pretrained` return its
    tokenizer. Flux2Pipeline's text prompts take the same path through it (`apply_chat_template` of system and user
    messages, padded and truncated); a test that passes images to the processor fails on plain diffusers here too.
    Mistral's chat format; a byte-level vocabulary whose ids stay below the tests' Mistral 3 vocabulary (32000)."""
    from transformers import LlamaTokenizer

    specials = ["<unk>", "[IMG]", "<s>", "</s>", "<pad>", "[INST]", "[/INST]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
                "[IMG_BREAK]", "[IMG_END]"]
    tokenizer = bpe_tokenizer(LlamaTokenizer, specials, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                              pad_token="<pad>")
    tokenizer.chat_template = MISTRAL
    return tokenizer


def build(root: pathlib.Path) -> pathlib.Path:
    """Writes every stand-in under `root` (a hub cache folder) and returns it."""
    import qwen_standins
    from transformers import GemmaTokenizer, LlamaTokenizer, T5EncoderModel

    root = pathlib.Path(root)
    _clip_tokenizer().save_pretrained(snapshot(root, "hf-internal-testing/tiny-random-clip"))

    t5 = snapshot(root, "hf-internal-testing/tiny-random-t5")
    _t5_tokenizer().save_pretrained(t5)
    torch.manual_seed(0)
    T5EncoderModel(_t5_config()).save_pretrained(t5)  # config.json and weights (some tests load the model)
    # Stable Audio's tests build a T5 encoder from this repository's config and load its tokenizer (the hub's
    # tiny-random-T5 repositories share tiny-random-t5's shape and vocabulary)
    t5_generation = snapshot(root, "hf-internal-testing/tiny-random-T5ForConditionalGeneration")
    _t5_tokenizer().save_pretrained(t5_generation)
    _t5_config().save_pretrained(t5_generation)

    # Gemma 2 with a vocabulary of 8 in the Sana tests: pad, eos, bos, unk, mask and nothing else, so all text is unk;
    # <bos> first, as Gemma's tokenizers add it (Lumina-Next's empty negative prompt is then one token, not none,
    # whose all-zero attention mask gives NaN on plain diffusers)
    bpe_tokenizer(GemmaTokenizer, ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"], with_bytes=False,
                  add_bos_token=True).save_pretrained(snapshot(root, "hf-internal-testing/dummy-gemma"))
    absent(root, "hf-internal-testing/dummy-gemma", ["config.json"])  # Lumina 2's AutoTokenizer asks for it
    qwen_standins.build(root)
    bpe_tokenizer(LlamaTokenizer, ["<unk>", "<s>", "</s>", "<pad>"], pad_token="<pad>").save_pretrained(
        snapshot(root, "finetrainers/dummy-hunyaunvideo") / "tokenizer")
    (snapshot(root, "finetrainers/dummy-hunyaunvideo") / "README.md").write_text(json.dumps({"stand-in": True}))
    _gemma3(snapshot(root, "hf-internal-testing/tiny-gemma3"))
    # Stable Audio 3's tests load only a Gemma tokenizer from here, and size their T5Gemma encoder to its vocabulary
    sa3 = "hf-internal-testing/tiny-random-Gemma3ForCausalLM"
    bpe_tokenizer(GemmaTokenizer, ["<pad>", "<eos>", "<bos>", "<unk>"], pad_token="<pad>", eos_token="<eos>",
                  bos_token="<bos>", unk_token="<unk>").save_pretrained(snapshot(root, sa3))
    absent(root, sa3, ["config.json"])  # AutoTokenizer asks for it, as for dummy-gemma
    _bert(snapshot(root, "hf-internal-testing/tiny-random-BertModel"))
    _umt5(snapshot(root, "hf-internal-testing/tiny-random-umt5"))
    _llama(snapshot(root, "hf-internal-testing/tiny-random-LlamaForCausalLM"))
    _llama_tokenizer().save_pretrained(snapshot(root, "hf-internal-testing/llama-tokenizer"))
    absent(root, "hf-internal-testing/llama-tokenizer", ["config.json"])  # OmniGen's AutoTokenizer asks for it
    _siglip(snapshot(root, "hf-internal-testing/tiny-random-SiglipVisionModel"))
    _glm4_tokenizer().save_pretrained(snapshot(root, "THUDM/glm-4-9b-chat"))
    absent(root, "THUDM/glm-4-9b-chat", ["config.json"])  # AutoTokenizer asks for it, as for dummy-gemma
    _chatglm3(snapshot(root, "hf-internal-testing/tiny-random-chatglm3-6b"))
    _glm_image_processor(snapshot(root, "zai-org/GLM-Image") / "processor")
    absent(root, "zai-org/GLM-Image", ["processor/config.json"])  # the processor asks for it
    _audioldm2(root)
    _mclip_tokenizer().save_pretrained(snapshot(root, "YiYiXu/tiny-random-mclip-base"))
    # SD 2 depth-to-image's feature extractor: a DPT image processor at its tiny depth estimator's 32x32
    from transformers import DPTImageProcessor

    DPTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(
        snapshot(root, "hf-internal-testing/tiny-random-DPTForDepthEstimation"))
    mistral = "hf-internal-testing/Mistral-Small-3.1-24B-Instruct-2503-only-processor"
    _mistral_processor_tokenizer().save_pretrained(snapshot(root, mistral))
    absent(root, mistral, ["config.json", "processor_config.json", "preprocessor_config.json",
                           "video_preprocessor_config.json", "chat_template.json", "audio_tokenizer_config.json"])
    return root
