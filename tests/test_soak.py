"""Many calls in one process: memory stays flat after the warm-up, outputs stay equal to PyTorch."""

import gc

import pytest
import torch

from helpers import TOLERANCE, assert_close, random_vae
from torchax_vae import TorchaxVAE
from torchax_vae.engine.memory import proc_bytes


def rss_bytes() -> int:
    rss = proc_bytes("/proc/self/status", "VmRSS")
    assert rss is not None, "no VmRSS in /proc/self/status"
    return rss


@pytest.mark.slow  # 50-70 s on 2 cores: many calls by design
@pytest.mark.heavy  # a soak, run by hand (out of CI's time)
@pytest.mark.parametrize("name", ["tiny", "wan-tiny"])
def test_mixed_shapes_many_calls_flat_memory(name):
    vae = random_vae(name)
    ours = TorchaxVAE(vae)
    channels = ours.video_channels
    gen = torch.Generator().manual_seed(0)
    videos = [torch.randn(1, channels, f, h, w, generator=gen) for f, h, w in ((5, 32, 32), (9, 32, 48), (1, 48, 32))]
    latents = [torch.randn(ours.latent_shape(v.shape), generator=gen) for v in videos]

    def one_round(check: bool):
        for x, z in zip(videos, latents):
            mean, decoded = ours.encode(x).latent_dist.mean, ours.decode(z).sample
            if check:
                with torch.no_grad():
                    assert_close(mean, vae.encode(x).latent_dist.mean, TOLERANCE[torch.float32], f"{name} encode")
                    assert_close(decoded, vae.decode(z).sample, TOLERANCE[torch.float32], f"{name} decode")

    for _ in range(2):  # warm-up: every program compiled, allocator pools filled
        one_round(check=True)
    programs = len(ours.compile_stats())
    gc.collect()
    before = rss_bytes()
    for i in range(8):
        one_round(check=(i % 4 == 3))
    gc.collect()
    grown = rss_bytes() - before
    assert len(ours.compile_stats()) == programs, "a repeated shape compiled again"
    assert grown < 64 * 2**20, f"RSS grew {grown / 2**20:.1f} MiB over 24 calls after the warm-up"
