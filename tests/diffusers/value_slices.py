"""diffusers' pipeline fast tests that compare a hard-coded value slice of the output.

The slices were made with the hub's real tiny tokenizers and text encoder configs. With the offline stand-ins
(hub_standins.py) these tests fail on plain diffusers too, so expectations.py lists them as failing in both runs
(`STANDIN_SLICES`), and test_pipeline_outputs.py compares those pipelines' outputs with plain diffusers' instead.
"""

SLICE_TESTS = {  # file under tests/pipelines, test class -> its tests that compare such slices
    ("cogvideo/test_cogvideox.py", "TestCogVideoXPipeline"): ("test_inference",),
    ("hunyuan_image_21/test_hunyuanimage.py", "HunyuanImagePipelineFastTests"): ("test_inference_guider",),
    ("hunyuan_video/test_hunyuan_video.py", "HunyuanVideoPipelineFastTests"): ("test_inference",),
    ("hunyuan_video1_5/test_hunyuan_1_5.py", "HunyuanVideo15PipelineFastTests"): ("test_inference",),
    ("stable_diffusion/test_stable_diffusion.py", "TestStableDiffusionPipeline"): (
        "test_stable_diffusion_ddim",
        "test_stable_diffusion_ddim_factor_8", "test_stable_diffusion_k_euler", "test_stable_diffusion_k_euler_ancestral",
        "test_stable_diffusion_k_lms", "test_stable_diffusion_negative_prompt", "test_stable_diffusion_pndm"),
    ("stable_diffusion/test_stable_diffusion_img2img.py", "TestStableDiffusionImg2ImgPipeline"): (
        "test_stable_diffusion_img2img_default_case", "test_stable_diffusion_img2img_default_case_lcm",
        "test_stable_diffusion_img2img_default_case_lcm_custom_timesteps", "test_stable_diffusion_img2img_k_lms",
        "test_stable_diffusion_img2img_multiple_init_images", "test_stable_diffusion_img2img_negative_prompt",
        "test_stable_diffusion_img2img_tiny_autoencoder"),
    ("stable_diffusion_3/test_pipeline_stable_diffusion_3.py", "StableDiffusion3PipelineFastTests"): ("test_inference",),
    # test_ip_adapter compares its output without an adapter with a hard-coded slice
    ("stable_diffusion_xl/test_stable_diffusion_xl.py", "StableDiffusionXLPipelineFastTests"): (
        "test_ip_adapter", "test_stable_diffusion_xl_euler"),
    # the second batch (SECOND_BATCH in batches.py)
    ("stable_diffusion/test_stable_diffusion_inpaint.py", "TestStableDiffusionInpaintPipeline"): (
        "test_stable_diffusion_inpaint",),
    ("stable_diffusion/test_stable_diffusion_inpaint.py", "TestStableDiffusionSimpleInpaintPipeline"): (
        "test_stable_diffusion_inpaint", "test_stable_diffusion_inpaint_euler"),
    ("stable_diffusion/test_stable_diffusion_instruction_pix2pix.py", "TestStableDiffusionInstructPix2PixPipeline"): (
        "test_stable_diffusion_pix2pix_default_case", "test_stable_diffusion_pix2pix_euler",
        "test_stable_diffusion_pix2pix_multiple_init_images", "test_stable_diffusion_pix2pix_negative_prompt"),
    ("stable_diffusion_xl/test_stable_diffusion_xl_img2img.py", "StableDiffusionXLImg2ImgPipelineFastTests"): (
        "test_ip_adapter",),
    ("stable_diffusion_xl/test_stable_diffusion_xl_img2img.py", "StableDiffusionXLImg2ImgRefinerOnlyPipelineFastTests"): (
        "test_stable_diffusion_xl_img2img_euler",),
    ("stable_diffusion_xl/test_stable_diffusion_xl_inpaint.py", "StableDiffusionXLInpaintPipelineFastTests"): (
        "test_ip_adapter", "test_stable_diffusion_xl_inpaint_euler", "test_stable_diffusion_xl_refiner"),
    ("stable_diffusion_3/test_pipeline_stable_diffusion_3_img2img.py", "StableDiffusion3Img2ImgPipelineFastTests"): (
        "test_inference",),
    ("stable_diffusion_3/test_pipeline_stable_diffusion_3_inpaint.py", "StableDiffusion3InpaintPipelineFastTests"): (
        "test_inference",),
    ("controlnet/test_controlnet_img2img.py", "ControlNetImg2ImgPipelineFastTests"): ("test_ip_adapter",),
    ("controlnet/test_controlnet_img2img.py", "StableDiffusionMultiControlNetPipelineFastTests"): ("test_ip_adapter",),
    ("controlnet_sd3/test_controlnet_sd3.py", "StableDiffusion3ControlNetPipelineFastTests"): (
        "test_controlnet_sd3", "test_controlnet_sd35"),
    ("pag/test_pag_sd.py", "StableDiffusionPAGPipelineFastTests"): ("test_pag_inference",),
    ("pag/test_pag_sdxl.py", "StableDiffusionXLPAGPipelineFastTests"): ("test_pag_inference",),
    ("latent_consistency_models/test_latent_consistency_models.py", "LatentConsistencyModelPipelineFastTests"): (
        "test_ip_adapter", "test_lcm_custom_timesteps", "test_lcm_multistep", "test_lcm_onestep"),
    ("hunyuan_video/test_hunyuan_image2video.py", "HunyuanVideoImageToVideoPipelineFastTests"): ("test_inference",),
    ("flux2/test_pipeline_flux2_klein.py", "TestFlux2KleinPipeline"): ("test_image_input",),
    ("ltx2/test_ltx2.py", "LTX2PipelineFastTests"): ("test_inference", "test_two_stages_inference"),
    ("ltx2/test_ltx2_image2video.py", "LTX2ImageToVideoPipelineFastTests"): (
        "test_inference", "test_two_stages_inference", "test_two_stages_inference_with_upsampler"),
    # the third batch (THIRD_BATCH in batches.py)
    ("controlnet_flux/test_controlnet_flux.py", "FluxControlNetPipelineFastTests"): ("test_controlnet_flux",),
    ("stable_diffusion_2/test_stable_diffusion_latent_upscale.py", "StableDiffusionLatentUpscalePipelineFastTests"): (
        "test_inference", "test_stable_diffusion_latent_upscaler_multiple_init_images",
        "test_stable_diffusion_latent_upscaler_negative_prompt"),
    ("stable_diffusion_2/test_stable_diffusion_upscale.py", "StableDiffusionUpscalePipelineFastTests"): (
        "test_stable_diffusion_upscale", "test_stable_diffusion_upscale_prompt_embeds"),
    ("stable_diffusion_2/test_stable_diffusion_depth.py", "StableDiffusionDepth2ImgPipelineFastTests"): (
        "test_stable_diffusion_depth2img_default_case", "test_stable_diffusion_depth2img_multiple_init_images",
        "test_stable_diffusion_depth2img_negative_prompt", "test_stable_diffusion_depth2img_pil"),
    # the fourth batch (FOURTH_BATCH in batches.py)
    ("controlnet/test_controlnet.py", "ControlNetPipelineFastTests"): ("test_ip_adapter",),
    ("controlnet/test_controlnet.py", "StableDiffusionMultiControlNetOneModelPipelineFastTests"): ("test_ip_adapter",),
    ("controlnet/test_controlnet.py", "StableDiffusionMultiControlNetPipelineFastTests"): ("test_ip_adapter",),
    ("controlnet/test_controlnet_inpaint_sdxl.py", "ControlNetPipelineSDXLFastTests"): ("test_controlnet_sdxl_guess",),
    ("controlnet/test_controlnet_sdxl.py", "StableDiffusionSSD1BControlNetPipelineFastTests"): (
        "test_controlnet_sdxl_guess", "test_ip_adapter"),
    ("controlnet/test_controlnet_sdxl.py", "StableDiffusionXLControlNetPipelineFastTests"): (
        "test_controlnet_sdxl_guess", "test_ip_adapter"),
    ("controlnet/test_controlnet_sdxl_img2img.py", "ControlNetPipelineSDXLImg2ImgFastTests"): ("test_ip_adapter",),
    ("controlnet_sd3/test_controlnet_inpaint_sd3.py", "StableDiffusion3ControlInpaintNetPipelineFastTests"): (
        "test_controlnet_inpaint_sd3",),
    ("latent_consistency_models/test_latent_consistency_models_img2img.py", "LatentConsistencyModelImg2ImgPipelineFastTests"): (
        "test_ip_adapter", "test_lcm_custom_timesteps", "test_lcm_multistep", "test_lcm_onestep"),
    ("pag/test_pag_controlnet_sd.py", "StableDiffusionControlNetPAGPipelineFastTests"): (
        "test_pag_cfg", "test_pag_uncond"),
    ("pag/test_pag_sd3_img2img.py", "StableDiffusion3PAGImg2ImgPipelineFastTests"): ("test_pag_inference",),
    ("pag/test_pag_sd_img2img.py", "StableDiffusionPAGImg2ImgPipelineFastTests"): ("test_pag_inference",),
    ("pag/test_pag_sd_inpaint.py", "StableDiffusionPAGInpaintPipelineFastTests"): ("test_pag_inference",),
    ("pag/test_pag_sdxl_img2img.py", "StableDiffusionXLPAGImg2ImgPipelineFastTests"): ("test_pag_inference",),
    ("pag/test_pag_sdxl_inpaint.py", "StableDiffusionXLPAGInpaintPipelineFastTests"): ("test_pag_inference",),
    ("stable_diffusion_2/test_stable_diffusion.py", "StableDiffusion2PipelineFastTests"): (
        "test_stable_diffusion_ddim", "test_stable_diffusion_k_euler",
        "test_stable_diffusion_k_euler_ancestral", "test_stable_diffusion_k_lms", "test_stable_diffusion_pndm",
        "test_stable_diffusion_unflawed"),
    ("stable_diffusion_2/test_stable_diffusion_inpaint.py", "StableDiffusion2InpaintPipelineFastTests"): (
        "test_stable_diffusion_inpaint",),
    # with the Bert stand-in (hub_standins.py)
    ("hunyuandit/test_hunyuan_dit.py", "HunyuanDiTPipelineFastTests"): ("test_inference",),
    ("pag/test_pag_hunyuan_dit.py", "HunyuanDiTPAGPipelineFastTests"): ("test_inference",),
    ("controlnet_hunyuandit/test_controlnet_hunyuandit.py", "HunyuanDiTControlNetPipelineFastTests"): (
        "test_controlnet_hunyuandit",),
    # the fifth batch (FIFTH_BATCH in batches.py)
    ("animatediff/test_animatediff.py", "AnimateDiffPipelineFastTests"): (
        "test_dict_tuple_outputs_equivalent", "test_ip_adapter"),
    ("animatediff/test_animatediff_controlnet.py", "AnimateDiffControlNetPipelineFastTests"): (
        "test_dict_tuple_outputs_equivalent", "test_ip_adapter"),
    ("animatediff/test_animatediff_sparsectrl.py", "AnimateDiffSparseControlNetPipelineFastTests"): (
        "test_dict_tuple_outputs_equivalent", "test_ip_adapter"),
    ("animatediff/test_animatediff_video2video.py", "AnimateDiffVideoToVideoPipelineFastTests"): ("test_ip_adapter",),
    ("animatediff/test_animatediff_video2video_controlnet.py", "AnimateDiffVideoToVideoControlNetPipelineFastTests"): (
        "test_ip_adapter",),
    ("pag/test_pag_animatediff.py", "AnimateDiffPAGPipelineFastTests"): (
        "test_dict_tuple_outputs_equivalent", "test_ip_adapter"),
    ("stable_diffusion_adapter/test_stable_diffusion_adapter.py", "StableDiffusionFullAdapterPipelineFastTests"): (
        "test_stable_diffusion_adapter_default_case",),
    ("stable_diffusion_adapter/test_stable_diffusion_adapter.py", "StableDiffusionLightAdapterPipelineFastTests"): (
        "test_stable_diffusion_adapter_default_case",),
    ("stable_diffusion_adapter/test_stable_diffusion_adapter.py", "StableDiffusionMultiAdapterPipelineFastTests"): (
        "test_stable_diffusion_adapter_default_case",),
    ("stable_diffusion_xl/test_stable_diffusion_xl_adapter.py", "StableDiffusionXLAdapterPipelineFastTests"): (
        "test_ip_adapter", "test_stable_diffusion_adapter_default_case"),
    ("stable_diffusion_xl/test_stable_diffusion_xl_adapter.py", "StableDiffusionXLMultiAdapterPipelineFastTests"): (
        "test_ip_adapter", "test_stable_diffusion_adapter_default_case"),
    ("pag/test_pag_controlnet_sd_inpaint.py", "StableDiffusionControlNetPAGInpaintPipelineFastTests"): (
        "test_pag_cfg", "test_pag_uncond"),
    ("pag/test_pag_controlnet_sdxl.py", "StableDiffusionXLControlNetPAGPipelineFastTests"): (
        "test_pag_cfg", "test_pag_uncond"),
    ("pag/test_pag_controlnet_sdxl_img2img.py", "StableDiffusionXLControlNetPAGImg2ImgPipelineFastTests"): (
        "test_pag_cfg", "test_pag_uncond"),
    ("stable_diffusion_2/test_stable_diffusion_v_pred.py", "StableDiffusion2VPredictionPipelineFastTests"): (
        "test_stable_diffusion_v_pred_ddim", "test_stable_diffusion_v_pred_k_euler"),
    ("cogvideo/test_cogvideox_fun_control.py", "TestCogVideoXFunControlPipeline"): ("test_inference",),
    ("hunyuan_video/test_hunyuan_skyreels_image2video.py", "HunyuanSkyreelsImageToVideoPipelineFastTests"): (
        "test_inference",),
    # the sixth batch (SIXTH_BATCH in batches.py; Marigold's encode the empty prompt with the stand-in CLIP tokenizer)
    ("latent_diffusion/test_latent_diffusion.py", "LDMTextToImagePipelineFastTests"): ("test_inference_text2img",),
    ("marigold/test_marigold_depth.py", "MarigoldDepthPipelineFastTests"): tuple(
        f"test_marigold_depth_dummy_{case}" for case in ("G0_S1_P16_E1_B1_M0", "G0_S1_P16_E1_B1_M1", "G0_S1_P32_E1_B1_M1",
                                                          "G0_S1_P64_E1_B1_M1", "G0_S2_P32_E1_B1_M1",
                                                          "G2024_S1_P32_E1_B1_M1", "defaults")),
    ("marigold/test_marigold_intrinsics.py", "MarigoldIntrinsicsPipelineFastTests"): (
        "test_marigold_depth_dummy_G0_S1_P16_E1_B1_M0", "test_marigold_depth_dummy_G0_S2_P32_E1_B1_M1"),
    ("marigold/test_marigold_normals.py", "MarigoldNormalsPipelineFastTests"): tuple(
        f"test_marigold_depth_dummy_{case}" for case in ("G0_S1_P16_E1_B1_M0", "G0_S1_P16_E1_B1_M1", "G0_S1_P32_E1_B1_M1",
                                                          "G0_S1_P32_E3_B1_M1", "G0_S1_P32_E4_B2_M1",
                                                          "G0_S1_P64_E1_B1_M1", "G0_S2_P32_E1_B1_M1",
                                                          "G2024_S1_P32_E1_B1_M1", "defaults")),
    ("stable_unclip/test_stable_unclip_img2img.py", "StableUnCLIPImg2ImgPipelineFastTests"): ("test_image_embeds_none",),
    ("hidream_image/test_pipeline_hidream.py", "HiDreamImagePipelineFastTests"): ("test_inference",),
    ("hunyuan_video/test_hunyuan_video_framepack.py", "HunyuanVideoFramepackPipelineFastTests"): ("test_inference",),
    ("kolors/test_kolors.py", "KolorsPipelineFastTests"): ("test_inference",),
    ("kolors/test_kolors_img2img.py", "KolorsPipelineImg2ImgFastTests"): ("test_inference",),
    ("pag/test_pag_kolors.py", "KolorsPAGPipelineFastTests"): ("test_pag_inference",),
    # the tenth batch (TENTH_BATCH in batches.py): the prior's CLIP tokenizer is the stand-in
    ("kandinsky2_2/test_kandinsky_combined.py", "KandinskyV22PipelineCombinedFastTests"): ("test_kandinsky",),
    ("kandinsky2_2/test_kandinsky_combined.py", "KandinskyV22PipelineImg2ImgCombinedFastTests"): ("test_kandinsky",),
    ("kandinsky2_2/test_kandinsky_prior.py", "KandinskyV22PriorPipelineFastTests"): ("test_kandinsky_prior",),
    ("kandinsky2_2/test_kandinsky_prior_emb2emb.py", "KandinskyV22PriorEmb2EmbPipelineFastTests"): (
        "test_kandinsky_prior_emb2emb",),
    # the eleventh batch (ELEVENTH_BATCH): Kandinsky 2.1's prior, the same CLIP tokenizer stand-in
    ("kandinsky/test_kandinsky_prior.py", "KandinskyPriorPipelineFastTests"): ("test_kandinsky_prior",),
}
