"""Seeded diffusers VAEs of named configs, and the input a benchmark case needs.

Shared by the scripts (bench, speed, parity) and the tests (tests/helpers.py puts
this folder on sys.path and re-exports them); not part of the installed package.
"""

import diffusers
import torch
from packaging.version import Version
from diffusers import (
    AutoencoderDC,
    AutoencoderKL,
    AutoencoderKLAllegro,
    AutoencoderKLCogVideoX,
    AutoencoderKLFlux2,
    AutoencoderKLHunyuanImage,
    AutoencoderKLCosmos,
    AutoencoderKLHunyuanVideo,
    AutoencoderKLHunyuanVideo15,
    AutoencoderKLLTXVideo,
    AutoencoderKLMagvit,
    AutoencoderKLMochi,
    AutoencoderKLQwenImage,
    AutoencoderKLTemporalDecoder,
    AutoencoderKLWan,
    AutoencoderTiny,
)

from torchax_vae.cli.tiny_models import LTX2 as TINY_LTX2

# diffusers' own test config (tests/models/autoencoders/test_models_autoencoder_kl_cogvideox.py)
# and the released CogVideoX VAE's architecture (the class defaults, 215 M parameters).
CONFIGS = {
    "tiny": {
        "in_channels": 3,
        "out_channels": 3,
        "down_block_types": ("CogVideoXDownBlock3D",) * 4,
        "up_block_types": ("CogVideoXUpBlock3D",) * 4,
        "block_out_channels": (8, 8, 8, 8),
        "latent_channels": 4,
        "layers_per_block": 1,
        "norm_num_groups": 2,
        "temporal_compression_ratio": 4,
    },
    "official": {},
}


def _normalization(z_dim: int) -> dict:
    """Placeholder latents_mean/latents_std of the right length (the released values matter only with real weights)."""
    return {
        "latents_mean": [round(0.1 * (i % 7) - 0.3, 4) for i in range(z_dim)],
        "latents_std": [round(1.0 + 0.25 * (i % 5), 4) for i in range(z_dim)],
    }


# AutoencoderKLWan: diffusers' own test config; a small Wan 2.2-style one (residual blocks,
# patchified, decoder wider than the encoder); the released Wan 2.1 VAE's architecture (the
# class defaults, 127 M parameters) and Wan 2.2 TI2V-5B's (Wan-AI/Wan2.2-TI2V-5B-Diffusers).
WAN_CONFIGS = {
    "wan-tiny": {"base_dim": 3, "z_dim": 16, "dim_mult": [1, 1, 1, 1], "num_res_blocks": 1},
    "wan2.2-tiny": {
        "base_dim": 8, "decoder_base_dim": 12, "z_dim": 4, "dim_mult": [1, 2, 2, 2], "num_res_blocks": 1,
        "is_residual": True, "patch_size": 2, "in_channels": 12, "out_channels": 12, "scale_factor_spatial": 16,
        **_normalization(4),
    },
    "wan2.1": {},
    "wan2.2": {
        "base_dim": 160, "decoder_base_dim": 256, "z_dim": 48, "is_residual": True, "patch_size": 2,
        "in_channels": 12, "out_channels": 12, "scale_factor_spatial": 16, **_normalization(48),
    },
}


# AutoencoderKLQwenImage: the VAE of diffusers' QwenImagePipeline tests (tests/pipelines/qwenimage), with
# placeholder normalization; the released Qwen-Image VAE's architecture (the class defaults, Wan 2.1's shape).
QWENIMAGE_CONFIGS = {
    "qwenimage-tiny": {
        "base_dim": 24, "z_dim": 4, "dim_mult": [1, 2, 4], "num_res_blocks": 1, "temperal_downsample": [False, True],
        **_normalization(4),
    },
    "qwenimage": {},
}

# AutoencoderKLHunyuanVideo: diffusers' own test config (tests/models/autoencoders/test_models_autoencoder_hunyuan_video.py),
# and the released HunyuanVideo VAE's architecture (the class defaults).
HUNYUAN_CONFIGS = {
    "hunyuan-tiny": {
        "latent_channels": 4, "block_out_channels": (8, 8, 8, 8), "layers_per_block": 1, "norm_num_groups": 4,
    },
    "hunyuanvideo": {},
}

# AutoencoderKLHunyuanVideo15: the VAE of diffusers' HunyuanVideo15Pipeline tests (tests/pipelines/hunyuan_video1_5);
# a tiny one with channel-matching samplers (the released kind) and both downsamplers temporal; the released
# HunyuanVideo 1.5 VAE's architecture (the class defaults).
HUNYUAN15_CONFIGS = {
    "hunyuan15-tiny": {
        "latent_channels": 4, "block_out_channels": (16, 16), "layers_per_block": 1, "spatial_compression_ratio": 4,
        "temporal_compression_ratio": 2, "downsample_match_channel": False, "upsample_match_channel": False,
    },
    "hunyuan15match-tiny": {
        "latent_channels": 4, "block_out_channels": (16, 32, 64), "layers_per_block": 1, "spatial_compression_ratio": 4,
        "temporal_compression_ratio": 4,
    },
    "hunyuanvideo15": {},
}

# AutoencoderKLAllegro: the VAE of diffusers' AllegroPipeline tests (tests/pipelines/allegro) with sample_size 128
# (its tile: 24 x 128 x 128 every 16 x 8 x 48, the released overlaps; at the default 320 a test video would need
# 320 x 320 pixels), and the released Allegro VAE's architecture (the class defaults).
ALLEGRO_CONFIGS = {
    "allegro-tiny": {
        "block_out_channels": (8, 8, 8, 8), "latent_channels": 4, "layers_per_block": 1, "norm_num_groups": 2,
        "temporal_compression_ratio": 4, "sample_size": 128,
    },
    "allegro": {},
}

# AutoencoderKLMochi: diffusers' own test config (tests/models/autoencoders/test_models_autoencoder_mochi.py: 32
# channels, the fewest its 32-group norms and 32-wide attention heads take); the VAE of diffusers' MochiPipeline
# tests (12 latent channels, as MochiPipeline's latent normalization needs); the released Mochi 1 VAE's
# architecture (the class defaults).
MOCHI_CONFIGS = {
    "mochi-tiny": {
        "latent_channels": 4, "encoder_block_out_channels": (32, 32, 32, 32),
        "decoder_block_out_channels": (32, 32, 32, 32), "layers_per_block": (1, 1, 1, 1, 1), **_normalization(4),
    },
    "mochi-pipe-tiny": {
        "latent_channels": 12, "encoder_block_out_channels": (32, 32, 32, 32),
        "decoder_block_out_channels": (32, 32, 32, 32), "layers_per_block": (1, 1, 1, 1, 1),
    },
    "mochi": {},
}

# AutoencoderKLCosmos: diffusers' own test config (tests/models/autoencoders/test_models_autoencoder_cosmos.py: 4x
# compression each way, attention at its 8 x 8 level), and the released Cosmos 1.0 tokenizer's architecture
# (CV8x8x8: the class defaults).
COSMOS_CONFIGS = {
    "cosmos-tiny": {
        "latent_channels": 4, "encoder_block_out_channels": (8, 8, 8, 8), "decode_block_out_channels": (8, 8, 8, 8),
        "attention_resolutions": (8,), "resolution": 64, "num_layers": 2, "patch_size": 4, "patch_type": "haar",
        "spatial_compression_ratio": 4, "temporal_compression_ratio": 4,
    },
    "cosmos": {},
}

# AutoencoderKLMagvit: diffusers' own test config (tests/models/autoencoders/test_models_autoencoder_magvit.py), the
# VAE of its EasyAnimatePipeline tests (GroupNorm over whole clips: spatial_group_norm off), and the released
# EasyAnimate V5.1 VAE's architecture (the class defaults).
MAGVIT_CONFIGS = {
    "magvit-tiny": {
        "latent_channels": 4, "block_out_channels": (8, 8, 8, 8), "layers_per_block": 1, "norm_num_groups": 8,
    },
    "magvit-clipnorm-tiny": {
        "latent_channels": 4, "block_out_channels": (8, 8, 8, 8), "layers_per_block": 1, "norm_num_groups": 2,
        "spatial_group_norm": False,
    },
    "magvit": {},
}

# AutoencoderKLLTXVideo: diffusers' own test configs (tests/models/autoencoders/test_models_autoencoder_ltx_video.py)
# for 0.9.0 and 0.9.1 (timestep-conditioned, noise-injecting decoder), and the released architectures of
# LTX-Video 0.9.0 (the class defaults) and 0.9.1 (scripts/convert_ltx_to_diffusers.py), placeholder normalization.
_LTX_TINY = {
    "latent_channels": 8, "block_out_channels": (8, 8, 8, 8), "patch_size": 1, "patch_size_t": 1,
    "encoder_causal": True, "decoder_causal": False,
}
_LTX_091 = {
    "decoder_spatio_temporal_scaling": (True, True, True), "decoder_inject_noise": (True, True, True, False),
    "upsample_residual": (True, True, True), "upsample_factor": (2, 2, 2), "timestep_conditioning": True,
}
LTX_CONFIGS = {
    "ltx-tiny": {
        **_LTX_TINY, "decoder_block_out_channels": (8, 8, 8, 8), "layers_per_block": (1, 1, 1, 1, 1),
        "decoder_layers_per_block": (1, 1, 1, 1, 1), "spatio_temporal_scaling": (True, True, False, False),
        "decoder_spatio_temporal_scaling": (True, True, False, False),
        "decoder_inject_noise": (False, False, False, False, False), "upsample_residual": (False,) * 4,
        "upsample_factor": (1, 1, 1, 1), "timestep_conditioning": False,
    },
    "ltx091-tiny": {
        **_LTX_TINY, **_LTX_091, "decoder_block_out_channels": (16, 32, 64), "layers_per_block": (1, 1, 1, 1),
        "decoder_layers_per_block": (1, 1, 1, 1), "spatio_temporal_scaling": (True, True, True, False),
    },
    "ltx090": {},
    "ltx091": {**_LTX_091, "decoder_block_out_channels": (256, 512, 1024), "decoder_layers_per_block": (5, 6, 7, 8)},
}

# AutoencoderKLLTX2Video (diffusers >= 0.37): diffusers' own test config
# (tests/models/autoencoders/test_models_autoencoder_ltx2_video.py); the same with a timestep-conditioned,
# noise-injecting decoder and LTX-2's reflect padding; the released LTX-2 (2.0) and LTX-2.3 architectures
# (scripts/convert_ltx2_to_diffusers.py, without the optional timestep conditioning), placeholder normalization.
_LTX2_TINY = TINY_LTX2["vae"][1]  # (the tiny LTX-2 folder's video VAE: torchax_vae/cli/tiny_models.py)
_LTX2_RELEASED = {
    "downsample_type": ("spatial", "temporal", "spatiotemporal", "spatiotemporal"), "patch_size": 4,
    "encoder_causal": True, "decoder_causal": False, "spatial_compression_ratio": 32, "temporal_compression_ratio": 8,
}
LTX2_CONFIGS = {
    "ltx2-tiny": _LTX2_TINY,
    "ltx2ts-tiny": {
        **_LTX2_TINY, "timestep_conditioning": True, "decoder_inject_noise": (True, True, True, False),
        "decoder_spatial_padding_mode": "reflect",
    },
    "ltx2": {
        **_LTX2_RELEASED, "block_out_channels": (256, 512, 1024, 2048), "decoder_block_out_channels": (256, 512, 1024),
        "layers_per_block": (4, 6, 6, 2, 2), "decoder_layers_per_block": (5, 5, 5, 5),
        "upsample_type": ("spatiotemporal",) * 3, "upsample_residual": (True, True, True), "upsample_factor": (2, 2, 2),
        "decoder_spatial_padding_mode": "reflect",
    },
    "ltx2.3": {
        **_LTX2_RELEASED, "block_out_channels": (256, 512, 1024, 1024),
        "decoder_block_out_channels": (256, 512, 512, 1024), "layers_per_block": (4, 6, 4, 2, 2),
        "decoder_layers_per_block": (4, 6, 4, 2, 2), "decoder_spatio_temporal_scaling": (True, True, True, True),
        "decoder_inject_noise": (False,) * 5, "upsample_type": ("spatiotemporal", "spatiotemporal", "temporal", "spatial"),
        "upsample_residual": (False,) * 4, "upsample_factor": (2, 2, 1, 2), "decoder_spatial_padding_mode": "zeros",
    },
}

# AutoencoderKLLTX2Audio (diffusers >= 0.37): LTX2Pipeline's fast-test audio VAE (tests/pipelines/ltx2/test_ltx2.py,
# 58eb52c: one level, no downsampling), and the released LTX-2 audio VAE's architecture (the class defaults, 53 M
# parameters: stereo 64-bin log-mel spectrograms, 4x compression in time and mel)
LTX2_AUDIO_CONFIGS = {
    "ltx2-audio-tiny": {
        "base_channels": 4, "output_channels": 2, "ch_mult": (1,), "num_res_blocks": 1, "attn_resolutions": None,
        "in_channels": 2, "resolution": 32, "latent_channels": 2, "norm_type": "pixel", "causality_axis": "height",
        "mel_bins": 8,
    },
    "ltx2-audio": {},
}

# LTX2Vocoder (diffusers >= 0.37) and LTX2VocoderWithBWE (>= 0.38): the released LTX-2 vocoder (the class defaults,
# as diffusers' scripts/convert_ltx2_to_diffusers.py at 58eb52c configures version 2.0: 16 kHz spectrogram to 24 kHz
# stereo) and LTX-2.3's with bandwidth extension (that script's 2.3 config: 48 kHz).
LTX2_VOCODER_CONFIGS = {
    # small (tests/test_ltx2_audio.py's): 16 mel bins of stereo, 4x upsampling, 16 kHz
    "ltx2-vocoder-tiny": {"in_channels": 2 * 16, "hidden_channels": 32, "out_channels": 2, "upsample_kernel_sizes": [4, 4],
                          "upsample_factors": [2, 2], "resnet_kernel_sizes": [3], "resnet_dilations": [[1, 3, 5]],
                          "leaky_relu_negative_slope": 0.1, "output_sampling_rate": 16000},
    "ltx2-vocoder": {},
}
LTX23_VOCODER_CONFIGS = {
    # small (tests/test_ltx2_audio.py's BWE): 16 kHz from the vocoder, its STFT's hop 4, the extension's 12x
    "ltx2.3-vocoder-tiny": {
        "in_channels": 2 * 16, "hidden_channels": 32, "upsample_kernel_sizes": [4, 4], "upsample_factors": [2, 2],
        "resnet_kernel_sizes": [3], "resnet_dilations": [[1, 3, 5]], "bwe_in_channels": 2 * 8,
        "bwe_hidden_channels": 32, "bwe_upsample_kernel_sizes": [5, 8], "bwe_upsample_factors": [3, 4],
        "bwe_resnet_kernel_sizes": [3], "bwe_resnet_dilations": [[1, 3, 5]], "filter_length": 16, "hop_length": 4,
        "window_length": 16, "num_mel_channels": 8,
    },
    "ltx2.3-vocoder": {
        "in_channels": 128, "hidden_channels": 1536, "out_channels": 2, "upsample_kernel_sizes": [11, 4, 4, 4, 4, 4],
        "upsample_factors": [5, 2, 2, 2, 2, 2], "resnet_kernel_sizes": [3, 7, 11],
        "resnet_dilations": [[1, 3, 5], [1, 3, 5], [1, 3, 5]], "act_fn": "snakebeta", "leaky_relu_negative_slope": 0.1,
        "antialias": True, "antialias_ratio": 2, "antialias_kernel_size": 12, "final_act_fn": None, "final_bias": False,
        "bwe_in_channels": 128, "bwe_hidden_channels": 512, "bwe_out_channels": 2,
        "bwe_upsample_kernel_sizes": [12, 11, 4, 4, 4], "bwe_upsample_factors": [6, 5, 2, 2, 2],
        "bwe_resnet_kernel_sizes": [3, 7, 11], "bwe_resnet_dilations": [[1, 3, 5], [1, 3, 5], [1, 3, 5]],
        "bwe_act_fn": "snakebeta", "bwe_leaky_relu_negative_slope": 0.1, "bwe_antialias": True,
        "bwe_antialias_ratio": 2, "bwe_antialias_kernel_size": 12, "bwe_final_act_fn": None, "bwe_final_bias": False,
        "filter_length": 512, "hop_length": 80, "window_length": 512, "num_mel_channels": 64,
        "input_sampling_rate": 16000, "output_sampling_rate": 48000,
    },
}

# AutoencoderKLMiniMaxH3 (diffusers >= 0.42): diffusers' own test config (tests/models/autoencoders/
# test_models_autoencoder_kl_minimax_h3.py, 58eb52c: 4x spatial and temporal, the released clip_length and token_drop),
# and the released architecture (the class defaults: 16x spatial, 4x temporal, a 36-layer ViT decoder).
# random_vae fills its zero-initialized residual scales and register tokens (ZERO_INIT), so the decoder's blocks count.
MINIMAX_H3_CONFIGS = {
    "minimaxh3-tiny": {
        "in_channels": 3, "out_channels": 3, "latent_channels": 4, "block_out_channels": (8, 16), "layers_per_block": 1,
        "spatial_downsample_factors": (2, 2), "temporal_downsample_factors": (2, 2), "norm_num_groups": 8,
        "decoder_num_layers": 2, "decoder_num_attention_heads": 2, "decoder_attention_head_dim": 8,
        "decoder_num_register_tokens": 2, "decoder_ffn_mult": 2, "clip_length": 17, "token_drop": 3,
        "latents_mean": (0.1, -0.2, 0.3, 0.0), "latents_std": (1.5, 0.5, 2.0, 1.0),
    },
    "minimaxh3": {},
}
# AutoencoderKLMiniMaxH3Audio (diffusers >= 0.42): diffusers' own test config (hop 4; its latent_dim // heads differs
# from latent_channels, as released), and the released architecture (the class defaults: hop 800 at 32 kHz)
MINIMAX_H3_AUDIO_CONFIGS = {
    "minimaxh3-audio-tiny": {
        "encoder_dim": 4, "encoder_rates": (2, 2), "latent_dim": 32, "latent_channels": 8, "num_attention_heads": 2,
        "decoder_dim": 16, "decoder_rates": (2, 2), "decoder_kernel_sizes": (4, 4), "resblock_kernel_sizes": (3, 7),
        "resblock_dilation_sizes": ((1, 3), (1, 3)), "sampling_rate": 32000,
        "latents_mean": [0.1 * i for i in range(8)], "latents_std": [1.0 + 0.1 * i for i in range(8)],
    },
    "minimaxh3-audio": {},
}

# VQModel: diffusers' own test config (tests/models/autoencoders/test_models_vq.py, 58eb52c), and a MoVQ-like one as
# Kandinsky 2.2's pipeline tests build it (tests/pipelines/kandinsky2_2: the spatial norm conditioned on the quantized
# latents, a codebook of 12 entries of 4 channels)
# AsymmetricAutoencoderKL: a tiny one, and the released cross-attention/asymmetric-autoencoder-kl-x-1-5 and -x-2, as
# diffusers' scripts/convert_asymmetric_vqgan_to_diffusers.py builds them (58eb52c)
_ASYM_KL = {"in_channels": 3, "out_channels": 3, "down_block_types": ["DownEncoderBlock2D"] * 4,
            "down_block_out_channels": [128, 256, 512, 512], "layers_per_down_block": 2,
            "up_block_types": ["UpDecoderBlock2D"] * 4, "act_fn": "silu", "latent_channels": 4, "norm_num_groups": 32,
            "sample_size": 256, "scaling_factor": 0.18215}
ASYM_KL_CONFIGS = {
    # three levels (4x), as SD inpainting's fast tests' VAE is shaped (tests/test_asym_kl.py's "three-levels")
    "asym-kl-tiny": {"down_block_out_channels": [8, 16, 16], "up_block_out_channels": [8, 16, 16],
                     "layers_per_down_block": 1, "layers_per_up_block": 1, "latent_channels": 4, "norm_num_groups": 4,
                     "sample_size": 32, "down_block_types": ["DownEncoderBlock2D"] * 3,
                     "up_block_types": ["UpDecoderBlock2D"] * 3},
    "asym-kl-x1.5": {**_ASYM_KL, "up_block_out_channels": [192, 384, 768, 768], "layers_per_up_block": 3},
    "asym-kl-x2": {**_ASYM_KL, "up_block_out_channels": [256, 512, 1024, 1024], "layers_per_up_block": 5},
}
# Kandinsky 2.2's MoVQ as diffusers' scripts/convert_kandinsky_to_diffusers.py builds it (MOVQ_CONFIG, 58eb52c)
VQ_RELEASED = {
    "in_channels": 3, "out_channels": 3, "latent_channels": 4,
    "down_block_types": ["DownEncoderBlock2D", "DownEncoderBlock2D", "DownEncoderBlock2D", "AttnDownEncoderBlock2D"],
    "up_block_types": ["AttnUpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D"],
    "num_vq_embeddings": 16384, "block_out_channels": [128, 256, 256, 512], "vq_embed_dim": 4, "layers_per_block": 2,
    "norm_type": "spatial",
}

VQ_CONFIGS = {
    "vq-tiny": {
        "block_out_channels": [8, 16], "norm_num_groups": 8, "in_channels": 3, "out_channels": 3,
        "down_block_types": ["DownEncoderBlock2D", "DownEncoderBlock2D"],
        "up_block_types": ["UpDecoderBlock2D", "UpDecoderBlock2D"], "latent_channels": 3,
    },
    "movq-tiny": {
        "block_out_channels": [32, 32, 64, 64], "down_block_types": ["DownEncoderBlock2D", "DownEncoderBlock2D",
                                                                    "DownEncoderBlock2D", "AttnDownEncoderBlock2D"],
        "in_channels": 3, "latent_channels": 4, "layers_per_block": 1, "norm_num_groups": 8, "norm_type": "spatial",
        "num_vq_embeddings": 12, "out_channels": 3,
        "up_block_types": ["AttnUpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D"],
        "vq_embed_dim": 4,
    },
    "movq": VQ_RELEASED,
}

# AutoencoderKLQwenImage21 (diffusers >= 0.42): a tiny residual config, 4-channel images, 4x spatial
QWENIMAGE21_CONFIGS = {
    "qwenimage21-tiny": {
        "base_dim": 8, "decoder_base_dim": 12, "z_dim": 4, "dim_mult": [1, 2, 2], "num_res_blocks": 1,
        "temperal_downsample": [False, True], "scale_factor_spatial": 4, "scale_factor_temporal": 2,
        **_normalization(4),
    },
    "qwenimage21": {},
}

# AutoencoderKL: diffusers' own test config (tests/models/autoencoders/test_models_autoencoder_kl.py); the VAE of
# its Stable Diffusion pipeline tests (tests/pipelines/stable_diffusion); an SD3/Flux-style tiny one (16 channels, a
# shift, no quant convolutions); and the released architectures: SD 1.5 (stable-diffusion-v1-5), SDXL
# (stabilityai/sdxl-vae), SD3/3.5 and Flux.1 (their vae/config.json).
_KL_RELEASED = {
    "block_out_channels": (128, 256, 512, 512), "layers_per_block": 2, "down_block_types": ("DownEncoderBlock2D",) * 4,
    "up_block_types": ("UpDecoderBlock2D",) * 4, "norm_num_groups": 32,
}
KL_CONFIGS = {
    "kl-tiny": {
        "block_out_channels": (2, 4), "norm_num_groups": 2, "down_block_types": ("DownEncoderBlock2D",) * 2,
        "up_block_types": ("UpDecoderBlock2D",) * 2, "latent_channels": 4,
    },
    "sd-tiny": {
        "block_out_channels": (32, 64), "down_block_types": ("DownEncoderBlock2D",) * 2,
        "up_block_types": ("UpDecoderBlock2D",) * 2, "latent_channels": 4, "sample_size": 128,
    },
    "flux-tiny": {
        "block_out_channels": (8, 16), "norm_num_groups": 4, "down_block_types": ("DownEncoderBlock2D",) * 2,
        "up_block_types": ("UpDecoderBlock2D",) * 2, "latent_channels": 16, "sample_size": 32,
        "scaling_factor": 0.3611, "shift_factor": 0.1159, "use_quant_conv": False, "use_post_quant_conv": False,
    },
    "sd1.5": {**_KL_RELEASED, "sample_size": 512},
    "sdxl": {**_KL_RELEASED, "sample_size": 1024, "scaling_factor": 0.13025},
    "sd3": {**_KL_RELEASED, "latent_channels": 16, "sample_size": 1024, "scaling_factor": 1.5305,
            "shift_factor": 0.0609, "use_quant_conv": False, "use_post_quant_conv": False},
    "flux": {**_KL_RELEASED, "latent_channels": 16, "sample_size": 1024, "scaling_factor": 0.3611,
             "shift_factor": 0.1159, "use_quant_conv": False, "use_post_quant_conv": False},
}

# AutoencoderKLFlux2: Flux2Pipeline's fast-test VAE (one block, 1 latent channel) is too small to show the
# patches' channel order; these have two blocks and 4 latent channels (16 in bn). "flux2" is the class's defaults,
# which diffusers' conversion script builds the released checkpoint with (scripts/convert_flux2_to_diffusers.py).
FLUX2_CONFIGS = {
    "flux2-tiny": {
        "block_out_channels": (8, 16), "norm_num_groups": 4, "down_block_types": ("DownEncoderBlock2D",) * 2,
        "up_block_types": ("UpDecoderBlock2D",) * 2, "latent_channels": 4, "sample_size": 32,
    },
    "flux2": {},
}

# AutoencoderDC (Sana): diffusers' model-test config (tests/models/autoencoders/test_models_autoencoder_dc.py, 2x),
# a 3-block one with the released block types (4x), and the released dc-ae-f32c32-sana-1.0 (diffusers'
# scripts/convert_dcae_to_diffusers.py).
DC_CONFIGS = {
    "dc-tiny": {
        "in_channels": 3, "latent_channels": 4, "attention_head_dim": 2,
        "encoder_block_types": ("ResBlock", "EfficientViTBlock"), "decoder_block_types": ("ResBlock", "EfficientViTBlock"),
        "encoder_block_out_channels": (8, 8), "decoder_block_out_channels": (8, 8),
        "encoder_qkv_multiscales": ((), (5,)), "decoder_qkv_multiscales": ((), (5,)),
        "encoder_layers_per_block": (1, 1), "decoder_layers_per_block": (1, 1), "downsample_block_type": "conv",
        "upsample_block_type": "interpolate", "decoder_norm_types": "rms_norm", "decoder_act_fns": "silu",
        "scaling_factor": 0.41407,
    },
    "dc-small": {
        "in_channels": 3, "latent_channels": 8, "attention_head_dim": 4,
        "encoder_block_types": ("ResBlock", "ResBlock", "EfficientViTBlock"),
        "decoder_block_types": ("ResBlock", "ResBlock", "EfficientViTBlock"),
        "encoder_block_out_channels": (8, 16, 16), "decoder_block_out_channels": (8, 16, 16),
        "encoder_qkv_multiscales": ((), (), (5,)), "decoder_qkv_multiscales": ((), (), (5,)),
        "encoder_layers_per_block": (1, 1, 1), "decoder_layers_per_block": (1, 1, 1), "downsample_block_type": "conv",
        "upsample_block_type": "interpolate", "decoder_norm_types": "rms_norm", "decoder_act_fns": "silu",
        "scaling_factor": 0.41407,
    },
    "sana": {
        "latent_channels": 32, "encoder_block_types": ("ResBlock",) * 3 + ("EfficientViTBlock",) * 3,
        "decoder_block_types": ("ResBlock",) * 3 + ("EfficientViTBlock",) * 3,
        "encoder_block_out_channels": (128, 256, 512, 512, 1024, 1024),
        "decoder_block_out_channels": (128, 256, 512, 512, 1024, 1024),
        "encoder_qkv_multiscales": ((), (), (), (5,), (5,), (5,)), "decoder_qkv_multiscales": ((), (), (), (5,), (5,), (5,)),
        "encoder_layers_per_block": (2, 2, 2, 3, 3, 3), "decoder_layers_per_block": (3, 3, 3, 3, 3, 3),
        "downsample_block_type": "conv", "upsample_block_type": "interpolate", "decoder_norm_types": "rms_norm",
        "decoder_act_fns": "silu", "scaling_factor": 0.41407,
    },
}

# AutoencoderKLHunyuanImage: HunyuanImagePipeline's fast-test VAE (tests/pipelines/hunyuan_image_21, 8x; its
# GroupNorms have 32 groups, so 32 channels is the least), and the released HunyuanImage 2.1 VAE (diffusers'
# scripts/convert_hunyuan_image_to_diffusers.py).
HUNYUANIMAGE_CONFIGS = {
    "hunyuanimage-tiny": {"in_channels": 3, "out_channels": 3, "latent_channels": 4, "block_out_channels": (32, 64, 64, 64),
                          "layers_per_block": 1, "scaling_factor": 0.476986, "spatial_compression_ratio": 8,
                          "sample_size": 128},
    "hunyuanimage": {"in_channels": 3, "out_channels": 3, "latent_channels": 64,
                     "block_out_channels": (128, 256, 512, 512, 1024, 1024), "layers_per_block": 2,
                     "spatial_compression_ratio": 32, "sample_size": 384, "scaling_factor": 0.75289},
}

# AutoencoderTiny: diffusers' model-test config (tests/models/autoencoders/test_models_autoencoder_tiny.py: four
# blocks, 8x, as diffusers' tiling assumes: 2 ** out_channels), and the released TAESD (SD 1.x/2.x, SDXL: 4 latent
# channels, the class's defaults) and TAEF1 / TAESD3 (16).
TINY_CONFIGS = {
    "tiny-tiny": {"in_channels": 3, "out_channels": 3, "encoder_block_out_channels": (32, 32, 32, 32),
                  "decoder_block_out_channels": (32, 32, 32, 32), "num_encoder_blocks": (1, 1, 1, 1),
                  "num_decoder_blocks": (1, 1, 1, 1), "latent_channels": 4},
    "taesd": {},
    "taef1": {"latent_channels": 16, "scaling_factor": 0.3611, "shift_factor": 0.1159},
}

# AutoencoderKLTemporalDecoder: StableVideoDiffusionPipeline's fast-test VAE (tests/pipelines/stable_video_diffusion),
# and the released SVD / SVD-XT VAE (stabilityai/stable-video-diffusion-img2vid-xt's vae/config.json).
TEMPORAL_DECODER_CONFIGS = {
    "svd-tiny": {"block_out_channels": (32, 64), "in_channels": 3, "out_channels": 3,
                 "down_block_types": ("DownEncoderBlock2D",) * 2, "latent_channels": 4},
    "svd": {"block_out_channels": (128, 256, 512, 512), "down_block_types": ("DownEncoderBlock2D",) * 4,
            "layers_per_block": 2, "latent_channels": 4, "sample_size": 768, "scaling_factor": 0.18215},
}

# Kandinsky 6's sound (diffusers >= 0.42): MMAudioVAE (latents to a log-mel spectrogram) and MMAudioVocoder (the
# spectrogram to a waveform), small ones whose hop (16) is the vocoder's upsampling, as the pair must be; and the
# released architectures (the class defaults: 128 mel bins, 40 latent channels, hop 512 at 44.1 kHz)
MMAUDIO_CONFIGS = {
    "mmaudio-tiny": {"mel_bins": 16, "latent_channels": 4, "hidden_channels": 8, "channel_multipliers": (1, 2),
                     "layers_per_block": 1, "sample_rate": 16000, "n_fft": 64, "hop_length": 16},
    "mmaudio": {},
}
MMAUDIO_VOCODER_CONFIGS = {
    "mmaudio-vocoder-tiny": {"num_mels": 16, "upsample_initial_channel": 16, "upsample_rates": (4, 4),
                             "upsample_kernel_sizes": (8, 8), "resblock_kernel_sizes": (3,),
                             "resblock_dilation_sizes": ((1, 3),)},
    "mmaudio-vocoder": {},
}

# LongCatAudioDiTVae (diffusers >= 0.42): diffusers' own pipeline test config (tests/pipelines/longcat_audio_dit,
# 58eb52c: hop 4, as its encoder fills its strides out), and the released LongCat-AudioDiT VAE: the class defaults
# with the checkpoint config's `vae_config` levels, c_mults [1, 2, 4, 8, 16] and strides [2, 4, 4, 8, 8] (hop 2048,
# its downsampling_ratio). diffusers' snapshot has no copy of that config (its converter reads the checkpoint's);
# these two lists are as two third-party ports restate it (docs/guide/plan.md)
LONGCAT_AUDIO_CONFIGS = {
    "longcat-audio-tiny": {"in_channels": 1, "channels": 16, "c_mults": [1, 2], "strides": [2], "latent_dim": 8,
                           "encoder_latent_dim": 16, "downsampling_ratio": 2, "sample_rate": 24000},
    "longcat-audio": {"c_mults": [1, 2, 4, 8, 16], "strides": [2, 4, 4, 8, 8]},
}

# ConsistencyDecoderVAE (OpenAI's consistency decoder, `vae=` of SD 1.x pipelines): diffusers' own test config
# (tests/models/autoencoders/test_models_consistency_decoder_vae.py, 58eb52c), and openai/consistency-decoder's (the
# class defaults: SD's encoder, a UNet2DModel decoder of 320 to 1024 channels)
CONSISTENCY_CONFIGS = {
    "consistency-tiny": {"encoder_block_out_channels": (2, 4), "encoder_in_channels": 3, "encoder_out_channels": 4,
                         "encoder_down_block_types": ("DownEncoderBlock2D",) * 2, "decoder_add_attention": False,
                         "decoder_block_out_channels": (2, 4),
                         "decoder_down_block_types": ("ResnetDownsampleBlock2D",) * 2, "decoder_downsample_padding": 1,
                         "decoder_in_channels": 7, "decoder_layers_per_block": 1, "decoder_norm_eps": 1e-05,
                         "decoder_norm_num_groups": 2, "encoder_norm_num_groups": 2,
                         "decoder_num_train_timesteps": 1024, "decoder_out_channels": 6,
                         "decoder_resnet_time_scale_shift": "scale_shift", "decoder_time_embedding_type": "learned",
                         "decoder_up_block_types": ("ResnetUpsampleBlock2D",) * 2, "scaling_factor": 1,
                         "latent_channels": 4},
    "consistency": {},
}

# AutoencoderKLKVAE (Kandinsky's image VAE, KVAE 2D; diffusers >= 0.42): diffusers' own test config
# (tests/models/autoencoders/test_models_autoencoder_kl_kvae.py, 58eb52c), and the class defaults (8x, 16 channels)
KVAE_CONFIGS = {
    "kvae-tiny": {"in_channels": 3, "channels": 32, "num_enc_blocks": 1, "num_dec_blocks": 1, "z_channels": 4,
                  "double_z": True, "ch_mult": (1, 2), "sample_size": 32},
    "kvae": {},
}

# AutoencoderKLKVAEAudio (Kandinsky's audio VAE, KVAE-Audio; diffusers >= 0.42): a small one (hop 8, attention of 2
# heads), and the released architecture (the class defaults: 48 kHz mono, hop 960, 64 latent channels)
KVAE_AUDIO_CONFIGS = {
    "kvae-audio-tiny": {"encoder_dim": 4, "encoder_rates": [2, 4], "latent_dim": 16, "codebook_dim": 4,
                        "decoder_dim": 16, "decoder_rates": [4, 2], "attn_num_heads": 2},
    "kvae-audio": {},
}

# AutoencoderKLKVAEVideo (Kandinsky's video VAE, KVAE 3D; diffusers >= 0.42): diffusers' own test config
# (tests/models/autoencoders/test_models_autoencoder_kl_kvae_video.py, 58eb52c: 2x in space and time), and the class
# defaults (8x in space, 4x in time, 16 latent channels)
KVAE_VIDEO_CONFIGS = {
    "kvae-video-tiny": {"ch": 32, "ch_mult": (1, 2), "num_res_blocks": 1, "in_channels": 3, "out_ch": 3,
                        "z_channels": 4, "temporal_compress_times": 2},
    "kvae-video": {},
}

# MiniMaxMusic3Vocoder (MiniMax Music 3's stage 3; diffusers >= 0.42): a small one (hop 8: strides 2 and 4, the
# released kernel 2s / padding ceil(s / 2) blocks), and the released architecture (the class defaults: 128 latent
# channels folded into two stereo streams, hop 512 at 44.1 kHz)
MINIMAX_MUSIC3_VOCODER_CONFIGS = {
    "minimax-music3-vocoder-tiny": {"latent_channels": 8, "decoder_input_dim": 16, "decoder_hidden_dim": 16,
                                    "upsampling_ratios": (2, 4)},
    "minimax-music3-vocoder": {},
}

# Cosmos3AVAEAudioTokenizer (diffusers >= 0.42): a small one (hop 8, decoder only as decoder-only checkpoints
# are), and the released architecture (the class defaults: 64 latent channels, hop 1920 at 48 kHz stereo)
COSMOS3_AUDIO_CONFIGS = {
    "cosmos3-audio-tiny": {"vocoder_input_dim": 4, "dec_dim": 8, "dec_c_mults": (1, 2), "dec_strides": (2, 4),
                           "dec_out_channels": 2, "enc_dim": 8, "enc_intermediate_dim": 16, "enc_num_blocks": 1,
                           "enc_n_fft": 16, "enc_hop_length": 4, "enc_latent_dim": 8, "enc_c_mults": (1, 2),
                           "enc_strides": (1, 2)},
    "cosmos3-audio": {},
}

# AutoencoderSAME (Stable Audio 3; diffusers >= 0.42): diffusers' own test config (tests/models/autoencoders/
# test_models_autoencoder_same.py, 58eb52c: patches of 4, strides 2 x 2), and SAME-S (the class defaults)
SAME_CONFIGS = {
    "same-tiny": {"audio_channels": 2, "patch_size": 4, "encoder_channels": 16, "encoder_c_mults": [1, 2],
                  "encoder_strides": [2, 2], "encoder_transformer_depths": [1, 1], "latent_dim": 8,
                  "use_differential_attention": False, "dim_heads": 8, "ff_mult": 2, "sampling_rate": 44100},
    "same": {},
}

# AutoencoderKLHunyuanImageRefiner (HunyuanImage 2.1's refiner; diffusers >= 0.36): a small one (4x: two levels of
# DCAE downsampling, one of them "temporal"), and the released architecture (the class defaults: 16x, 32 channels)
HUNYUANIMAGE_REFINER_CONFIGS = {
    "hunyuanimage-refiner-tiny": {"latent_channels": 4, "block_out_channels": (8, 16, 16), "layers_per_block": 1,
                                  "spatial_compression_ratio": 4, "temporal_compression_ratio": 2},
    "hunyuanimage-refiner": {},
}

# Kandinsky6SRVAE (Kandinsky 6's video super-resolution; diffusers >= 0.42): a small one (four levels: 8x spatial, the
# released 4x in time from level 1 on), and the released architecture (the class defaults: 16x, 64 latent channels)
KANDINSKY6_SR_CONFIGS = {
    "kandinsky6-sr-tiny": {"latent_channels": 4, "encoder_block_out_channels": (8, 8, 16, 16),
                           "decoder_block_out_channels": (8, 8, 16, 16), "layers_per_block": 1},
    "kandinsky6-sr": {},
}

# AutoencoderOobleck (Stable Audio): diffusers' own test config (tests/models/autoencoders/
# test_models_autoencoder_oobleck.py, 58eb52c: hop 8), and Stable Audio Open 1.0's (the class defaults: hop 2048 at
# 44.1 kHz, 64 latent channels)
OOBLECK_CONFIGS = {
    "oobleck-tiny": {"encoder_hidden_size": 12, "decoder_channels": 12, "decoder_input_channels": 6,
                     "audio_channels": 2, "downsampling_ratios": [2, 4], "channel_multiples": [1, 2]},  # (lists: diffusers adds to them)
    "oobleck": {},
}

# config name -> (diffusers class, its arguments)
# AutoencoderRAE: the tiny model a DINOv2 encoder (with registers, one layer, one head of 64) whose 518-pixel position
# grid is resized to 4x4 (antialiased bicubic), the decoder of diffusers' model tests (58eb52c); the released
# "RAE-dinov2-wReg-base-ViTXL-n08": DINOv2 base (768 wide, patch 14, 12 layers) at 224, the ViT-XL decoder of
# diffusers' conversion script, patch 16 (256x256 images)
RAE_CONFIGS = {
    "rae-tiny": {"encoder_type": "dinov2", "encoder_hidden_size": 64, "encoder_patch_size": 14,
                 "encoder_num_hidden_layers": 1, "encoder_input_size": 56, "patch_size": 4, "image_size": 16,
                 "decoder_hidden_size": 32, "decoder_num_hidden_layers": 1, "decoder_num_attention_heads": 4,
                 "decoder_intermediate_size": 64, "num_channels": 3},
    "rae": {"encoder_type": "dinov2", "encoder_hidden_size": 768, "encoder_patch_size": 14,
            "encoder_num_hidden_layers": 12, "encoder_input_size": 224, "patch_size": 16, "image_size": 256,
            "decoder_hidden_size": 1152, "decoder_num_hidden_layers": 28, "decoder_num_attention_heads": 16,
            "decoder_intermediate_size": 4096},
}
# AutoencoderVidTok: two tiny models (causal with KL latents; non-causal with FSQ's 8 levels on each of 4 channels),
# and diffusers' defaults, VidTok's released causal KL model at 4x8x8 ("vidtok_kl_causal_488_4chn": 128 wide, levels
# 1, 2, 4, 4, 4 latent channels)
VIDTOK_CONFIGS = {
    "vidtok-tiny": {"ch": 16, "ch_mult": [1, 2, 2, 2], "num_res_blocks": 1, "z_channels": 4},
    "vidtok-tiny-fsq": {"ch": 16, "ch_mult": [1, 2, 2, 2], "num_res_blocks": 1, "z_channels": 4, "double_z": False,
                        "regularizer": "fsq", "codebook_size": 8 ** 4, "is_causal": False},
    "vidtok": {},
}
MODELS = {
    **{name: (AutoencoderKLCogVideoX, kwargs) for name, kwargs in CONFIGS.items()},
    **{name: (AutoencoderKLWan, kwargs) for name, kwargs in WAN_CONFIGS.items()},
    **{name: (AutoencoderKLQwenImage, kwargs) for name, kwargs in QWENIMAGE_CONFIGS.items()},
    **{name: (AutoencoderKLHunyuanVideo, kwargs) for name, kwargs in HUNYUAN_CONFIGS.items()},
    **{name: (AutoencoderKLHunyuanVideo15, kwargs) for name, kwargs in HUNYUAN15_CONFIGS.items()},
    **{name: (AutoencoderKLLTXVideo, kwargs) for name, kwargs in LTX_CONFIGS.items()},
    **{name: (AutoencoderKLAllegro, kwargs) for name, kwargs in ALLEGRO_CONFIGS.items()},
    **{name: (AutoencoderKLMochi, kwargs) for name, kwargs in MOCHI_CONFIGS.items()},
    **{name: (AutoencoderKLCosmos, kwargs) for name, kwargs in COSMOS_CONFIGS.items()},
    **{name: (AutoencoderKLMagvit, kwargs) for name, kwargs in MAGVIT_CONFIGS.items()},
    **{name: (AutoencoderKL, kwargs) for name, kwargs in KL_CONFIGS.items()},
    **{name: (AutoencoderKLFlux2, kwargs) for name, kwargs in FLUX2_CONFIGS.items()},
    **{name: (AutoencoderDC, kwargs) for name, kwargs in DC_CONFIGS.items()},
    **{name: (AutoencoderKLHunyuanImage, kwargs) for name, kwargs in HUNYUANIMAGE_CONFIGS.items()},
    **{name: (AutoencoderTiny, kwargs) for name, kwargs in TINY_CONFIGS.items()},
    **{name: (AutoencoderKLTemporalDecoder, kwargs) for name, kwargs in TEMPORAL_DECODER_CONFIGS.items()},
    **{name: (diffusers.VQModel, kwargs) for name, kwargs in VQ_CONFIGS.items()},
    **{name: (diffusers.AutoencoderOobleck, kwargs) for name, kwargs in OOBLECK_CONFIGS.items()},
    **{name: (diffusers.AsymmetricAutoencoderKL, kwargs) for name, kwargs in ASYM_KL_CONFIGS.items()},
    **{name: (diffusers.ConsistencyDecoderVAE, kwargs) for name, kwargs in CONSISTENCY_CONFIGS.items()},
}
# Classes newer than the oldest diffusers this project supports (0.36): each is built where the installed diffusers'
# version has it, and imported loudly there (a diffusers that should have it and does not fails here, so no case
# silently drops out of the tests that take their cases from MODELS). `MISSING` says which configs cannot be built
# here, and why.
NEWER_CLASSES = (("AutoencoderKLLTX2Video", (0, 37), LTX2_CONFIGS),
                 ("AutoencoderKLLTX2Audio", (0, 37), LTX2_AUDIO_CONFIGS),
                 ("LTX2Vocoder", (0, 37), LTX2_VOCODER_CONFIGS), ("LTX2VocoderWithBWE", (0, 38), LTX23_VOCODER_CONFIGS),
                 ("AutoencoderKLQwenImage21", (0, 42), QWENIMAGE21_CONFIGS),
                 ("AutoencoderKLMiniMaxH3", (0, 42), MINIMAX_H3_CONFIGS),
                 ("AutoencoderKLMiniMaxH3Audio", (0, 42), MINIMAX_H3_AUDIO_CONFIGS),
                 ("MMAudioVAE", (0, 42), MMAUDIO_CONFIGS), ("MMAudioVocoder", (0, 42), MMAUDIO_VOCODER_CONFIGS),
                 ("LongCatAudioDiTVae", (0, 42), LONGCAT_AUDIO_CONFIGS),
                 ("Cosmos3AVAEAudioTokenizer", (0, 42), COSMOS3_AUDIO_CONFIGS),
                 ("MiniMaxMusic3Vocoder", (0, 42), MINIMAX_MUSIC3_VOCODER_CONFIGS),
                 ("AutoencoderKLKVAE", (0, 42), KVAE_CONFIGS),
                 ("AutoencoderKLKVAEAudio", (0, 42), KVAE_AUDIO_CONFIGS),
                 ("AutoencoderKLKVAEVideo", (0, 42), KVAE_VIDEO_CONFIGS),
                 ("AutoencoderSAME", (0, 42), SAME_CONFIGS),
                 ("AutoencoderKLHunyuanImageRefiner", (0, 36), HUNYUANIMAGE_REFINER_CONFIGS),
                 ("Kandinsky6SRVAE", (0, 42), KANDINSKY6_SR_CONFIGS),
                 ("AutoencoderRAE", (0, 37), RAE_CONFIGS), ("AutoencoderVidTok", (0, 38), VIDTOK_CONFIGS))
def _newer_class(name: str) -> type:
    """A class of NEWER_CLASSES from the installed diffusers (LTX-2's vocoders live in its pipeline's module)."""
    if name.startswith("LTX2Vocoder"):
        from diffusers.pipelines.ltx2 import vocoder

        return getattr(vocoder, name)
    return getattr(diffusers, name)


def installed(name: str) -> bool:
    """Whether the installed diffusers has a class of NEWER_CLASSES (where `_newer_class` looks for it)."""
    if name.startswith("LTX2Vocoder"):
        import importlib.util

        if importlib.util.find_spec("diffusers.pipelines.ltx2") is None:
            return False
        from diffusers.pipelines.ltx2 import vocoder

        return hasattr(vocoder, name)
    return hasattr(diffusers, name)


DIFFUSERS_RELEASE = Version(diffusers.__version__).release  # 0.42.0.dev0 counts as 0.42
MISSING: dict[str, str] = {}
for _name, _since, _configs in NEWER_CLASSES:
    if DIFFUSERS_RELEASE < _since:
        MISSING.update(dict.fromkeys(_configs, f"diffusers {diffusers.__version__} is older than "
                                                f"{'.'.join(map(str, _since))}, which added {_name}"))
    else:
        MODELS.update({name: (_newer_class(_name), kwargs) for name, kwargs in _configs.items()})


def requires(*configs: str) -> str | None:
    """Why one of these configs cannot be built with the installed diffusers (for a skip), or None."""
    return next((MISSING[c] for c in configs if c in MISSING), None)


# The released sizes (the pipelines' defaults): name -> (config, frames, height, width). scripts/gpu_table.py
# times them on a GPU, scripts/plan_table.py plans them for TPUs and GPUs offline.
RELEASED = {
    "cogvideox-480p": ("official", 49, 480, 720),  # CogVideoX 2b / 5b
    "cogvideox1.5": ("official", 81, 768, 1360),  # CogVideoX 1.5
    "wan2.1-480p": ("wan2.1", 81, 480, 832),
    "wan2.1-720p": ("wan2.1", 81, 720, 1280),
    "wan2.2": ("wan2.2", 121, 704, 1280),  # Wan 2.2 TI2V-5B
    "qwenimage": ("qwenimage", 1, 1328, 1328),  # QwenImagePipeline: one 1328x1328 image
    "hunyuanvideo": ("hunyuanvideo", 129, 720, 1280),
    "hunyuanvideo15": ("hunyuanvideo15", 129, 720, 1280),  # HunyuanVideo15Pipeline, 720p (issue 29's size)
    "allegro": ("allegro", 88, 720, 1280),  # AllegroPipeline
    "mochi": ("mochi", 163, 480, 848),  # genmo's Mochi 1 (5.4 s at 30 fps), MochiPipeline's 480 x 848
    "cosmos": ("cosmos", 121, 704, 1280),  # CosmosTextToWorldPipeline's defaults
    "easyanimate": ("magvit", 49, 512, 512),  # EasyAnimatePipeline's defaults
    "ltx0.9.1": ("ltx091", 161, 512, 704),  # LTXPipeline (decode at timestep 0.05: decode_args)
    **({"ltx2": ("ltx2", 121, 512, 768)} if "ltx2" in MODELS else {}),  # LTX2Pipeline; diffusers >= 0.37
    # QwenImage21Pipeline: output_resolution 1024, a 1024x1024 image; diffusers >= 0.42
    **({"qwenimage21": ("qwenimage21", 1, 1024, 1024)} if "qwenimage21" in MODELS else {}),
    # MiniMax H3's modular pipeline: 124 frames (17 x 7 + 5) at 24 fps on its 16:9 canvas, 768 x 1344
    **({"minimaxh3": ("minimaxh3", 124, 768, 1344)} if "minimaxh3" in MODELS else {}),
    # Kandinsky6SRPipeline's decode of one 512 x 768 tile (its transformer's tile size) of a 121-frame video (Kandinsky
    # 6's 121 x 512 x 768 at 2x); diffusers >= 0.42
    **({"kandinsky6-sr": ("kandinsky6-sr", 121, 512, 768)} if "kandinsky6-sr" in MODELS else {}),
    # AutoencoderKL's images (one frame): the pipelines' default sizes, and SDXL at 2048x2048 (issue 39: untiled
    # on one v5e chip)
    "sd1.5": ("sd1.5", 1, 512, 512), "sdxl": ("sdxl", 1, 1024, 1024), "sd3": ("sd3", 1, 1024, 1024),
    "flux": ("flux", 1, 1024, 1024), "sdxl-2048": ("sdxl", 1, 2048, 2048), "flux-2048": ("flux", 1, 2048, 2048),
    "flux2": ("flux2", 1, 1024, 1024),  # Flux2Pipeline's default 1024x1024
    "sana": ("sana", 1, 1024, 1024),  # SanaPipeline's 1024x1024 (Sana 1600M 1024px), DC-AE f32c32
    "hunyuanimage": ("hunyuanimage", 1, 2048, 2048),  # HunyuanImagePipeline's default 2048x2048
    "taesdxl": ("taesd", 1, 1024, 1024), "taef1": ("taef1", 1, 1024, 1024),  # TAESD previews at SDXL's and Flux's size
    "svd-xt": ("svd", 25, 576, 1024),  # StableVideoDiffusionPipeline (SVD-XT): 25 frames of 576x1024, one decode
    # SD inpainting with the asymmetric VAE (x1.5): its 512x512 (plan compiles the decoder conditioned on the image
    # and mask, as the pipeline runs it)
    "sd-inpainting-asym": ("asym-kl-x1.5", 1, 512, 512),
    "kandinsky2.2": ("movq", 1, 512, 512),  # KandinskyV22Pipeline's default 512x512 through its MoVQ
    # SD 1.5's 512x512 through OpenAI's consistency decoder (`vae=ConsistencyDecoderVAE`): its two UNet steps
    "sd1.5-consistency": ("consistency", 1, 512, 512),
    # Kandinsky's image VAE (KVAE 2D): no pipeline; its config's sample_size, 1024x1024; diffusers >= 0.42
    **({"kvae-1024": ("kvae", 1, 1024, 1024)} if "kvae" in MODELS else {}),
    # Kandinsky's video VAE (KVAE 3D): no pipeline; 81 frames of 480 x 832 (Wan 2.1's 480p); diffusers >= 0.42
    **({"kvae-video-480p": ("kvae-video", 81, 480, 832)} if "kvae-video" in MODELS else {}),
    # HunyuanImage 2.1's refiner pipeline: its default 64 x 16 = 1024x1024 image, as one frame
    **({"hunyuanimage-refiner": ("hunyuanimage-refiner", 1, 1024, 1024)} if "hunyuanimage-refiner" in MODELS else {}),
    # RAE (DINOv2 base, ViT-XL decoder): no pipeline; its 256x256 images (the encoder takes them at 224); >= 0.37
    **({"rae-256": ("rae", 1, 256, 256)} if "rae" in MODELS else {}),
    # VidTok (causal KL, 4x8x8): no pipeline; 16 frames of 256x256 (4 latent frames); diffusers >= 0.38
    **({"vidtok-256": ("vidtok", 16, 256, 256)} if "vidtok" in MODELS else {}),
}


# Sound at its pipeline's default length: name -> (config, the encode input [B, C, samples]); a decode plans that
# input's latents. Stable Audio Open: its transformer's 1024 latent frames of 2048 samples (47.55 s at 44.1 kHz).
# The released sound sizes at their pipelines' defaults: name -> (config, encode input or None, decode input). The
# decode input is the latents the pipeline hands its VAE (a vocoder's: the spectrogram its audio VAE decodes).
RELEASED_SOUND = {
    # StableAudioPipeline: the transformer's sample_size 1024 latents (47.55 s at 44.1 kHz stereo)
    "stable-audio-open": ("oobleck", (1, 2, 1024 * 2048), (1, 64, 1024)),
    # LTX2Pipeline: 121 frames at 24 fps, 5.04 s: round(5.04 x 16000 / 160 / 4) = 126 latent frames [B, 8, L, 16];
    # the decoder makes 4 x 126 - 3 = 501 spectrogram frames of 64 mel bins, stereo, which the vocoders take
    "ltx2-audio": ("ltx2-audio", (1, 2, 501, 64), (1, 8, 126, 16)),
    "ltx2-vocoder": ("ltx2-vocoder", None, (1, 2, 501, 64)),
    "ltx2.3-vocoder": ("ltx2.3-vocoder", None, (1, 2, 501, 64)),
    # MiniMax H3's modular pipeline: 124 frames at 24 fps, audio_latent_num_frames(124) = 207 latents at 40 a second
    # (hop 800 at 32 kHz); its mono VAE takes the two stereo channels as a batch of 2
    "minimaxh3-audio": ("minimaxh3-audio", (2, 1, 207 * 800), (2, 32, 207)),
    # Kandinsky6TI2VAPipeline: 121 frames at 24 fps, 31 latent frames: ceil(121 / 24 x 44100 / 1024) = 218 latents
    # of MMAudio's VAE, whose decode is a 436-frame log-mel spectrogram of 128 bins, which its vocoder takes
    "kandinsky6-audio": ("mmaudio", None, (1, 40, 218)),
    "kandinsky6-vocoder": ("mmaudio-vocoder", None, (1, 128, 436)),
    # Cosmos3OmniPipeline: 189 frames at 24 fps, int(189 / 24 x 48000) = 378,000 samples, ceil(/ 1920) = 197 latents
    "cosmos3-audio": ("cosmos3-audio", (1, 2, 378000), (1, 64, 197)),
    # MiniMax Music 3's modular pipeline: one denoising window of 200 frames at 25 Hz, int(200 x 44100 / 24000 x 960 /
    # 512) = 689 latent frames (8 s at 44.1 kHz), which its vocoder decodes one window at a time
    "minimax-music3-vocoder": ("minimax-music3-vocoder", None, (1, 128, 689)),
    # LongCatAudioDiTPipeline: its longest sound, max_wav_duration 30 s at 24 kHz mono: int(30 x 24000 // 2048) = 351
    # latents, which the pipeline hands its VAE as [B, 64, L] (its own layout is [B, L, 64])
    "longcat-audio": ("longcat-audio", (1, 1, 351 * 2048), (1, 64, 351)),
    # KVAE-Audio (no diffusers pipeline): 10 s of 48 kHz mono, 500 latents of 960 samples
    "kvae-audio": ("kvae-audio", (1, 1, 480000), (1, 64, 500)),
    # StableAudio3Pipeline: its default duration 10 s at 44.1 kHz stereo, ceil(441000 / 4096) = 108 latents
    "stable-audio-3": ("same", (1, 2, 441000), (1, 256, 108)),
}


def meta_vae(config: str):
    """A model of a named config on the meta device (no weights, no memory), in eval mode as TorchaxVAE needs it
    (a fresh diffusers model trains: Allegro's dropout layers), for planning and lowering."""
    if config not in MODELS:
        raise ValueError(f"unknown config {config!r}; known: {sorted(MODELS)}")
    model_class, kwargs = MODELS[config]
    with torch.device("meta"):
        return model_class(**kwargs).eval()


# Parameters a class initializes to zero (or near it) where that hides what they carry (AutoencoderKLMiniMaxH3's
# residual scales: its decoder's blocks would add nothing): random_vae draws them too.
ZERO_INIT = {"AutoencoderKLMiniMaxH3": ("scale1", "scale2", "register_tokens"),
             # AutoencoderSAME's output tokens (1e-5 x N(0, 1)) and its transformers' zeroed output projections:
             # as initialized, every block is the identity and every latent of a clip the same
             "AutoencoderSAME": ("new_tokens", "attn.to_out.weight", "ff.proj_out.weight", "ff.proj_out.bias")}


def random_vae(config: str, seed: int = 0):
    """A model of a named config (`MODELS`) with weights from a fixed seed (`ZERO_INIT` drawn as N(0, 0.5): the
    parameters whose names end in its entries)."""
    if config not in MODELS:
        raise ValueError(f"unknown config {config!r}; known: {sorted(MODELS)}")
    model_class, kwargs = MODELS[config]
    torch.manual_seed(seed)
    model = model_class(**kwargs).eval()
    zeros = ZERO_INIT.get(model_class.__name__, ())
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if any(name == zero or name.endswith("." + zero) for zero in zeros):  # (a name's last parts)
                parameter.normal_(0.0, 0.5)
    return model


def decode_args(vae, batch: int, dtype=None) -> tuple:
    """What the pipelines pass to `decode` besides the latents: LTX's timestep (0.05, LTX-Video 0.9.1's
    recommended decode_timestep) where the decoder is timestep-conditioned; Stable Video Diffusion's num_frames (the
    batch: one video's frames); the consistency decoder's generator (a new one of seed 0 each call, so that each
    side of a comparison draws the same noise); else nothing."""
    if isinstance(vae, AutoencoderKLTemporalDecoder):
        return (batch,)
    if isinstance(vae, diffusers.ConsistencyDecoderVAE):
        return (torch.Generator().manual_seed(0),)
    if not getattr(vae.config, "timestep_conditioning", False):
        return ()
    return (torch.full((batch,), 0.05, dtype=dtype or vae.dtype, device=vae.device),)


def input_shape(case, vae) -> tuple[int, ...]:
    """The encode or decode input for a video of case's size, as the pipeline would pass it."""
    from torchax_vae.models import input_shape

    return input_shape(vae, case.kind, case.frames, case.height, case.width)


def configure(model, case) -> None:
    """Tiling and program split of `case` on a TorchaxVAE (or diffusers' model, for the PyTorch side).

    CogVideoX has a tiling mode ("auto"/"on"/"off") and a program split; Wan
    tiles as diffusers does, when `enable_tiling` was called.
    """
    if case.tile:
        model.enable_tiling(tile_sample_min_height=case.tile[0], tile_sample_min_width=case.tile[1])
    tiling = getattr(case, "tiling", "on" if case.tile else "off")
    if hasattr(model, "tiling_mode"):
        model.tiling_mode = tiling
    elif tiling == "off":
        model.disable_tiling()
    elif tiling == "on" and not case.tile:
        model.enable_tiling()
    if hasattr(model, "program_split"):
        model.program_split = case.split
