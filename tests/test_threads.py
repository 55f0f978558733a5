"""One TorchaxVAE shared by 4 threads (torchax_vae/engine/programs.py, progress.py, torchax_vae/patches/ltx_noise.py): mixed shapes,
directions and seeds at once, each call's result as it is alone.

The threads start on a new wrapper, so they trace and compile their shapes concurrently while other threads'
calls run. The serial results come from a second wrapper of the same model, one call at a time. LTX-Video 0.9.1
draws its injected noise from each call's own generator. Every family in the slow set; LTX-Video in the default suite.
"""

import concurrent.futures
import threading

import pytest
import torch
from helpers import MODELS, randn, random_vae, with_noise
from vaes import decode_args

from torchax_vae import TorchaxVAE, progress
from torchax_vae.models import input_shape

# config -> (frames, height, width) of the first shape; the second halves the width (Allegro: one tile shape)
SIZES = {
    "tiny": (9, 32, 64), "wan-tiny": (9, 32, 64), "qwenimage-tiny": (1, 32, 64), "hunyuan-tiny": (9, 32, 64),
    "hunyuan15-tiny": (9, 32, 64), "ltx091-tiny": (9, 32, 64), "allegro-tiny": (24, 128, 128),
    "mochi-tiny": (7, 32, 64), "cosmos-tiny": (9, 32, 64), "magvit-tiny": (9, 32, 64),
    **({"ltx2ts-tiny": (9, 32, 64)} if "ltx2ts-tiny" in MODELS else {}),
    **({"qwenimage21-tiny": (1, 32, 64)} if "qwenimage21-tiny" in MODELS else {}),
    "sd-tiny": (1, 32, 64),  # AutoencoderKL: images
    "dc-small": (1, 32, 64), "hunyuanimage-tiny": (1, 32, 64), "tiny-tiny": (1, 32, 64), "svd-tiny": (1, 32, 64),
    "flux2-tiny": (1, 32, 64),
}
DEFAULT = ("ltx091-tiny",)  # the injected noise from each call's generator; the rest in the slow set


def jobs(vae):
    """(kind, input, seed) for 2 decode shapes and one encode shape, 2 seeds each."""
    frames, height, width = SIZES[vae.name]
    sizes = [(frames, height, width)] if vae.name == "allegro-tiny" else [(frames, height, width), (frames, height, width // 2)]
    out = []
    for seed in (1, 2):
        for size in sizes:
            out.append(("decode", randn(*input_shape(vae, "decode", *size), seed=seed), seed))
        out.append(("encode", randn(*input_shape(vae, "encode", *sizes[-1]), seed=seed), seed))
    return out


def call(ours, vae, kind, x, seed):
    """One call, its noise (LTX) from its own generator; also counts its progress reports in this thread."""
    batches = []
    with progress.reporting(batches.append):
        if kind == "encode":
            out = ours._posterior(x).mode()  # (AutoencoderDC's and AutoencoderTiny's latents have no posterior)
        elif ours.batch_is_frames:  # Stable Video Diffusion: decode(z, num_frames)
            out = ours.decode(x, x.shape[0]).sample
        elif getattr(vae.config, "decoder_inject_noise", False) or getattr(vae.config, "timestep_conditioning", False):
            out = ours.decode(x, *decode_args(vae, x.shape[0]), generator=torch.Generator().manual_seed(seed)).sample
        else:
            out = ours.decode(x).sample
    return out, len(batches), threading.get_ident()


def check_family(name):
    vae = random_vae(name)
    if name.startswith("ltx"):
        with_noise(vae)  # the injected noise shows (its scales are zero in fresh weights)
    vae.name = name
    work = jobs(vae)
    shared = TorchaxVAE(vae)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda job: call(shared, vae, *job), work))
    assert len({thread for _, _, thread in results}) > 1, "the calls did not run in several threads"
    alone = TorchaxVAE(vae)
    for (kind, x, seed), (actual, reports, _) in zip(work, results):
        expected, serial_reports, _ = call(alone, vae, kind, x, seed)
        worst = (actual - expected).abs().max().item()
        assert worst == 0, f"{name} {kind} {tuple(x.shape)} seed {seed}: 4 threads vs alone, max |Δ| {worst:.3g}"
        assert reports == serial_reports > 0, f"{name} {kind}: progress reports {reports} vs {serial_reports} alone"


@pytest.mark.slow  # 14 s (CI: every sixth run)
@pytest.mark.parametrize("name", DEFAULT)
def test_four_threads_match_serial_calls(name):
    check_family(name)


# 25-70 s each on 2 cores (AMD): by hand (-m heavy); the wrapper's threading is one code path for every family,
# and the default suite's families and the cheaper ones here run it in CI
LONG_THREADS = ("allegro-tiny", "wan-tiny", "tiny", "hunyuan-tiny", "magvit-tiny", "hunyuan15-tiny", "ltx2ts-tiny",
                "mochi-tiny", "cosmos-tiny", "qwenimage-tiny")


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.heavy) if n in LONG_THREADS else n
                                  for n in SIZES if n not in DEFAULT])
def test_four_threads_match_serial_calls_every_family(name):
    check_family(name)
