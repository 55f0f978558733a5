"""Run by tests/test_sharding.py in a subprocess with 8 virtual CPU devices; prints one JSON line per check.

    XLA_FLAGS=--xla_force_host_platform_device_count=8 python tests/_sharded_worker.py tiny|official

Each line: {"case", "what", "max_abs", ...}. The parent asserts on them, so the
rest of the suite keeps its single device.
"""

import json
import logging
import sys

import jax
import torch

from torchax_vae import TorchaxVAE, make_mesh
from torchax_vae.facade.family import Family
from helpers import MODELS, random_vae, with_noise

logging.basicConfig(level=logging.WARNING, stream=sys.stderr)


def emit(**record):
    print(json.dumps(record), flush=True)


def diff(a, b) -> float:
    return (a.float() - b.float()).abs().max().item()


@torch.no_grad()
def parity(case: str, vae, ours: TorchaxVAE, x: torch.Tensor, z: torch.Tensor, *decode_args, **decode_options):
    """Encode x and decode z (with decode_args: LTX's timestep; decode_options: LTX-2's causal) both ways; also
    reports the devices each program ran on."""
    expected = latents(vae.encode(x))
    emit(case=case, what="encode", max_abs=diff(ours._posterior(x).mode(), expected))
    ranges = ours._family.encode_ranges(x.shape[2])
    if ranges and ours.tiling_mode != "on" and "official" not in case:  # an encode session: each encoder call's frames
        with ours.encode_session() as session:
            parts = [session.encode(x[:, :, a:b]).latent_dist.parameters for a, b in ranges]
            parts.append(session.finish().latent_dist.parameters)
        emit(case=case, what=f"encode session {[b - a for a, b in ranges]}",
             max_abs=diff(ours.posterior_class(torch.cat(parts, dim=2)).mode(), expected))
    if ours.batch_is_frames:  # Stable Video Diffusion: decode(z, num_frames), the batch one video
        decode_args = decode_args or (z.shape[0],)
    torch.manual_seed(0)  # LTX 0.9.1's decoder injects noise from torch's generator, so both sides draw alike
    expected = vae.decode(z, *decode_args, **decode_options).sample
    torch.manual_seed(0)
    actual = ours.decode(z, *decode_args, **decode_options).sample
    what = " ".join(["decode", *(f"{k}={v}" for k, v in decode_options.items())])
    emit(case=case, what=what, max_abs=diff(actual, expected))
    # only where the family's loop gives chunks (a loop that is one call, images included, streams as decode);
    # the released and GPU-rule cases are about their programs, and heavy
    family = ours._family
    chunked = type(family).decode_chunks is not Family.decode_chunks and getattr(family, "frame_windows", True)
    if chunked and "official" not in case and "gpu rules" not in case:
        stream_and_session(case, what, ours, z, actual, *decode_args, **decode_options)
    emit(case=case, what="devices", counts=sorted({len(s["devices"]) for s in ours.compile_stats()}))


def stream_and_session(case: str, what: str, ours, z, actual, *decode_args, **decode_options):
    """decode_stream on the mesh (its chunks joined are decode's output, bit for bit) and, for the families with
    causal state, a decode session in chunks every such family takes (the remainder first, then 2s)."""
    torch.manual_seed(0)
    chunks = list(ours.decode_stream(z, *decode_args, **decode_options))
    emit(case=case, what=f"stream {what}", exact=diff(torch.cat(chunks, dim=ours.decoded_layout.index("F")), actual),
         chunks=len(chunks))
    frames = z.shape[2]
    if ours._family.carries_state and frames >= 2 and not decode_args and ours.tiling_mode != "on":
        sizes = [2 + frames % 2] + [2] * ((frames - 2 - frames % 2) // 2)
        with ours.decode_session() as session:
            starts = [sum(sizes[:i]) for i in range(len(sizes))]
            parts = [session.decode(z[:, :, a:a + n]) for a, n in zip(starts, sizes)] + [session.finish()]
        emit(case=case, what=f"session {sizes}", max_abs=diff(torch.cat(parts, dim=2), actual))


def latents(output):
    """The latents of a diffusers `encode` output: its posterior's mode, or the latents of a class without one
    (AutoencoderDC's `.latent`, AutoencoderTiny's `.latents`)."""
    for name in ("latent", "latents"):
        if hasattr(output, name):
            return getattr(output, name)
    return output.latent_dist.mode()


def tiny():
    vae = random_vae("tiny")
    gen = torch.Generator().manual_seed(0)
    # 17 frames / 5 latent frames: two frame batches each way, the conv_cache carried between them.
    x = torch.randn(1, 3, 17, 32, 64, generator=gen)
    z = torch.randn(1, 4, 5, 4, 8, generator=gen)
    parity("1x8", vae, TorchaxVAE(vae, mesh=make_mesh()), x, z)

    # Batch 2 over 'dp', width over 'tp'; and slicing (batch 1 per call: width over both).
    x2, z2 = torch.randn(2, 3, 9, 32, 32, generator=gen), torch.randn(2, 4, 3, 4, 4, generator=gen)
    ours = TorchaxVAE(vae, mesh=make_mesh(dp=2))
    parity("2x4 batch 2", vae, ours, x2, z2)
    ours.enable_slicing()
    vae.enable_slicing()
    parity("2x4 batch 2 sliced", vae, ours, x2, z2)
    vae.disable_slicing()

    # A width no split divides at the latent level (5 = 40 / 8): the grid 2 x 4 from the 12 x 20 level up, the
    # 6 x 10 level in unequal blocks (10 as 3, 3, 3, 1: `torchax_vae.placement.mesh.uneven_grid`), the 3 x 5 latents 2 x 1.
    parity("1x8 width 40", vae, TorchaxVAE(vae, mesh=make_mesh()), torch.randn(1, 3, 9, 24, 40, generator=gen),
           torch.randn(1, 4, 3, 3, 5, generator=gen))


def tiny_more_cases():
    """The slow set's further CogVideoX cases on the mesh: height strips, tiling, a device input, per-device memory."""
    vae = random_vae("tiny")
    gen = torch.Generator().manual_seed(1)
    # Height strips, the grid TPUs favour (`torchax_vae.placement.mesh.keeps_width`; here the squarest blocks too): a
    # 128 x 16 video's 16 x 2 latents split 8 x 1, two rows a device. (Uneven blocks: "1x8 width 40" in `tiny`.)
    parity("8x1 tall", vae, TorchaxVAE(vae, mesh=make_mesh()), torch.randn(1, 3, 9, 128, 16, generator=gen),
           torch.randn(1, 4, 3, 16, 2, generator=gen))

    # Tiling on the mesh: tiles of 32x32 over 48x64, against diffusers' tiled_encode/tiled_decode.
    vae.enable_tiling(32, 32, 0.25, 0.25)
    ours = TorchaxVAE(vae, mesh=make_mesh())
    parity("1x8 tiled", vae, ours, torch.randn(1, 3, 9, 48, 64, generator=gen), torch.randn(1, 4, 3, 6, 8, generator=gen))
    vae.disable_tiling()

    # Input already on one JAX device (a torchax tensor): moved onto the mesh, result stays a torchax tensor.
    ours = TorchaxVAE(vae, mesh=make_mesh())
    env = ours._family.lowered.env
    z1 = torch.randn(1, 4, 3, 4, 8, generator=gen)
    device_z = env.j2t_iso(jax.device_put(z1.numpy(), jax.devices()[3]))
    out = ours.decode(device_z).sample
    emit(case="1x8 device input", what="decode", max_abs=diff(torch.from_numpy(jax.device_get(out._elem).copy()),
                                                                vae.decode(z1).sample),
         output_devices=len(out._elem.sharding.device_set))

    # Memory: one frame batch compiled on one device and on a (1, 8) mesh; per-device temp bytes.
    for kind, shape in (("decode", (1, 4, 3, 16, 32)), ("encode", (1, 3, 9, 128, 256))):  # 9 frames at 128x256
        one_device = TorchaxVAE(vae)
        one_device.program_split = "batch"  # like the mesh's programs (its "auto" default)
        single = one_device.precompile(kind, shape)
        sharded = TorchaxVAE(vae, mesh=make_mesh()).precompile(kind, shape)
        emit(case="memory", what=f"{kind} temp bytes", single=single[0]["temp_bytes"], sharded=sharded[0]["temp_bytes"],
             devices=len(sharded[0]["devices"]))


def feat_cache(names):
    """Wan 2.1-, 2.2- and Qwen-Image-style tiny VAEs on a (1, 8) mesh: the feat_cache carried between chunk programs."""
    gen = torch.Generator().manual_seed(0)
    for name in names:
        vae = random_vae(name)
        ours = TorchaxVAE(vae, mesh=make_mesh())
        # 9 frames: three encoder calls; 3 latent frames: three decoder calls (first chunk, then the steady one).
        x = torch.randn(1, ours.video_channels, 9, 32, 64, generator=gen)
        z = torch.randn(1, ours.latent_channels, 3, *ours.latent_shape(x.shape)[3:], generator=gen)
        parity(f"{name} 1x8", vae, ours, x, z)


def wan():
    feat_cache(["wan-tiny"])
    # (Wan's tiles are exact-shape calls of these same programs; tiling on a mesh is checked with CogVideoX above.)
    # Memory: the steady decoder call at 64x256 on one device and on a (1, 8) mesh; per-device temp bytes.
    # (The mid block's attention runs replicated: at 16x64 latents its 1024x1024 scores take the
    # ratio to 0.45; see docs/design/wan.md.)
    vae = random_vae("wan-tiny")
    single = TorchaxVAE(vae).precompile("decode", (1, 16, 2, 8, 32))
    sharded = TorchaxVAE(vae, mesh=make_mesh()).precompile("decode", (1, 16, 2, 8, 32))
    steady = [s for s in single if s["name"].endswith("+feat_cache")][0]
    steady_sharded = [s for s in sharded if s["name"].endswith("+feat_cache")][0]
    emit(case="memory", what="wan decode temp bytes", single=steady["temp_bytes"],
         sharded=steady_sharded["temp_bytes"], devices=len(steady_sharded["devices"]))


def qwenimage(memory: bool):
    feat_cache(["wan2.2-tiny", "qwenimage-tiny"])
    gen = torch.Generator().manual_seed(0)
    if "qwenimage21-tiny" in MODELS:  # Qwen-Image 2.1 (diffusers >= 0.42): 4-channel images
        vae = random_vae("qwenimage21-tiny")
        parity("qwenimage21-tiny 1x8", vae, TorchaxVAE(vae, mesh=make_mesh()), torch.randn(1, 4, 1, 32, 64, generator=gen),
               torch.randn(1, 4, 1, 8, 16, generator=gen))
    # The mid block's attention split over the 8 devices: 26 x 30 latents, 780 tokens padded to 784
    # (torchax_vae/patches/attention_split.py); and HunyuanVideo's causal mask padded with them (3 x 6 x 10 = 180 tokens).
    for config, latents in (("qwenimage-tiny", (1, 4, 1, 26, 30)), ("hunyuan-tiny", (1, 4, 3, 6, 10))):
        vae = random_vae(config)
        ours = TorchaxVAE(vae, mesh=make_mesh())
        z = torch.randn(*latents, generator=gen)
        with torch.no_grad():
            emit(case=f"{config} 1x8 uneven attention", what="decode",
                 max_abs=diff(ours.decode(z).sample, vae.decode(z).sample))
    if not memory:
        return
    # Memory: an image (one frame) decoded at 256x1024 latents, compiled offline for one v6e chip and for 8.
    # Not on this CPU mesh: XLA:CPU runs one device's attention as one YNNPACK fusion whose scores
    # (16384^2 floats here) its memory analysis leaves out, while the split program's are counted.
    vae = TorchaxVAE(random_vae("qwenimage-tiny"))
    single, sharded = (vae.plan("decode", (1, 4, 1, 64, 256), name).to_json() for name in ("v6e-1", "v6e-8"))
    emit(case="memory", what="qwenimage decode temp bytes", single=single["programs"][0]["temp_bytes"],
         sharded=sharded["programs"][0]["temp_bytes"], devices=sharded["devices"])


WINDOWED_SLOW = ("hunyuan", "ltx", "allegro")  # frame windows, the decode timestep and noise, fixed 3-D tiles


def windowed(labels):
    """The frame-window families on a (1, 8) mesh: whole clips, no cache. HunyuanVideo's tiny VAE (one decode
    of 3 latent frames at 64x256 for memory), LTX-Video 0.9.1's (2 latent frames at 256x1024) and LTX-2's
    (2 latent frames at 64x512): their timestep and injected noise (replicated) on the mesh."""
    gen = torch.Generator().manual_seed(0)
    cases = [  # config, row label, video, latents, decode's further arguments, memory decode shape
        ("hunyuan-tiny", "hunyuan", (1, 3, 9, 32, 64), (1, 4, 3, 4, 8), (), (1, 4, 3, 8, 32)),
        ("ltx091-tiny", "ltx", (1, 3, 9, 32, 64), (1, 8, 2, 4, 8), (torch.tensor([0.05]),), (1, 8, 2, 8, 32)),
        # HunyuanVideo 1.5: pixel-(un)shuffle samplers and a whole-clip causal attention (3 x 8 x 16 = 384 tokens)
        ("hunyuan15match-tiny", "hunyuan15", (1, 3, 9, 32, 64), (1, 4, 3, 8, 16), (), (1, 4, 3, 16, 64)),
        # Allegro: one fixed 24 x 128 x 128 tile (latents 6 x 16 x 16), its per-frame 2-D layers split on the mesh
        ("allegro-tiny", "allegro", (1, 3, 24, 128, 128), (1, 4, 6, 16, 16), (), (1, 4, 6, 16, 16)),
        # Mochi: per-frame norms, attention over each pixel's frames, replicate-padded causal convolutions
        ("mochi-tiny", "mochi", (1, 3, 7, 32, 64), (1, 4, 2, 4, 8), (), (1, 4, 2, 8, 32)),
        # Cosmos: Haar-wavelet patches, per-frame norms, spatial and temporal attention (its 8 x 8 level)
        ("cosmos-tiny", "cosmos", (1, 3, 9, 32, 64), (1, 4, 3, 8, 16), (), (1, 4, 3, 16, 64)),
        # EasyAnimate: frame batches carrying the modules' own cache (prev_features) on the mesh
        ("magvit-clipnorm-tiny", "magvit", (1, 3, 9, 32, 128), (1, 4, 3, 4, 16), (), (1, 4, 3, 8, 32)),
    ]
    if "ltx2ts-tiny" in MODELS:  # LTX-2 (diffusers >= 0.37): reflect padding split on width, noise, timestep
        cases.append(("ltx2ts-tiny", "ltx2", (1, 3, 9, 64, 128), (1, 8, 2, 4, 16), (torch.tensor([0.05]),),
                      (1, 8, 2, 8, 64)))
    for config, label, video, latents, decode_args, memory_shape in cases:
        if label not in labels:
            continue
        vae = with_noise(random_vae(config), 0.5)
        if label == "allegro":
            vae.enable_tiling()  # diffusers' class runs no other way
        ours = TorchaxVAE(vae, mesh=make_mesh())
        x, z = torch.randn(*video, generator=gen), torch.randn(*latents, generator=gen)
        parity(f"{config} 1x8", vae, ours, x, z, *decode_args)
        if label == "ltx2":  # decode(..., causal=True): a program of its own (`decoder+causal=True`) on the mesh
            parity(f"{config} 1x8 causal", vae, ours, x, z, *decode_args, causal=True)
        single = TorchaxVAE(vae).precompile("decode", memory_shape)
        sharded = TorchaxVAE(vae, mesh=make_mesh()).precompile("decode", memory_shape)
        emit(case="memory", what=f"{label} decode temp bytes", single=single[0]["temp_bytes"],
             sharded=sharded[0]["temp_bytes"], devices=len(sharded[0]["devices"]))


def xla_conv_blocks():
    """XLA's one-element-block bug (`torchax_vae.placement.mesh._at_least_two`): a 2 x 4 image level split 2 x 4 ways, given a
    frame axis (a reshape) and convolved with a 1-pixel halo, against the same program on one device; and
    through `sharding_for`, which avoids those blocks."""
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec

    from torchax_vae.placement.mesh import fine_mesh, sharding_for

    mesh = make_mesh()
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((1, 8, 2, 4)), jnp.float32)
    w = jnp.asarray(rng.standard_normal((8, 8, 1, 3, 3)), jnp.float32)

    def conv(x):  # what zero_history's one-frame convolution is, in the other direction
        return jax.lax.conv_general_dilated(x[:, :, None], w, (1, 1, 1), ((0, 0), (1, 1), (1, 1)),
                                            dimension_numbers=("NCDHW", "OIDHW", "NCDHW"))

    expected = conv(x)
    blocks = NamedSharding(fine_mesh(mesh), PartitionSpec(None, None, "tp0", ("tp1", "tp2")))
    ours = sharding_for(mesh, x.shape, (2, 4))
    for what, sharding in (("one-element blocks", blocks), ("sharding_for", ours)):
        out = jax.jit(conv, in_shardings=sharding)(jax.device_put(x, sharding))
        emit(case="xla conv 2x4 level", what=what, spec=str(sharding.spec), error=float(jnp.abs(out - expected).max()))


def halo_convolutions():
    """torchax_vae/patches/halo_conv.py's split convolution against the unsplit one (`gpu_conv.stock`): grids of one and two
    axes, zero and replicate padding, 2-D and 3-D, 3 x 3 and 5 x 5 kernels, with and without a bias."""
    import jax.numpy as jnp
    import numpy as np

    from torchax_vae.patches import gpu_conv, halo_conv

    mesh = make_mesh()
    rng = np.random.default_rng(0)
    cases = [  # input shape, kernel, padding, grid, mode, bias
        ((1, 4, 3, 16, 32), (3, 3, 3), (1, 1, 1), (1, 8), "zeros", True),
        ((1, 4, 3, 16, 32), (3, 3, 3), (0, 1, 1), (2, 4), "zeros", False),
        ((1, 4, 3, 16, 32), (3, 5, 5), (1, 2, 2), (4, 2), "zeros", True),
        ((3, 4, 16, 32), (3, 3), (1, 1), (8, 1), "zeros", True),
        ((1, 4, 3, 16, 32), (3, 3, 3), (0, 1, 1), (1, 8), "edge", True),
        ((1, 4, 3, 16, 32), (3, 3, 3), (0, 1, 1), (2, 4), "edge", True),
        ((1, 4, 3, 16, 32), (3, 5, 5), (0, 2, 2), (8, 1), "edge", False),
    ]
    for shape, kernel, padding, grid, mode, bias in cases:
        x = jnp.asarray(rng.standard_normal(shape), jnp.float32)
        w = jnp.asarray(rng.standard_normal((5, 4, *kernel)) * 0.1, jnp.float32)
        b = jnp.asarray(rng.standard_normal(5), jnp.float32) if bias else None
        ones = (1,) * len(kernel)
        if mode == "edge":  # replicate padding of height and width, as HunyuanVideo's F.pad makes it
            edges = [(0, 0)] * (len(shape) - 2) + [(p, p) for p in padding[-2:]]
            expected = gpu_conv.stock(jnp.pad(x, edges, mode="edge"), w, b, ones, padding[:-2] + (0, 0), ones, 1)
        else:
            expected = gpu_conv.stock(x, w, b, ones, padding, ones, 1)
        split = jax.jit(lambda x, w: halo_conv.sharded(gpu_conv.stock, x, w, b, ones, padding, ones, 1, mesh, grid,
                                                       mode=mode))
        emit(case="halo conv", what=f"{mode} {shape} kernel {kernel} grid {grid}",
             max_abs=float(jnp.abs(split(x, w) - expected).max()))
    # what it leaves to XLA's partitioner: a pointwise kernel, a strided one
    x = jnp.zeros((1, 4, 3, 16, 32))
    for what, kernel, stride, padding in (("pointwise", (1, 1, 1), (1, 1, 1), (0, 0, 0)),
                                          ("strided", (3, 3, 3), (1, 2, 2), (1, 1, 1))):
        planned = halo_conv.plan(mesh, (2, 4), x.shape, (5, 4, *kernel), stride, padding, (1, 1, 1))
        emit(case="halo conv", what=what, split=planned is not None)


def gpu_rules(names):
    """Tiny VAEs traced as for GPUs (gpu_conv's rule, halo_conv's split convolutions) and run on the (1, 8) CPU
    mesh: encode and decode against PyTorch, and how many convolutions the decode's programs split."""
    gen = torch.Generator().manual_seed(0)
    for name in names:
        vae = random_vae(name)
        ours = TorchaxVAE(vae, mesh=make_mesh())
        ours._family.lowered.platform = "cuda"  # traced as for a GPU, compiled and run for this CPU
        if hasattr(ours, "program_split"):
            ours.program_split = "batch"
        frames = 1 if name.startswith("qwenimage21") else 9  # Qwen-Image 2.1 encodes images
        size = (32, 64) if ours.rank == 4 else (frames, 32, 64)  # AutoencoderKL: images [B, C, H, W]
        x = torch.randn(1, ours.video_channels, *size, generator=gen)
        z = torch.randn(1, ours.latent_channels, *ours.latent_shape(x.shape)[2:], generator=gen)
        parity(f"{name} 1x8 gpu rules", vae, ours, x, z)
        hlo = ours.lower("decode", tuple(z.shape), "cuda").values()
        emit(case=f"{name} 1x8 gpu rules", what="split convolutions", count=sum(t.count("manual_computation") for t in hlo))


def images():
    """AutoencoderKL (images [B, C, H, W]) on the mesh: one device's width share, batch over 'dp' with slicing,
    diffusers' tiles, and traced as for GPUs (split convolutions); against PyTorch."""
    gen = torch.Generator().manual_seed(0)
    vae = random_vae("sd-tiny")
    x, z = torch.randn(1, 3, 64, 128, generator=gen), torch.randn(1, 4, 32, 64, generator=gen)
    parity("sd-tiny 1x8", vae, TorchaxVAE(vae, mesh=make_mesh()), x, z)
    x2, z2 = torch.randn(2, 3, 32, 64, generator=gen), torch.randn(2, 4, 16, 32, generator=gen)
    ours = TorchaxVAE(vae, mesh=make_mesh(dp=2))
    parity("sd-tiny 2x4 batch 2", vae, ours, x2, z2)
    vae.enable_slicing()
    ours.enable_slicing()
    parity("sd-tiny 2x4 batch 2 sliced", vae, ours, x2, z2)
    vae.disable_slicing()
    flux = random_vae("flux-tiny")  # sample_size 32: 32 x 32 image tiles, 16 x 16 latent tiles
    flux.enable_tiling()
    ours = TorchaxVAE(flux, mesh=make_mesh())
    parity("flux-tiny 1x8 tiled", flux, ours, torch.randn(1, 3, 48, 80, generator=gen),
           torch.randn(1, 16, 24, 40, generator=gen))
    gpu_rules(["sd-tiny"])


def more_images():
    """The other image VAEs on the (1, 8) mesh and traced as for GPUs: Flux.2, Sana's DC-AE, HunyuanImage, TAESD,
    Stable Video Diffusion (3 frames, one video); against PyTorch."""
    gen = torch.Generator().manual_seed(0)
    names = ["dc-small", "hunyuanimage-tiny", "tiny-tiny", "svd-tiny", "flux2-tiny"]
    for name in names:
        vae = random_vae(name)
        ours = TorchaxVAE(vae, mesh=make_mesh())
        batch = 3 if ours.batch_is_frames else 1
        x = torch.randn(batch, 3, 64, 128, generator=gen)
        z = torch.randn(*ours.latent_shape(x.shape), generator=gen)
        parity(f"{name} 1x8", vae, ours, x, z)
    gpu_rules(names)


def official():
    vae = random_vae("official")
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1, 3, 9, 32, 64, generator=gen)
    z = torch.randn(1, 16, 3, 4, 8, generator=gen)
    parity("official 1x8", vae, TorchaxVAE(vae, mesh=make_mesh()), x, z)


if __name__ == "__main__":
    assert len(jax.devices()) == 8, f"expected 8 virtual devices, got {jax.devices()}"
    # "tiny": the default suite's cases (CogVideoX: batch, slicing, uneven blocks; XLA's conv bug, halos);
    # "tiny_more": CogVideoX's height strips, tiling, device input and memory, Wan 2.1, both traced as for GPUs (-m slow);
    # "families": the feat_cache, window and tile schemes on the mesh (-m slow); "families_more": the other
    # families, the families traced as for GPUs and Qwen-Image's TPU memory row (-m heavy)
    {"tiny": lambda: (xla_conv_blocks(), halo_convolutions(), tiny()),
     "tiny_more": lambda: (tiny_more_cases(), wan(), gpu_rules(["tiny", "wan-tiny"])),
     "families": lambda: (qwenimage(memory=False), windowed(WINDOWED_SLOW)),
     "families_more": lambda: (qwenimage(memory=True),
                               windowed(("hunyuan15", "mochi", "cosmos", "magvit", "ltx2")),
                               gpu_rules(["wan2.2-tiny", "qwenimage21-tiny", "hunyuan-tiny", "hunyuan15match-tiny",
                                          "mochi-tiny", "cosmos-tiny", "magvit-clipnorm-tiny"])),
     "images": images, "more_images": more_images, "official": official}[sys.argv[1]]()
