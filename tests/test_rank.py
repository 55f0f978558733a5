"""The engine's boundary at any rank (torchax_vae/engine/validation.py, sources.py, torchax_vae/patches/sharding_marks.py): what a
family of 4-D images [B, C, H, W] needs from it, with no engine change (the image VAEs of the next families)."""

import jax
import numpy as np
import pytest
import torch

from torchax_vae import make_mesh
from torchax_vae.placement.mesh import Placement
from torchax_vae.engine.sources import DeviceSource, HostSource, ShapeSource
from torchax_vae.engine.validation import check_shape, check_video


def test_validation_names_the_rank_and_layout_it_expects():
    check_video(torch.zeros(1, 4, 8, 8), name="decode input", channels=4, role="decoder", rank=4)
    with pytest.raises(ValueError, match=r"must be 4-D \[batch, channels, height, width\], got 5-D"):
        check_video(torch.zeros(1, 4, 1, 8, 8), name="decode input", channels=4, role="decoder", rank=4)
    with pytest.raises(ValueError, match=r"must be 5-D \[batch, channels, frames, height, width\], got 4-D"):
        check_video(torch.zeros(1, 4, 8, 8), name="decode input", channels=4, role="decoder")
    with pytest.raises(ValueError, match="has 3 channels"):
        check_shape((2, 3, 8, 8), name="encode shape", channels=4, role="encoder", rank=4)


@pytest.mark.parametrize("shape, frames", [((2, 3, 10, 12), None), ((2, 3, 5, 10, 12), (1, 4))])
def test_sources_take_blocks_of_either_rank(shape, frames):
    x = torch.arange(np.prod(shape), dtype=torch.float32).reshape(shape)
    placement = Placement(None)
    rows, cols = (4, 8), (6, 8)  # the bottom-right tile runs past the edge: zero-padded to its full size
    index = (slice(None), slice(None)) + ((slice(*frames),) if frames else ()) + (slice(4, 12), slice(6, 14))
    expected = torch.nn.functional.pad(x[index], (0, 8 - x[index].shape[-1], 0, 8 - x[index].shape[-2]))
    dtype = jax.numpy.float32
    host = HostSource(x, dtype, placement).take(frames, rows, cols)
    device = DeviceSource(jax.numpy.asarray(x.numpy()), dtype, placement)
    device.pad_to(16, 16)
    on_device = device.take(frames, rows, cols)
    for got in (host, on_device):
        assert torch.equal(torch.from_numpy(np.array(got)), expected)
    assert ShapeSource(shape, dtype, placement).take(frames, rows, cols).shape == tuple(expected.shape)
    if frames is None:
        with pytest.raises(ValueError, match="has no frames"):
            HostSource(x, dtype, placement).take((0, 1))


def test_sharding_marks_follow_the_traces_rank():
    from torchax_vae.patches import options, sharding_marks

    mesh = make_mesh(jax.devices()[:1])
    images, video = jax.numpy.zeros((2, 4, 8, 8)), jax.numpy.zeros((2, 4, 3, 8, 8))

    def marked(x, rank):
        with options.tracing(options.TraceOptions(mesh=mesh, rank=rank)):
            return jax.jit(lambda a: sharding_marks.constrain(a)).trace(x).jaxpr

    assert "sharding_constraint" in str(marked(images, 4)) and "sharding_constraint" not in str(marked(images, 5))
    assert "sharding_constraint" in str(marked(video, 5)) and "sharding_constraint" not in str(marked(video, 4))
