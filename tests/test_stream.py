"""decode_stream and decode sessions (torchax_vae/facade/stream.py, session.py): chunks of final frames.

A stream's chunks, joined on the frame axis, are `decode`'s output bit for bit (the same programs), tiled and
untiled, sliced and not; decode itself stays within 1e-4 of diffusers. A session fed the latents in chunks
gives diffusers' whole decode, for any chunking its family allows, and refuses the rest in one line.
Every video family in the slow set; one of each loop kind (feat_cache, frame batches, frame windows) and an image
family in the default suite. The 8-device mesh: tests/_sharded_worker.py's "stream" case.
"""

import inspect
import random
import threading

import numpy as np
import pytest
import torch
from helpers import MODELS, assert_close, assert_parity, randn, random_vae
from vaes import decode_args

from torchax_vae import TorchaxVAE
from torchax_vae.models import input_shape

# config -> (frames, height, width): several chunks for every video family (HunyuanVideo's and LTX's windows
# at their tiny configs' 16-frame windows: 33 frames)
SIZES = {
    "wan-tiny": (17, 32, 32), "tiny": (25, 32, 32), "qwenimage-tiny": (9, 32, 32), "hunyuan-tiny": (33, 32, 32),
    "hunyuan15-tiny": (9, 32, 32), "ltx091-tiny": (33, 32, 32), "mochi-tiny": (7, 32, 32),
    "cosmos-tiny": (9, 32, 32), "magvit-tiny": (9, 32, 32), "allegro-tiny": (24, 128, 128),
    "wan2.2-tiny": (9, 32, 32), **({"ltx2ts-tiny": (33, 32, 32)} if "ltx2ts-tiny" in MODELS else {}),
    **({"qwenimage21-tiny": (1, 32, 32)} if "qwenimage21-tiny" in MODELS else {}),  # images: one chunk
    "sd-tiny": (1, 32, 32),
}
# at least this many chunks: the families whose loop decodes in chunks
CHUNKS = {"wan-tiny": 5, "tiny": 3, "qwenimage-tiny": 3, "hunyuan-tiny": 2, "ltx091-tiny": 2, "wan2.2-tiny": 3}
DEFAULT = ("wan-tiny", "tiny", "hunyuan-tiny", "sd-tiny")
# the families with a session, and chunkings of the latent frames of SIZES that keep them exact
SESSIONS = {"wan-tiny": [1, 2, 1], "qwenimage-tiny": [2, 1], "tiny": [3, 2], "wan2.2-tiny": [1, 1]}
# and of the video frames of SIZES, for encode sessions (Wan's first frame then 4 at a time; CogVideoX's frame
# batches of 8, the remainder in the first)
ENCODE_SESSIONS = {"wan-tiny": [5, 4], "qwenimage-tiny": [1, 4], "tiny": [9], "wan2.2-tiny": [1]}


def cases(names):
    return [pytest.param(name, marks=() if name in DEFAULT else pytest.mark.slow) for name in names]


@pytest.fixture(scope="module")
def models():
    built = {}

    def get(name):
        if name not in built:
            vae = random_vae(name)
            built[name] = (vae, TorchaxVAE(vae))
        return built[name]

    return get


def _inputs(vae, ours, name, batch=1, seed=1):
    z = randn(*input_shape(vae, "decode", *SIZES[name]), seed=seed)
    z = torch.cat([z] + [randn(*z.shape, seed=seed + i + 1) for i in range(batch - 1)])
    if ours.batch_is_frames:
        return z, (z.shape[0],)
    return z, decode_args(vae, z.shape[0])


def _noise(ours, seed=3):
    return {"generator": torch.Generator().manual_seed(seed)} if ours.decode_draws_noise else {}


@pytest.mark.parametrize("name", cases(SIZES))
def test_stream_joins_to_decode(models, name):
    vae, ours = models(name)
    z, args = _inputs(vae, ours, name)
    if name == "ltx091-tiny":  # LTX's classes start with it off (HunyuanVideo's on). ltx2ts-tiny's window stride
        # (8 frames) is below its temporal ratio (16): a stride of 0 latent frames, which diffusers' windows cannot take
        ours.use_framewise_decoding = vae.use_framewise_decoding = True
    whole = ours.decode(z, *args, **_noise(ours)).sample
    chunks = list(ours.decode_stream(z, *args, **_noise(ours)))
    axis = ours.decoded_layout.index("F") if ours.rank == 5 else 0
    assert len(chunks) >= CHUNKS.get(name, 1), [tuple(c.shape) for c in chunks]
    joined = torch.cat(chunks, dim=axis)
    assert torch.equal(joined, whole), f"{name}: stream vs decode max |Δ| {(joined - whole).abs().max().item():.3g}"
    # LTX's parity with its generator: tests/test_ltx.py; Allegro's (diffusers decodes only tiled): test_allegro.py
    if not ours.decode_draws_noise and name != "allegro-tiny":
        assert_close(whole, vae.decode(z, *args).sample, 1e-4, f"{name} decode vs diffusers")


@pytest.mark.slow  # 20-50 s each on 2 cores (diffusers' tiled, sliced decode beside ours); CI's slow set runs them
@pytest.mark.parametrize("name", ("wan-tiny", *(pytest.param(n, marks=pytest.mark.heavy) for n in ("tiny", "hunyuan-tiny"))))
def test_tiled_and_sliced_stream(models, name):
    vae, ours = models(name)
    z, args = _inputs(vae, ours, name, batch=2)
    for model in (ours, vae):
        model.use_slicing = True
        if name == "tiny":
            model.enable_tiling(tile_sample_min_height=16, tile_sample_min_width=16, tile_overlap_factor_height=0.25,
                                tile_overlap_factor_width=0.25)
        else:
            model.enable_tiling(tile_sample_min_height=16, tile_sample_min_width=16, tile_sample_stride_height=8,
                                tile_sample_stride_width=8)
    try:
        whole = ours.decode(z, *args).sample
        chunks = list(ours.decode_stream(z, *args))
        assert len(chunks) >= CHUNKS[name] and all(c.shape[0] == 2 for c in chunks)
        joined = torch.cat(chunks, dim=2)
        assert torch.equal(joined, whole), f"{name}: max |Δ| {(joined - whole).abs().max().item():.3g}"
        assert_close(whole, vae.decode(z, *args).sample, 1e-4, f"{name} tiled, sliced vs diffusers")
    finally:
        ours.disable_tiling()
        ours.tiling_mode = "auto"
        ours.use_slicing = False
        vae.disable_tiling()
        vae.use_slicing = False


def test_uint8_frames_and_early_close(models):
    vae, ours = models("wan-tiny")
    z, _ = _inputs(vae, ours, "wan-tiny")
    whole = ours.decode(z).sample
    frames = torch.cat(list(ours.decode_stream(z, frames="uint8")), dim=2)
    assert frames.dtype == torch.uint8
    expected = ((whole / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8)  # diffusers' VideoProcessor
    assert torch.equal(frames, expected), f"uint8 frames off by {(frames.int() - expected.int()).abs().max()}"
    stream = ours.decode_stream(z)
    first = next(stream)
    assert first.shape[2] == 1  # Wan's first latent frame decodes to one frame
    family_loop = stream._chunks
    stream.close()
    assert inspect.getgeneratorstate(family_loop) == inspect.GEN_CLOSED and not stream._ahead
    assert list(stream) == []
    with pytest.raises(ValueError, match="frames must be 'float' or 'uint8', got 'int8'"):
        ours.decode_stream(z, frames="int8")


def test_stream_checks_before_compiling(models):
    _, ours = models("wan-tiny")
    with pytest.raises(ValueError, match="channels"):
        ours.decode_stream(torch.zeros(1, 3, 2, 4, 4))
    z = torch.zeros(1, 16, 2, 4, 4, requires_grad=True)
    with torch.enable_grad(), pytest.raises(ValueError, match="decode_stream yields no gradients"):
        ours.decode_stream(z)


# ----- sessions -----


@pytest.mark.parametrize("name", cases(SESSIONS))
def test_session_equals_whole_decode(models, name):
    vae, ours = models(name)
    z, _ = _inputs(vae, ours, name)
    with torch.no_grad():
        whole = vae.decode(z).sample  # diffusers' whole decode in PyTorch
    sizes = SESSIONS[name] + [z.shape[2] - sum(SESSIONS[name])]
    with ours.decode_session() as session:
        outs, start = [], 0
        for n in sizes:
            outs.append(session.decode(z[:, :, start:start + n]))
            start += n
        rest = session.finish()  # a family that carries causal state holds nothing back: no frames
    assert rest.shape == (*whole.shape[:2], 0, *whole.shape[3:]) and rest.dtype == whole.dtype, rest.shape
    joined = torch.cat(outs, dim=2)
    assert_parity(joined, whole, f"{name} session {sizes} vs diffusers' decode")


@pytest.mark.parametrize("name", cases(ENCODE_SESSIONS))
def test_encode_session_equals_whole_encode(models, name):
    vae, ours = models(name)
    x = randn(1, ours.video_channels, *SIZES[name], seed=5)
    with torch.no_grad():
        whole = vae.encode(x).latent_dist.parameters  # diffusers' whole encode in PyTorch
    sizes = ENCODE_SESSIONS[name] + [x.shape[2] - sum(ENCODE_SESSIONS[name])]
    with ours.encode_session() as session:
        outs, start = [], 0
        for n in sizes:
            outs.append(session.encode(x[:, :, start:start + n]).latent_dist.parameters)
            start += n
        rest = session.finish().latent_dist.parameters
    assert rest.shape == (*whole.shape[:2], 0, *whole.shape[3:]), rest.shape
    assert session.frames == x.shape[2]
    assert_parity(torch.cat(outs, dim=2), whole, f"{name} encode session {sizes} vs diffusers' encode")


def test_encode_session_refusals(models):
    _, ours = models("wan-tiny")
    session = ours.encode_session()
    with pytest.raises(ValueError, match=r"first chunk has 4 video frames; .* 1 \+ 4k video frames \(1, 5, 9"):
        session.encode(randn(1, 3, 4, 32, 32))
    session.encode(randn(1, 3, 1, 32, 32))
    with pytest.raises(ValueError, match="later session chunk has 3 video frames; .* multiple of 4"):
        session.encode(randn(1, 3, 3, 32, 32))
    with pytest.raises(ValueError, match="has 16 channels .* encoder expects 3"):
        session.encode(randn(1, 16, 4, 32, 32))
    session.encode(randn(1, 3, 4, 32, 32))  # still usable after refusals
    assert session.frames == 5

    _, cog = models("tiny")
    with pytest.raises(ValueError, match="first chunk has 5 video frames; .* at least 8 video frames"):
        cog.encode_session().encode(randn(1, 3, 5, 32, 32))
    _, hunyuan = models("hunyuan-tiny")
    with pytest.raises(ValueError, match="no encode session; sessions are for .*AutoencoderKLWan.*MiniMaxH3"):
        hunyuan.encode_session()


def test_wan_session_any_chunking_compiles_nothing_more(models):
    vae, ours = models("wan-tiny")
    z = randn(1, 16, 12, 4, 4, seed=7)
    whole = ours.decode(z).sample
    rng = random.Random(0)
    for _ in range(2):
        sizes, left = [], z.shape[2]
        while left:
            sizes.append(min(left, rng.randint(1, 4)))
            left -= sizes[-1]
        session = ours.decode_session()
        compiled = len(ours.compile_stats())
        outs, start = [], 0
        for n in sizes:
            outs.append(session.decode(z[:, :, start:start + n]))
            start += n
        assert len(ours.compile_stats()) == compiled, "a session compiled a program the whole decode had not"
        assert_close(torch.cat(outs, dim=2), whole, 1e-4, f"wan session {sizes}")
        session.close()


def test_session_refusals(models):
    vae, ours = models("wan-tiny")
    session = ours.decode_session()
    session.decode(randn(1, 16, 1, 4, 4))
    with pytest.raises(ValueError, match=r"session chunk has shape \(1, 16, 1, 4, 6\).*1x16x4x4"):
        session.decode(randn(1, 16, 1, 4, 6))
    with pytest.raises(ValueError, match="has 4 channels .* expects 16"):
        session.decode(randn(1, 4, 1, 4, 4))
    session.decode(randn(1, 16, 2, 4, 4))  # still usable after refusals
    assert session.latent_frames == 3
    session.close()
    with pytest.raises(RuntimeError, match="closed"):
        session.decode(randn(1, 16, 1, 4, 4))

    _, cog = models("tiny")
    session = cog.decode_session()
    with pytest.raises(ValueError, match="first chunk has 1 latent frames; .* a first chunk of at least 2"):
        session.decode(randn(1, 4, 1, 4, 4))
    session.decode(randn(1, 4, 3, 4, 4))
    with pytest.raises(ValueError, match="later session chunk has 3 latent frames; .* multiple of 2"):
        session.decode(randn(1, 4, 3, 4, 4))

    _, hunyuan = models("hunyuan-tiny")
    with pytest.raises(ValueError, match="carries no causal state.*AutoencoderKLCogVideoX.*AutoencoderKLWan"):
        hunyuan.decode_session()


def test_session_refuses_a_second_thread(models):
    _, ours = models("wan-tiny")
    session = ours.decode_session()
    session.decode(randn(1, 16, 1, 4, 4))  # compiled: the next chunk runs quickly
    inside, release = threading.Event(), threading.Event()
    original = ours._family.session_step

    def slow_step(*args, **kwargs):  # holds the session's chunk until the main thread has tried its own
        inside.set()
        release.wait(60)
        return original(*args, **kwargs)

    ours._family.session_step = slow_step
    try:
        worker = threading.Thread(target=session.decode, args=(randn(1, 16, 1, 4, 4),))
        worker.start()
        assert inside.wait(60)
        with pytest.raises(RuntimeError, match="running a chunk in another thread"):
            session.decode(randn(1, 16, 1, 4, 4))
        release.set()
        worker.join(60)
    finally:
        del ours._family.session_step
    assert session.latent_frames == 2


def test_two_sessions_from_two_threads(models):
    vae, ours = models("wan-tiny")
    latents = [randn(1, 16, 6, 4, 4, seed=s) for s in (11, 12)]
    expected = [ours.decode(z).sample for z in latents]
    results = [None, None]

    def run(i):
        with ours.decode_session() as session:
            results[i] = torch.cat([session.decode(latents[i][:, :, k:k + 2]) for k in range(0, 6, 2)], dim=2)

    threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for got, want in zip(results, expected):
        assert_close(got, want, 1e-4, "a session beside another thread's")


def test_encode_sessions_batched_equal_each_encode(models):
    """Two encode sessions stepped together (`encode_sessions`), the first chunks and the later ones as one call
    each: each posterior is diffusers' whole encode of its own video."""
    vae, ours = models("wan-tiny")
    videos = [randn(1, 3, 9, 32, 32, seed=11), randn(1, 3, 9, 32, 32, seed=12)]
    sessions, outs, occupancy = [ours.encode_session() for _ in videos], [[], []], []
    for start, end in ((0, 5), (5, 9)):
        got = ours.encode_sessions({s: x[:, :, start:end] for s, x in zip(sessions, videos)}, occupancy=occupancy)
        for k, s in enumerate(sessions):
            outs[k].append(got[s].latent_dist.parameters)
    assert occupancy == [2, 2]
    for k, x in enumerate(videos):
        with torch.no_grad():
            whole = vae.encode(x).latent_dist.parameters
        assert_parity(torch.cat(outs[k], dim=2), whole, f"encode session {k} batched vs diffusers' encode")


def test_sessions_batched_refusals_leave_every_session_as_it_was(models):
    """A bad chunk among several raises before anything runs: no session has taken a chunk; sessions of another
    TorchaxVAE or kind, and a session busy in another thread, are refused."""
    _, ours = models("wan-tiny")
    _, other = models("tiny")
    a, b = ours.decode_session(), ours.decode_session()
    z = randn(1, 16, 2, 8, 8, seed=13)
    with pytest.raises(ValueError, match="as its first chunk's|channels"):
        ours.decode_sessions({a: z, b: randn(1, 3, 2, 8, 8)})
    assert a.frames == b.frames == 0 and a._state is None
    with pytest.raises(ValueError, match="decode_sessions takes this TorchaxVAE's own DecodeSessions"):
        ours.decode_sessions({a: z, other.decode_session(): randn(1, 16, 2, 8, 8)})
    with pytest.raises(ValueError, match="decode_sessions takes"):
        ours.decode_sessions({a: z, ours.encode_session(): randn(1, 3, 1, 64, 64)})
    b._lock.acquire()  # b runs a chunk in another thread
    try:
        with pytest.raises(RuntimeError, match="another thread"):
            ours.decode_sessions({a: z, b: z})
    finally:
        b._lock.release()
    out = ours.decode_sessions({a: z, b: z})  # both still usable (two rows of one batch: equal up to its rounding)
    assert_close(out[a], out[b], 1e-6, "two sessions of the same latents")
    assert a.frames == b.frames == 2


def test_sessions_batched_on_the_device_stay_there(models):
    """Chunks that are torchax tensors (on the device) are joined there, and each session's frames come back on the
    device, equal to its session alone."""
    import jax.numpy as jnp

    from torchax_vae.patches import import_torchax

    _, ours = models("wan-tiny")
    z = [randn(1, 16, 3, 8, 8, seed=14), randn(1, 16, 3, 8, 8, seed=15)]
    env = import_torchax().default_env()
    on_device = [env.j2t_iso(jnp.asarray(t.numpy())) for t in z]
    sessions = [ours.decode_session() for _ in z]
    got = ours.decode_sessions(dict(zip(sessions, on_device)))
    for s, t in zip(sessions, z):
        assert hasattr(got[s], "_elem"), type(got[s])
        with ours.decode_session() as alone:
            expected = alone.decode(t)
        assert_close(torch.from_numpy(np.array(got[s]._elem)), expected, 1e-6, "on the device")


def test_five_sessions_run_as_four_and_one_not_padded_to_eight(models):
    """Agreeing sessions split into batches of the compiled sizes (a padded row costs a real row's compute): five of
    one row each run as calls of four and one, each session's frames its own."""
    _, ours = models("wan-tiny")
    z = [randn(1, 16, 2, 8, 8, seed=20 + k) for k in range(5)]
    sessions, occupancy = [ours.decode_session() for _ in z], []
    got = ours.decode_sessions(dict(zip(sessions, z)), occupancy=occupancy)
    assert occupancy == [4, 1]
    for s, t in zip(sessions, z):
        with ours.decode_session() as alone:
            assert_close(got[s], alone.decode(t), 1e-6, "one of five sessions")
