"""The one list of what TorchaxVAE serves: each diffusers class, the module that serves it, and its label.

Plain data, read before torch loads (the command's fast errors and `--help` need it). Everything else that names the
served classes comes from here: the public class list (`torchax_vae.FAMILIES`), `models.WRAPPERS` and the command's
and the service's model lookup (`torchax_vae.models`), the sound tables, the version gates of scripts/vaes.py, and
the README's table (tests/test_registry.py holds the README to it).

A family module under `torchax_vae.models` (or a user's own, docs/guide/api.md: "Your own VAE") is imported from its row
by name, only where the installed diffusers has the class (`since`).
"""

import dataclasses
import functools
import importlib.metadata

from packaging.version import Version

__all__ = ["FLOOR", "ROWS", "Row", "by_class", "facade", "facade_for", "facade_for_class_name", "installed_diffusers",
           "labels", "loaded", "register", "rows", "served", "served_here", "supported", "unregister"]

# The oldest diffusers this package supports (pyproject's range): a class older than it says FLOOR as its `since`.
FLOOR = (0, 36)


@dataclasses.dataclass(frozen=True)
class Row:
    """One served class.

    diffusers_class: the class's name in diffusers.
    module: the module holding its family and facade class (a facade's `__module__`, which saved pipelines'
        model_index.json names: never to change for a served class).
    facade: the facade class's name in `module`.
    label: what users call it (the command's help, README's table).
    kind: "image", "video" or "sound": what `encode` takes and `decode` gives.
    since: the oldest diffusers that has the class (the version that added it, or FLOOR where that is older).
    pipelines: the pipelines (or the place) that use it, as README's table says.
    sound: "" for a picture VAE; "alone" for a VAE that is its pipeline's whole sound (the command writes a WAV);
        "decode only" for such a one that encodes nothing.
    """

    diffusers_class: str
    module: str
    facade: str
    label: str
    kind: str
    since: tuple = FLOOR
    pipelines: str = ""
    sound: str = ""


def _models(name: str) -> str:
    return f"torchax_vae.models.{name}"


ROWS: tuple[Row, ...] = (
    # images
    Row("AutoencoderKL", _models("kl"), "KLVAE", "SD/SDXL/SD3/Flux", "image",
        pipelines="SD 1.x/2.x, SDXL, SD3/3.5, Flux.1"),
    Row("AutoencoderKLFlux2", _models("flux2"), "Flux2VAE", "Flux.2", "image", pipelines="Flux.2, Flux.2 Klein"),
    Row("AutoencoderDC", _models("dc"), "DCVAE", "Sana", "image", pipelines="Sana, Sana Sprint"),
    Row("AutoencoderKLHunyuanImage", _models("hunyuanimage"), "HunyuanImageVAE", "HunyuanImage 2.1", "image",
        pipelines="HunyuanImage 2.1"),
    Row("AutoencoderKLHunyuanImageRefiner", _models("hunyuanimage_refiner"), "HunyuanImageRefinerVAE",
        "HunyuanImage 2.1 refiner", "video", pipelines="HunyuanImage 2.1 (one frame)"),
    Row("AutoencoderTiny", _models("tiny"), "TinyVAE", "TAESD", "image", pipelines="TAESD, TAESDXL, TAESD3, TAEF1 (previews)"),
    Row("AsymmetricAutoencoderKL", _models("asym_kl"), "AsymmetricKLVAE", "SD inpainting", "image",
        pipelines="SD inpainting, PAG inpainting"),
    Row("VQModel", _models("vq"), "VQVAE", "Kandinsky's MoVQ", "image", pipelines="Kandinsky 2.1/2.2/3 (MoVQ), latent diffusion"),
    Row("AutoencoderKLTemporalDecoder", _models("temporal_decoder"), "TemporalDecoderVAE", "Stable Video Diffusion",
        "image", pipelines="Stable Video Diffusion"),
    Row("ConsistencyDecoderVAE", _models("consistency"), "ConsistencyDecoderVAEModel", "the consistency decoder", "image",
        pipelines="SD 1.x with OpenAI's consistency decoder"),
    Row("AutoencoderKLKVAE", _models("kvae"), "KVAEModel", "KVAE", "image", (0, 42), pipelines="none (Kandinsky's image VAE)"),
    Row("AutoencoderRAE", _models("rae"), "RAEVAE", "RAE", "image", (0, 37), pipelines="none (representation autoencoders)"),
    # videos
    Row("AutoencoderKLCogVideoX", _models("cogvideox"), "CogVideoXVAE", "CogVideoX", "video",
        pipelines="CogVideoX 2b/5b/1.5"),
    Row("AutoencoderKLWan", _models("wan"), "WanVAE", "Wan", "video",
        pipelines="Wan 2.1, Wan 2.2 TI2V-5B, SkyReels-V2, SanaVideo, Cosmos 2"),
    Row("AutoencoderKLQwenImage", _models("qwenimage"), "QwenImageVAE", "Qwen-Image", "video",
        pipelines="Qwen-Image"),
    Row("AutoencoderKLQwenImage21", _models("qwenimage21"), "QwenImage21VAE", "Qwen-Image 2.1", "video", (0, 42),
        pipelines="Qwen-Image 2.1"),
    Row("AutoencoderKLHunyuanVideo", _models("hunyuanvideo"), "HunyuanVideoVAE", "HunyuanVideo", "video",
        pipelines="HunyuanVideo, Kandinsky 5 and 6"),
    Row("AutoencoderKLHunyuanVideo15", _models("hunyuanvideo15"), "HunyuanVideo15VAE", "HunyuanVideo 1.5", "video",
        pipelines="HunyuanVideo 1.5"),
    Row("AutoencoderKLLTXVideo", _models("ltx"), "LTXVideoVAE", "LTX-Video", "video", pipelines="LTX-Video 0.9.x"),
    Row("AutoencoderKLLTX2Video", _models("ltx2"), "LTX2VideoVAE", "LTX-2", "video", (0, 37), pipelines="LTX-2, LTX-2.3"),
    Row("AutoencoderKLMiniMaxH3", _models("minimax_h3"), "MiniMaxH3VAE", "MiniMax H3", "video", (0, 42),
        pipelines="MiniMax H3 (modular)"),
    Row("AutoencoderKLAllegro", _models("allegro"), "AllegroVAE", "Allegro", "video", pipelines="Allegro"),
    Row("AutoencoderKLMochi", _models("mochi"), "MochiVAE", "Mochi", "video", pipelines="Mochi 1"),
    Row("AutoencoderKLCosmos", _models("cosmos"), "CosmosVAE", "Cosmos", "video", pipelines="Cosmos 1.0"),
    Row("AutoencoderKLMagvit", _models("magvit"), "MagvitVAE", "EasyAnimate", "video", pipelines="EasyAnimate"),
    Row("Kandinsky6SRVAE", _models("kandinsky6_sr"), "Kandinsky6SRVAEModel", "Kandinsky 6 SR", "video", (0, 42),
        pipelines="Kandinsky 6's video super-resolution"),
    Row("AutoencoderKLKVAEVideo", _models("kvae_video"), "KVAEVideoVAE", "KVAE video", "video", (0, 42),
        pipelines="none (Kandinsky's video VAE)"),
    Row("AutoencoderVidTok", _models("vidtok"), "VidTokVAE", "VidTok", "video", (0, 38),
        pipelines="none (Microsoft's video tokenizer)"),
    # sound
    Row("AutoencoderKLLTX2Audio", _models("ltx2_audio"), "LTX2AudioVAE", "LTX-2 audio VAE", "sound", (0, 37),
        pipelines="LTX-2's audio_vae"),
    Row("LTX2Vocoder", _models("ltx2_vocoder"), "LTX2VocoderModel", "LTX-2 vocoders", "sound", (0, 37),
        pipelines="LTX-2's vocoder"),
    Row("LTX2VocoderWithBWE", _models("ltx2_vocoder"), "LTX2VocoderWithBWEModel", "LTX-2 vocoders", "sound", (0, 38),
        pipelines="LTX-2.3's vocoder"),
    Row("AutoencoderKLMiniMaxH3Audio", _models("minimax_h3_audio"), "MiniMaxH3AudioVAE", "MiniMax H3 audio VAE",
        "sound", (0, 42), pipelines="MiniMax H3's audio_vae"),
    Row("MMAudioVAE", _models("mmaudio"), "MMAudioVAEModel", "Kandinsky 6 audio VAE", "sound", (0, 42),
        pipelines="Kandinsky 6's audio_vae"),
    Row("MMAudioVocoder", _models("mmaudio"), "MMAudioVocoderModel", "Kandinsky 6 vocoder", "sound", (0, 42),
        pipelines="Kandinsky 6's vocoder"),
    Row("Cosmos3AVAEAudioTokenizer", _models("cosmos3_audio"), "Cosmos3AudioVAE", "Cosmos 3 sound tokenizer", "sound",
        (0, 42), pipelines="Cosmos 3's sound tokenizer"),
    Row("AutoencoderOobleck", _models("oobleck"), "OobleckVAE", "Stable Audio", "sound",
        pipelines="Stable Audio Open 1.0, ACE-Step", sound="alone"),
    Row("AutoencoderSAME", _models("same"), "SAMEVAE", "Stable Audio 3", "sound", (0, 42),
        pipelines="Stable Audio 3", sound="alone"),
    Row("LongCatAudioDiTVae", _models("longcat_audio"), "LongCatAudioVAE", "LongCat audio", "sound", (0, 42),
        pipelines="LongCat audio", sound="alone"),
    Row("AutoencoderKLKVAEAudio", _models("kvae_audio"), "KVAEAudioVAE", "KVAE-Audio", "sound", (0, 42),
        pipelines="none (Kandinsky's audio VAE)", sound="alone"),
    Row("MiniMaxMusic3Vocoder", _models("minimax_music3"), "MiniMaxMusic3VocoderModel", "MiniMax Music 3", "sound",
        (0, 42), pipelines="MiniMax Music 3 (modular)", sound="decode only"),
)

# Rows a user adds at run time (`register`): their own VAEs, served as the package's own are; and the facade classes
# made for them (torchax_vae/facade/plugins.py), where their module has none of that name.
_ADDED: list[Row] = []
_FACADES: dict[str, type] = {}


def _check_unique(table) -> None:
    seen: dict[str, Row] = {}
    for row in table:
        other = seen.setdefault(row.diffusers_class, row)
        if other is not row:
            raise ValueError(f"two families claim {row.diffusers_class}: {other.module}.{other.facade} and "
                             f"{row.module}.{row.facade}")


_check_unique(ROWS)


def register(row: Row, facade: type | None = None) -> Row:
    """Adds a family of a user's own (docs/guide/api.md, torchax_vae/facade/plugins.py), with its facade class where its
    module does not hold it; ValueError where another row claims its class already."""
    _check_unique((*ROWS, *_ADDED, row))
    _ADDED.append(row)
    if facade is not None:
        _FACADES[row.diffusers_class] = facade
    return row


def unregister(name: str) -> None:
    """Removes the row a user added for the class named `name` (`register`); the package's own rows stay."""
    _ADDED[:] = [row for row in _ADDED if row.diffusers_class != name]
    _FACADES.pop(name, None)


def rows() -> tuple[Row, ...]:
    """Every row: the package's, then those `register` added."""
    return (*ROWS, *_ADDED)


def by_class(name: str) -> Row | None:
    """The row serving the diffusers class named `name`, or None."""
    return next((row for row in rows() if row.diffusers_class == name), None)


def labels() -> list[str]:
    """The served classes' labels, each once, in the table's order (the command's help)."""
    return list(dict.fromkeys(row.label for row in ROWS))


@functools.cache
def installed_diffusers() -> tuple[int, ...] | None:
    """The installed diffusers' release (0.42.0.dev0 counts as 0.42), read once without importing it; None where it
    is not installed."""
    try:
        return Version(importlib.metadata.version("diffusers")).release
    except importlib.metadata.PackageNotFoundError:
        return None


def served_here(row: Row) -> bool:
    """Whether the installed diffusers has the row's class (its release is `since` or later)."""
    release = installed_diffusers()
    return release is not None and release[:2] >= row.since


def facade(row: Row) -> type:
    """The facade class (a TorchaxVAE subclass) of a row, its module imported by name."""
    made = _FACADES.get(row.diffusers_class)
    return made if made is not None else getattr(importlib.import_module(row.module), row.facade)


def loaded(row: Row) -> type | None:
    """The row's facade class, or None where its module refuses the installed diffusers (an ImportError: KVAE video's
    where diffusers' segment length differs) and the class is not served."""
    try:
        return facade(row)
    except ImportError:
        return None


def served() -> tuple[Row, ...]:
    """The rows the installed diffusers has the classes of."""
    return tuple(row for row in rows() if served_here(row))


def supported() -> str:
    """The served classes' names, as words for an error."""
    return ", ".join(row.diffusers_class for row in served())


def facade_for(model) -> type:
    """The facade class for a model instance (of a served class, or a subclass of one; a TorchaxVAE passes for the
    class it wraps); TypeError for anything else."""
    for cls in model.__class__.__mro__:  # (`__class__`, as isinstance asks: a TorchaxVAE reports its diffusers class)
        row = by_class(cls.__name__)
        if row is not None and served_here(row):
            found = loaded(row)
            if found is not None and found.model_class is cls:
                return found
    raise TypeError(f"vae must be one of diffusers' {supported()}, got {type(model).__name__}")


def facade_for_class_name(name: str) -> type:
    """The facade class for a saved model's `_class_name`; ValueError for a class not served here."""
    row = by_class(name)
    found = loaded(row) if row is not None and served_here(row) else None
    if found is None:
        raise ValueError(f"the model is a {name}; supported VAEs: {supported()}")
    return found
