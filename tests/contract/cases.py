"""The family contract's table: one row per class the registry serves, what each check feeds it.

A row names its tiny config (scripts/vaes.py: small widths, numerically stable, seeded random weights), the input
its encoder takes (None: a decoder alone, a vocoder), and where the family has a loop of chunks, the latents whose
stream gives several chunks and the chunkings a session takes. Decode inputs are PyTorch's own latents of the encode
input (the posterior's mode), so that every row decodes what its encoder makes; decoders alone give theirs.

A new served class gets every check by adding its row here (tests/contract/test_table.py holds the table to the
registry).
"""

import dataclasses

__all__ = ["CASES", "Case"]


@dataclasses.dataclass(frozen=True)
class Case:
    model: str  # the config in scripts/vaes.py (MODELS)
    encode_input: tuple | None  # what `encode` takes; None: the class decodes only
    decode_input: tuple | None = None  # what `decode` takes; None: PyTorch's latents of encode_input
    call: str = "decode"  # the decoding method ("forward": vocoders)
    stream: tuple | None = None  # (frames, height, width) of a video whose latents stream in several chunks (a
    # family whose decode is a loop of chunks); None: the stream of the decode input, in however many chunks
    session: tuple | None = None  # latent frames per session chunk of those latents (families that carry state)
    tiled: bool = False  # diffusers' class encodes and decodes only tiled (Allegro: its wrapper always tiles)
    settings: dict = dataclasses.field(default_factory=dict)  # diffusers' attributes set on both sides
    # the service (torchax_vae.serve): the request's parameters besides the latents; or, for a class the service
    # serves only inside its pipeline's folder, where that is checked
    served: dict | str = dataclasses.field(default_factory=dict)
    served_call: dict = dataclasses.field(default_factory=dict)  # what its pipelines pass `decode` (the reference)
    served_channels_last: bool = False  # its pipelines' sound latents are [B, L, C] (LongCat), as the service takes


# classes the service serves only inside their pipeline's folder (beside the video VAE, or the audio VAE beside its
# vocoder), and where that is checked against PyTorch
LTX2_FOLDER = "served in LTX-2's pipeline folder: tests/test_serve_sound.py"
MINIMAX_FOLDER = "served in MiniMax H3's pipeline folder: tests/test_minimax_h3_sound.py"
MMAUDIO_FOLDER = "served in Kandinsky 6's pipeline folder: tests/test_kandinsky6_sound.py"
COSMOS3_FOLDER = "served in Cosmos 3's pipeline folder; no service test yet (docs/limits.md)"

VIDEO = (1, 3, 9, 32, 64)
IMAGE = (1, 3, 32, 64)

CASES = {
    # video: chunked loops (feat cache, frame windows, CogVideoX's conv cache, clips)
    "AutoencoderKLCogVideoX": Case("tiny", VIDEO, stream=(25, 32, 32), session=(3, 2, 2), served={"layout": "BCFHW"}),
    "AutoencoderKLWan": Case("wan-tiny", VIDEO, stream=(17, 32, 32), session=(1, 2, 2)),
    "AutoencoderKLQwenImage": Case("qwenimage-tiny", VIDEO, stream=(9, 32, 32), session=(2, 1, 2)),
    "AutoencoderKLQwenImage21": Case("qwenimage21-tiny", (1, 4, 1, 32, 64), session=(1,)),  # diffusers: one frame
    "AutoencoderKLHunyuanVideo": Case("hunyuan-tiny", VIDEO, stream=(33, 32, 32)),
    "AutoencoderKLHunyuanVideo15": Case("hunyuan15-tiny", VIDEO),
    "AutoencoderKLLTXVideo": Case("ltx091-tiny", VIDEO, stream=(33, 32, 32), settings={"use_framewise_decoding": True},
                                  served={"decode_timestep": 0.05, "decode_noise_scale": 0}),
    "AutoencoderKLLTX2Video": Case("ltx2-tiny", VIDEO, stream=(33, 32, 32), settings={
        "use_framewise_decoding": True, "tile_sample_min_num_frames": 32, "tile_sample_stride_num_frames": 16}),
    "AutoencoderKLMiniMaxH3": Case("minimaxh3-tiny", (1, 3, 22, 8, 16), stream=(22, 8, 16), session=(2, 3, 2)),
    "AutoencoderKLAllegro": Case("allegro-tiny", (1, 3, 24, 128, 128), tiled=True),
    "AutoencoderKLMochi": Case("mochi-tiny", (1, 3, 7, 32, 64)),
    "AutoencoderKLCosmos": Case("cosmos-tiny", VIDEO),
    "AutoencoderKLMagvit": Case("magvit-tiny", VIDEO),
    "Kandinsky6SRVAE": Case("kandinsky6-sr-tiny", (1, 3, 21, 16, 16), stream=(37, 16, 16), session=(4, 3, 3)),
    "AutoencoderKLKVAEVideo": Case("kvae-video-tiny", (1, 3, 19, 16, 16), stream=(37, 16, 16), session=(9, 8, 2)),
    "AutoencoderVidTok": Case("vidtok-tiny", (1, 3, 9, 16, 16)),
    "AutoencoderKLHunyuanImageRefiner": Case("hunyuanimage-refiner-tiny", (1, 3, 1, 16, 24)),
    # images
    "AutoencoderKL": Case("sd-tiny", IMAGE),
    "AutoencoderKLFlux2": Case("flux2-tiny", IMAGE),
    "AutoencoderDC": Case("dc-small", IMAGE),
    "AutoencoderKLHunyuanImage": Case("hunyuanimage-tiny", IMAGE),
    "AutoencoderTiny": Case("tiny-tiny", IMAGE),
    "AsymmetricAutoencoderKL": Case("asym-kl-tiny", IMAGE),
    "VQModel": Case("movq-tiny", (1, 3, 32, 32), served_call={"force_not_quantize": True}),  # the Kandinsky pipelines
    "AutoencoderKLTemporalDecoder": Case("svd-tiny", (3, 3, 32, 64)),
    "ConsistencyDecoderVAE": Case("consistency-tiny", (1, 3, 32, 32)),
    "AutoencoderKLKVAE": Case("kvae-tiny", (1, 3, 32, 32)),
    "AutoencoderRAE": Case("rae-tiny", (1, 3, 32, 32)),
    # sound
    "AutoencoderKLLTX2Audio": Case("ltx2-audio-tiny", (1, 2, 21, 16)),
    "LTX2Vocoder": Case("ltx2-vocoder-tiny", None, (1, 2, 12, 16), call="forward", served=LTX2_FOLDER),
    "LTX2VocoderWithBWE": Case("ltx2.3-vocoder-tiny", None, (1, 2, 12, 16), call="forward",
                               served="served in LTX-2.3's pipeline folder; no service test yet (docs/limits.md)"),
    "AutoencoderKLMiniMaxH3Audio": Case("minimaxh3-audio-tiny", (2, 1, 64), served=MINIMAX_FOLDER),
    "MMAudioVAE": Case("mmaudio-tiny", None, (1, 4, 8), served=MMAUDIO_FOLDER),
    "MMAudioVocoder": Case("mmaudio-vocoder-tiny", None, (1, 16, 16), call="forward", served=MMAUDIO_FOLDER),
    "Cosmos3AVAEAudioTokenizer": Case("cosmos3-audio-tiny", None, (1, 4, 8), served=COSMOS3_FOLDER),
    "AutoencoderOobleck": Case("oobleck-tiny", (1, 2, 40)),
    "AutoencoderSAME": Case("same-tiny", (1, 2, 128)),
    "LongCatAudioDiTVae": Case("longcat-audio-tiny", (1, 1, 40), served_channels_last=True),
    "AutoencoderKLKVAEAudio": Case("kvae-audio-tiny", (1, 1, 64)),
    "MiniMaxMusic3Vocoder": Case("minimax-music3-vocoder-tiny", None, (1, 8, 12), call="forward"),
}
