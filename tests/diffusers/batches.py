"""The batches of diffusers' pipeline test files vendored after the first (SOURCE.md has each batch's runs): a
record of what each stop added, and the lists to run both ways by hand (`-m heavy`, with and without
`TORCHAX_VAE_PLAIN_DIFFUSERS=1`). conftest.py marks every pipeline file outside `PIPELINE_FILES_IN_CI` heavy;
nothing here changes how a test runs.
"""

# diffusers' pipeline test files vendored second (SOURCE.md): heavy, as the first batch's files outside CI; run both ways
# (wrapped and plain) before each stop, their failures on plain diffusers listed above; test_pipeline_outputs.py compares
# their pipelines' outputs with plain diffusers' in the slow set.
SECOND_BATCH = (
    "stable_diffusion/test_stable_diffusion_inpaint.py",
    "stable_diffusion/test_stable_diffusion_instruction_pix2pix.py",
    "stable_diffusion_xl/test_stable_diffusion_xl_img2img.py",
    "stable_diffusion_xl/test_stable_diffusion_xl_inpaint.py",
    "stable_diffusion_3/test_pipeline_stable_diffusion_3_img2img.py",
    "stable_diffusion_3/test_pipeline_stable_diffusion_3_inpaint.py",
    "flux/test_pipeline_flux_inpaint.py",
    "flux/test_pipeline_flux_fill.py",
    "flux/test_pipeline_flux_kontext.py",
    "flux/test_pipeline_flux_control.py",
    "pag/test_pag_sd.py",
    "pag/test_pag_sdxl.py",
    "controlnet/test_controlnet_img2img.py",
    "controlnet_sd3/test_controlnet_sd3.py",
    "pixart_sigma/test_pixart.py",
    "chroma/test_pipeline_chroma.py",
    "z_image/test_z_image.py",
    "cogview3/test_cogview3plus.py",
    "latent_consistency_models/test_latent_consistency_models.py",
    "wan/test_wan_22.py",
    "wan/test_wan_vace.py",
    "wan/test_wan_video_to_video.py",
    "ltx/test_ltx_image2video.py",
    "ltx/test_ltx_condition.py",
    "hunyuan_video/test_hunyuan_image2video.py",
    "sana_video/test_sana_video_i2v.py",
    "skyreels_v2/test_skyreels_v2_df.py",
    "qwenimage/test_qwenimage_img2img.py",
    "qwenimage/test_qwenimage_inpaint.py",
    "cogvideo/test_cogvideox_video2video.py",
    "sana/test_sana_sprint.py",
    "flux2/test_pipeline_flux2_klein.py",
    "flux2/test_pipeline_flux2_klein_inpaint.py",
    "ltx2/test_ltx2.py",
    "ltx2/test_ltx2_image2video.py",
    "ltx2/test_ltx2_condition.py",
    "ltx2/test_ltx2_hdr.py",
    "ltx2/test_ltx2_in_context.py",
    "easyanimate/test_easyanimate.py",
)

# diffusers' pipeline test files vendored third (SOURCE.md): heavy, run both ways before each stop as the second's are.
THIRD_BATCH = (
    "flux2/test_pipeline_flux2.py",
    "ledits_pp/test_ledits_pp_stable_diffusion.py",
    "ledits_pp/test_ledits_pp_stable_diffusion_xl.py",
    "stable_diffusion_xl/test_stable_diffusion_xl_instruction_pix2pix.py",
    "stable_diffusion_2/test_stable_diffusion_upscale.py",
    "stable_diffusion_2/test_stable_diffusion_latent_upscale.py",
    "stable_diffusion_2/test_stable_diffusion_depth.py",
    "anyflow/test_anyflow_far.py",
    "animatediff/test_animatediff_sdxl.py",
    "controlnet_flux/test_controlnet_flux.py",
    "wan/test_wan_animate.py",
    "lumina2/test_pipeline_lumina2.py",
    "pixart_alpha/test_pixart.py",
)

# diffusers' pipeline test files vendored fourth (SOURCE.md): heavy, run both ways before each stop as the second's are.
FOURTH_BATCH = (
    "controlnet/test_controlnet.py",
    "controlnet/test_controlnet_inpaint.py",
    "controlnet/test_controlnet_sdxl.py",
    "controlnet/test_controlnet_sdxl_img2img.py",
    "controlnet/test_controlnet_inpaint_sdxl.py",
    "controlnet_flux/test_controlnet_flux_img2img.py",
    "controlnet_flux/test_controlnet_flux_inpaint.py",
    "controlnet_sd3/test_controlnet_inpaint_sd3.py",
    "flux/test_pipeline_flux_control_img2img.py",
    "flux/test_pipeline_flux_control_inpaint.py",
    "flux/test_pipeline_flux_kontext_inpaint.py",
    "chroma/test_pipeline_chroma_img2img.py",
    "pag/test_pag_sd_img2img.py",
    "pag/test_pag_sd_inpaint.py",
    "pag/test_pag_sdxl_img2img.py",
    "pag/test_pag_sdxl_inpaint.py",
    "pag/test_pag_sd3.py",
    "pag/test_pag_sd3_img2img.py",
    "pag/test_pag_controlnet_sd.py",
    "pag/test_pag_pixart_sigma.py",
    "latent_consistency_models/test_latent_consistency_models_img2img.py",
    "stable_diffusion_2/test_stable_diffusion.py",
    "stable_diffusion_2/test_stable_diffusion_inpaint.py",
    "skyreels_v2/test_skyreels_v2_image_to_video.py",
    "z_image/test_z_image_img2img.py",
    "qwenimage/test_qwenimage_controlnet.py",
    "aura_flow/test_pipeline_aura_flow.py",
    "hunyuandit/test_hunyuan_dit.py",
    "pag/test_pag_hunyuan_dit.py",
    "controlnet_hunyuandit/test_controlnet_hunyuandit.py",
)

# diffusers' pipeline test files vendored fifth (SOURCE.md): heavy, run both ways before each stop as the second's are.
FIFTH_BATCH = (
    "animatediff/test_animatediff.py",
    "animatediff/test_animatediff_controlnet.py",
    "animatediff/test_animatediff_sparsectrl.py",
    "animatediff/test_animatediff_video2video.py",
    "animatediff/test_animatediff_video2video_controlnet.py",
    "stable_diffusion_adapter/test_stable_diffusion_adapter.py",
    "stable_diffusion_xl/test_stable_diffusion_xl_adapter.py",
    "pag/test_pag_controlnet_sd_inpaint.py",
    "pag/test_pag_controlnet_sdxl.py",
    "pag/test_pag_controlnet_sdxl_img2img.py",
    "pag/test_pag_animatediff.py",
    "pag/test_pag_sana.py",
    "sana/test_sana_controlnet.py",
    "skyreels_v2/test_skyreels_v2_df_image_to_video.py",
    "skyreels_v2/test_skyreels_v2_df_video_to_video.py",
    "wan/test_wan_22_image_to_video.py",
    "z_image/test_z_image_inpaint.py",
    "stable_diffusion_2/test_stable_diffusion_v_pred.py",
    "cogvideo/test_cogvideox_fun_control.py",
    "ltx/test_ltx_latent_upsample.py",
    "flux2/test_pipeline_flux2_klein_kv.py",
    "hunyuan_video/test_hunyuan_skyreels_image2video.py",
)

# diffusers' pipeline test files vendored sixth (SOURCE.md): heavy, run both ways before each stop as the second's are.
# LTX-2's diffusion decode is written as plain test functions: conftest.py's module hook wraps the VAE it builds.
SIXTH_BATCH = (
    "anyflow/test_anyflow.py",
    "bria/test_pipeline_bria.py",
    "bria_fibo/test_pipeline_bria_fibo.py",
    "bria_fibo_edit/test_pipeline_bria_fibo_edit.py",
    "chronoedit/test_chronoedit.py",
    "dit/test_dit.py",
    "helios/test_helios.py",
    "krea2/test_krea2.py",
    "ovis_image/test_ovis_image.py",
    "latent_diffusion/test_latent_diffusion.py",
    "latte/test_latte.py",
    "lumina/test_lumina_nextdit.py",
    "marigold/test_marigold_depth.py",
    "marigold/test_marigold_intrinsics.py",
    "marigold/test_marigold_normals.py",
    "motif_video/test_motif_video.py",
    "motif_video/test_motif_video_image2video.py",
    "prx/test_pipeline_prx.py",
    "stable_unclip/test_stable_unclip.py",
    "stable_unclip/test_stable_unclip_img2img.py",
    "stable_diffusion_image_variation/test_stable_diffusion_image_variation.py",
    "visualcloze/test_pipeline_visualcloze_combined.py",
    "visualcloze/test_pipeline_visualcloze_generation.py",
    "ltx2/test_ltx2_diffusion_decode.py",
    # with the Llama, SigLIP, GLM-4 tokenizer and ChatGLM3 stand-ins (hub_standins.py)
    "hidream_image/test_pipeline_hidream.py",
    "hunyuan_video/test_hunyuan_video_framepack.py",
    "cogview4/test_cogview4.py",
    "kolors/test_kolors.py",
    "kolors/test_kolors_img2img.py",
    "pag/test_pag_kolors.py",
    # with the RoBERTa, CLAP feature extractor and T5Model tokenizer stand-ins
    "audioldm2/test_audioldm2.py",
    # their pipelines import torchvision: run in the second environment of SOURCE.md (file_sets.SECOND_ENVIRONMENT)
    "cosmos/test_cosmos.py",
    "cosmos/test_cosmos_video2world.py",
    "cosmos/test_cosmos2_text2image.py",
    "cosmos/test_cosmos2_video2world.py",
    "consisid/test_consisid.py",  # and OpenCV
)

# diffusers' pipeline test files vendored seventh (SOURCE.md): they load the Qwen2-VL stand-in's processor
# (hub_standins.py), whose video processor needs torchvision, so all run in the second environment
# (file_sets.SECOND_ENVIRONMENT). Made possible by giving the stand-in tokenizer Qwen's real special-token ids.
SEVENTH_BATCH = (
    "cosmos/test_cosmos2_5_predict.py",
    "cosmos/test_cosmos2_5_transfer.py",
    "qwenimage/test_qwenimage_edit.py",
    "kandinsky5/test_kandinsky5.py",
    "kandinsky5/test_kandinsky5_i2i.py",
    "kandinsky5/test_kandinsky5_i2v.py",
    "kandinsky5/test_kandinsky5_t2i.py",
    "nucleusmoe_image/test_nucleusmoe_image.py",
    "dreamlite/test_pipeline_dreamlite.py",
    "dreamlite/test_pipeline_dreamlite_mobile.py",
    # with the Qwen3-VL stand-in (qwen_standins.py)
    "joyimage/test_joyimage_edit.py",
    "joyimage/test_joyimage_edit_plus.py",
    # with the Llama tokenizer stand-in; its processor's transforms are torchvision's
    "omnigen/test_pipeline_omnigen.py",
)

# diffusers' test files vendored eighth (SOURCE.md): Qwen-Image Edit Plus (the second environment: its pipeline
# encodes each condition image at 1024², about 40 minutes a run on 2 cores), Cosmos 3 (its text tokenizer is the Qwen
# stand-in, qwen_standins.py), GLM-Image (its tests require an accelerator; its pipeline's output is compared
# here), and diffusers' general pipeline tests (DiffusionPipeline's loading, saving, components and progress bars, on
# SD pipelines whose VAE the harness wraps: `dummy_vae`, `get_dummy_components_*`).
EIGHTH_BATCH = (
    "qwenimage/test_qwenimage_edit_plus.py",
    "cosmos/test_cosmos3.py",
    "glm_image/test_glm_image.py",  # with the zai-org/GLM-Image processor stand-in (hub_standins.py)
    "test_pipelines.py",
    "test_pipeline_utils.py",
)

# diffusers' test files vendored ninth (SOURCE.md): Stable Audio's, Stable Audio 3's and LongCat audio's pipelines,
# whose VAEs (AutoencoderOobleck, AutoencoderSAME, LongCatAudioDiTVae) are served since this batch; Stable Audio's T5
# from the tiny-random-T5ForConditionalGeneration stand-in, Stable Audio 3's tokenizer from a
# tiny-random-Gemma3ForCausalLM one (hub_standins.py).
NINTH_BATCH = (
    "stable_audio/test_stable_audio.py",
    "stable_audio_3/test_stable_audio_3.py",
    "longcat_audio_dit/test_longcat_audio_dit.py",
)

# diffusers' test files vendored tenth (SOURCE.md): Kandinsky 2.2's and Kandinsky 3's pipelines, whose MoVQ is a
# VQModel (served since issue 57; the harness wraps it under its component name, `movq`). Their prior pipelines hold no
# VAE and run both ways as the rest.
TENTH_BATCH = (
    "kandinsky2_2/test_kandinsky.py",
    "kandinsky2_2/test_kandinsky_combined.py",
    "kandinsky2_2/test_kandinsky_controlnet.py",
    "kandinsky2_2/test_kandinsky_controlnet_img2img.py",
    "kandinsky2_2/test_kandinsky_img2img.py",
    "kandinsky2_2/test_kandinsky_inpaint.py",
    "kandinsky2_2/test_kandinsky_prior.py",
    "kandinsky2_2/test_kandinsky_prior_emb2emb.py",
    "kandinsky3/test_kandinsky3.py",
    "kandinsky3/test_kandinsky3_img2img.py",
)

# diffusers' test files vendored eleventh (SOURCE.md): Kandinsky 2.1's pipelines (their MoVQ as `movq`), with an
# XLM-RoBERTa tokenizer stand-in for YiYiXu/tiny-random-mclip-base (hub_standins.py).
ELEVENTH_BATCH = (
    "kandinsky/test_kandinsky.py",
    "kandinsky/test_kandinsky_combined.py",
    "kandinsky/test_kandinsky_img2img.py",
    "kandinsky/test_kandinsky_inpaint.py",
    "kandinsky/test_kandinsky_prior.py",
)
