"""Tiny random-weight model folders to try the command, the service and sessions offline
(`torchax-vae demo --save-models DIR`; docs/guide/offline.md).

Each is a diffusers VAE of a served class with small, numerically stable widths (the 3-channel toys diffusers' own
tests use make jumps a nudge of 1e-5 flips), its weights drawn from a fixed seed, saved as diffusers saves a model:
`config.json` and `diffusion_pytorch_model.safetensors`. Beside them, the CogVideoX VAE the demo runs, and an LTX-2
pipeline folder with its sound (`vae/`, `audio_vae/`, `vocoder/`, as `pipe.save_pretrained` lays them out) where the
installed diffusers has LTX-2 (0.37 or later).
"""

import pathlib
import shutil

import diffusers
import torch

__all__ = ["DEMO_MODEL", "LTX2", "TINY", "save_models"]

# The CogVideoX VAE the demo runs: shipped with the package, trained (scripts/train_tiny.py), not random. Here, with
# the other tiny models' data, so that taking a config (scripts/vaes.py) imports diffusers and torch, not the command.
DEMO_MODEL = pathlib.Path(__file__).resolve().parent.parent / "assets" / "tiny_vae"  # (torchax_vae/assets)

# name -> (diffusers class, config): what each folder holds
TINY = {
    # a video VAE with a causal cache, for sessions: Wan 2.1's architecture, 8x spatial, 4x temporal
    "wan": ("AutoencoderKLWan", {"base_dim": 8, "z_dim": 4, "dim_mult": [1, 2, 2, 2], "num_res_blocks": 1,
                                 "latents_mean": [0.0, 0.1, -0.1, 0.2], "latents_std": [1.0, 1.25, 1.5, 1.75]}),
    # an image VAE: AutoencoderKL as SD's, 2x spatial
    "sd": ("AutoencoderKL", {"block_out_channels": [8, 16], "norm_num_groups": 4, "latent_channels": 4,
                             "down_block_types": ["DownEncoderBlock2D"] * 2, "up_block_types": ["UpDecoderBlock2D"] * 2,
                             "sample_size": 64}),
}

# LTX-2's pipeline folder: sub-folder -> (diffusers class, config). Video: 32x spatial, 8x temporal, 8 latent
# channels; sound: a three-level audio VAE as the released one (4x time and mel compression, 16 mel bins) and a
# small vocoder (16 kHz stereo, 160 samples per mel frame as the audio VAE's hop: 10 latent frames make 0.4 s).
LTX2 = {
    "vae": ("AutoencoderKLLTX2Video", {
        "latent_channels": 8, "block_out_channels": (8, 8, 8, 8), "decoder_block_out_channels": (16, 32, 64),
        "layers_per_block": (1, 1, 1, 1, 1), "decoder_layers_per_block": (1, 1, 1, 1),
        "spatio_temporal_scaling": (True, True, True, True), "decoder_spatio_temporal_scaling": (True, True, True),
        "decoder_inject_noise": (False, False, False, False),
        "downsample_type": ("spatial", "temporal", "spatiotemporal", "spatiotemporal"),
        "upsample_residual": (True, True, True), "upsample_factor": (2, 2, 2), "timestep_conditioning": False,
        "patch_size": 1, "patch_size_t": 1, "encoder_causal": True, "decoder_causal": False,
        "encoder_spatial_padding_mode": "zeros", "decoder_spatial_padding_mode": "zeros"}),
    "audio_vae": ("AutoencoderKLLTX2Audio", {
        "base_channels": 8, "output_channels": 2, "ch_mult": (1, 2, 2), "num_res_blocks": 1,
        "attn_resolutions": None, "in_channels": 2, "resolution": 32, "latent_channels": 4, "norm_type": "pixel",
        "causality_axis": "height", "dropout": 0.0, "mid_block_add_attention": False, "sample_rate": 16000,
        "mel_hop_length": 160, "is_causal": True, "mel_bins": 16}),
    "vocoder": ("LTX2Vocoder", {
        "in_channels": 2 * 16, "hidden_channels": 32, "out_channels": 2, "upsample_kernel_sizes": [20, 32],
        "upsample_factors": [10, 16], "resnet_kernel_sizes": [3], "resnet_dilations": [[1, 3, 5]],
        "leaky_relu_negative_slope": 0.1, "output_sampling_rate": 16000}),
}


def _model(class_name: str, config: dict, seed: int):
    if class_name == "LTX2Vocoder":
        from diffusers.pipelines.ltx2.vocoder import LTX2Vocoder as cls  # (diffusers >= 0.37 only; checked by the caller)
    else:
        cls = getattr(diffusers, class_name)
    torch.manual_seed(seed)
    return cls(**config).eval()


def save_models(folder, seed: int = 0) -> dict:
    """Writes each tiny model into `folder`/NAME (the demo's CogVideoX as `folder`/cogvideox, LTX-2's pipeline folder
    as `folder`/ltx2 where diffusers has it); returns {name: path}."""
    folder = pathlib.Path(folder).expanduser()
    written = {}
    for name, (class_name, config) in TINY.items():
        _model(class_name, config, seed).save_pretrained(folder / name)
        written[name] = str(folder / name)
    if hasattr(diffusers, LTX2["vae"][0]):
        for part, (class_name, config) in LTX2.items():
            _model(class_name, config, seed).save_pretrained(folder / "ltx2" / part)
        written["ltx2"] = str(folder / "ltx2")
    shutil.copytree(DEMO_MODEL, folder / "cogvideox", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("*.jsonl", "README.md"))
    written["cogvideox"] = str(folder / "cogvideox")
    return written
