"""pipe.vae = TorchaxVAE(...) in diffusers' SanaVideoPipeline, whose latent de-normalization branches on
`isinstance(self.vae, AutoencoderKLWan)` (pipeline_sana_video.py, diffusers 0.42.1): the output must be plain
diffusers' output. Before TorchaxVAE passed for the class it wraps, the pipeline took its mean-0/std-1 branch and
the frames differed by 0.36 (max abs, on [0, 1] frames) while diffusers' own test, which checks only the shape, passed.

Components as diffusers' SanaVideo fast test builds them (tests/pipelines/sana_video/test_sana_video.py), with
prompt embeddings given instead of its hub tokenizer and Gemma encoder.
"""

import copy

import torch
from diffusers import AutoencoderKLWan, DPMSolverMultistepScheduler, SanaVideoPipeline, SanaVideoTransformer3DModel
from helpers import assert_close

from torchax_vae import TorchaxVAE

CAPTION, TOKENS = 8, 16


def components():
    torch.manual_seed(0)
    # diffusers' test VAE; its config keeps the class's released latents_mean/latents_std (not all 0 and 1)
    vae = AutoencoderKLWan(base_dim=3, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1,
                           temperal_downsample=[False, True, True]).eval()
    torch.manual_seed(0)
    transformer = SanaVideoTransformer3DModel(
        in_channels=16, out_channels=16, num_attention_heads=2, attention_head_dim=12, num_layers=2,
        num_cross_attention_heads=2, cross_attention_head_dim=12, cross_attention_dim=24, caption_channels=CAPTION,
        mlp_ratio=2.5, dropout=0.0, attention_bias=False, sample_size=8, patch_size=(1, 2, 2),
        norm_elementwise_affine=False, norm_eps=1e-6, qk_norm="rms_norm_across_heads", rope_max_seq_len=32,
    ).eval()
    return dict(transformer=transformer, vae=vae, scheduler=DPMSolverMultistepScheduler(), text_encoder=None,
                tokenizer=None)


def test_sana_video_takes_the_wan_branch_and_gives_diffusers_frames():
    parts = components()
    pipe = SanaVideoPipeline(**parts)
    pipe.set_progress_bar_config(disable=True)
    generator = torch.Generator().manual_seed(1)
    embeds = dict(prompt_embeds=torch.randn(1, TOKENS, CAPTION, generator=generator),
                  prompt_attention_mask=torch.ones(1, TOKENS, dtype=torch.long),
                  negative_prompt_embeds=torch.randn(1, TOKENS, CAPTION, generator=generator),
                  negative_prompt_attention_mask=torch.ones(1, TOKENS, dtype=torch.long))
    inputs = dict(negative_prompt=None, num_inference_steps=2, guidance_scale=6.0, height=32, width=32, frames=9, output_type="pt",
                  use_resolution_binning=False, complex_human_instruction=[], **embeds)
    with torch.no_grad():
        expected = pipe(generator=torch.Generator().manual_seed(0), **inputs).frames
        pipe.vae = TorchaxVAE(copy.deepcopy(parts["vae"]))
        assert isinstance(pipe.vae, AutoencoderKLWan) and isinstance(pipe.vae, TorchaxVAE)
        actual = pipe(generator=torch.Generator().manual_seed(0), **inputs).frames
    assert actual.shape == (1, 9, 3, 32, 32)
    assert_close(actual, expected, 1e-4, "SanaVideoPipeline frames with TorchaxVAE(wan) vs diffusers")
