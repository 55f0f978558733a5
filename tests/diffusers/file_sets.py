"""Which of diffusers' vendored test files run where.

- `PIPELINE_FILES_IN_CI`: the pipeline test files CI's slow set runs; every other vendored pipeline test file (the
  batches in batches.py, SOURCE.md) is `heavy`, run both ways by hand before each stop.
- `FILES_HEAVY`: the model and remote-VAE test files that are `heavy` too.
- `SECOND_ENVIRONMENT`: the pipeline test files that need modules this environment lacks; `imports` says whether
  they are here.
"""

import functools

# diffusers' model and remote-VAE test files CI's slow set leaves to the table's runs by hand (`heavy`;
# scripts/diffusers_both_ways.py), out of CI's time (minutes wrapped on 2 cores, 2026-11-30): VidTok's (its 128-wide
# five-level model on 4 videos of 16 x 32 x 32, 11 minutes wrapped and 6 plain); CogVideoX's (1.9), LTX's (1.0),
# KVAE video's (0.9), HunyuanVideo's (0.8), MiniMax H3 audio's (0.8) and KVAE's (0.7), whose families' own tests are
# the most; the remote decode tests (3.6: AutoencoderKL's and HunyuanVideo's endpoints of the service, which
# tests/test_serve*.py call through diffusers' `remote_decode` too)
FILES_HEAVY = ("test_models_autoencoder_vidtok.py", "test_models_autoencoder_kl_cogvideox.py",
               "test_models_autoencoder_ltx_video.py", "test_models_autoencoder_kl_kvae_video.py",
               "test_models_autoencoder_hunyuan_video.py", "test_models_autoencoder_kl_minimax_h3_audio.py",
               "test_models_autoencoder_kl_kvae.py", "test_remote_decode.py")

# diffusers' pipeline test files run by CI's slow set (AutoencoderKL's and the temporal decoder's, new in issue 39;
# Allegro's and SanaVideo's, which once failed wrapped): the first 22 files take about 20 minutes wrapped and 15 on
# plain diffusers on 2 cores, more than CI's time allows, so the others are `heavy`, run by hand before each stop with
# the plain run (SOURCE.md). test_pipeline_outputs.py compares the first 22 files' pipeline outputs in CI.
PIPELINE_FILES_IN_CI = ("stable_diffusion/test_stable_diffusion.py", "stable_video_diffusion/test_stable_video_diffusion.py",
                        "allegro/test_allegro.py", "sana_video/test_sana_video.py",
                        # diffusers' general tests: DiffusionPipeline's components, saving and loading around a wrapped
                        # VAE (about 1.5 minutes on 2 cores)
                        "test_pipelines.py", "test_pipeline_utils.py")

# diffusers' pipeline test files whose pipelines import what this project's environment lacks: torchvision (Cosmos' and
# Cosmos 2's transforms; PyPI's torchvision does not import beside this project's CPU torch 2.13 build) and OpenCV
# (ConsisID's). They run by hand in a second environment (SOURCE.md: torch 2.14.1 and torchvision 0.29.1 from this
# machine's disk, torchax's 0.0.14 nightly, opencv-python-headless) and are skipped where those do not import.
TORCHVISION = ("torchvision.transforms.functional",)
SECOND_ENVIRONMENT = {  # file under tests/pipelines -> the modules its pipeline imports
    "cosmos/test_cosmos.py": TORCHVISION,
    "cosmos/test_cosmos_video2world.py": TORCHVISION,
    "cosmos/test_cosmos2_text2image.py": TORCHVISION,
    "cosmos/test_cosmos2_video2world.py": TORCHVISION,
    "cosmos/test_cosmos2_5_predict.py": TORCHVISION,
    "cosmos/test_cosmos2_5_transfer.py": TORCHVISION,
    "consisid/test_consisid.py": TORCHVISION + ("cv2",),
    "omnigen/test_pipeline_omnigen.py": TORCHVISION,  # its processor's transforms
}
# These load transformers' Qwen2-VL or Qwen3-VL processors (qwen_standins.py writes them where torchvision imports),
# whose video processors need torchvision.
SECOND_ENVIRONMENT.update(dict.fromkeys((
    "qwenimage/test_qwenimage_edit.py", "qwenimage/test_qwenimage_edit_plus.py", "kandinsky5/test_kandinsky5.py",
    "kandinsky5/test_kandinsky5_i2i.py", "kandinsky5/test_kandinsky5_i2v.py", "kandinsky5/test_kandinsky5_t2i.py",
    "nucleusmoe_image/test_nucleusmoe_image.py", "dreamlite/test_pipeline_dreamlite.py",
    "dreamlite/test_pipeline_dreamlite_mobile.py", "joyimage/test_joyimage_edit.py", "joyimage/test_joyimage_edit_plus.py"),
    TORCHVISION))


@functools.cache
def imports(*modules: str) -> bool:
    import importlib

    try:
        for module in modules:
            importlib.import_module(module)
    except ImportError:  # absent
        return False
    except RuntimeError as e:  # PyPI's torchvision beside a torch it was not built for: "operator torchvision::nms
        if "torchvision::" not in str(e):  # does not exist"; any other failure is loud
            raise
        return False
    return True
