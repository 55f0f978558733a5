"""Every choice made per backend, in one table: what a program for a JAX platform traces and compiles with.

One row per kind of device; each field says what it changes and cites the
measurement or reasoning behind it (docs/results/performance.md, docs/guide/plan.md,
docs/results/tpu.md hold the runs). The engine, the patches and the families read
`backend(platform)` and nothing else decides per platform (grep for
`backend(` to find every reader). A platform is a JAX device's (`"cpu"`,
`"tpu"`, `"gpu"`) or a lowering platform's (`"cuda"`, `"rocm"`).
"""

import dataclasses

__all__ = ["Backend", "BACKENDS", "backend"]

GPU_CONV_LIMIT = 2**31  # bytes: cuDNN's largest convolution operand (torchax_vae/patches/gpu_conv.py)


@dataclasses.dataclass(frozen=True)
class Backend:
    name: str
    # compile_effort="auto": XLA's exec_time_optimization_effort (None: XLA's default)
    compile_effort: float | None = None
    # XLA compiler options for every program, whatever the effort
    xla_options: dict = dataclasses.field(default_factory=dict)
    # the CPU-only lowerings: per-frame 3-D convolutions (torchax_vae/patches/frame_conv.py), CogVideoX's layer programs
    cpu_kernels: bool = False
    # weight-bound convolutions as one matmul over gathered patches (torchax_vae/patches/cpu_conv.py)
    conv_as_matmul: bool = False
    # pointwise convolutions as matmuls and no convolution operand past this many bytes (torchax_vae/patches/gpu_conv.py)
    conv_operand_limit: int | None = None
    # "same" convolutions of split activations as own convolution + neighbours' edge terms (torchax_vae/patches/halo_conv.py)
    halo_conv: bool = False
    # CogVideoX's program_split="auto": one program per layer ("layer") or per frame batch ("batch")
    program_split: str = "batch"
    # a mesh's spatial grid takes height splits before the squarest blocks (torchax_vae/placement/mesh.py)
    height_splits_first: bool = False
    # GroupNorm statistics as dots, for the families that ask for it (torchax_vae/patches/group_norm.py)
    groupnorm_as_dots: bool = False
    # `torchax-vae serve`'s --max-batch default: requests of one shape per device call (torchax_vae/serve).
    # Accelerators: 4, so that small requests fill the device together (not yet measured on one: docs/guide/serve.md)
    serve_max_batch: int = 4
    # attention whose score matrix would pass this many bytes runs in blocks of queries (torchax_vae/patches/attention_blocks.py):
    # AutoencoderKL's 2048x2048 decode has 65,536 tokens in one head, 8 GiB of bf16 scores (16 in fp32), past a
    # 16 GiB v5e chip beside the decoder (docs/guide/plan.md). Below it XLA sees the whole attention, as the video
    # families' released sizes always did in bf16 (the largest, Qwen-Image's 1328x1328: 27,556 tokens, 1.4 GiB).
    attention_score_limit: int | None = 2 << 30


BACKENDS = {
    "cpu": Backend(
        "cpu",
        # XLA:CPU runs per-frame 2-D convolutions faster than its 3-D ones, and LTX-2's 2048-channel mid block
        # 70x slower than PyTorch as a convolution (docs/results/performance.md, the CPU rows)
        cpu_kernels=True, conv_as_matmul=True,
        # layer programs are faster on CPU and keep XLA:CPU's compile memory down (docs/results/performance.md); a mesh
        # of CPU devices is for testing sharding and keeps batch programs (CogVideoXVAE._layered)
        program_split="layer",
        # compute-bound: a batch of 4 takes 4 times as long as one, and padding wastes more; the tiny model served
        # 3.30 requests/s to 16 clients one at a time, 2.44 batched by 4 (2 cores: docs/guide/serve.md)
        serve_max_batch=1,
    ),
    "tpu": Backend(
        "tpu",
        # libtpu spends about 3 s per convolution at its default effort: CogVideoX's first 480x720 decoder batch
        # compiled in 135 s for v6e-8, at -0.5 in 34 s, same FLOPs, fewer bytes accessed (compiled offline:
        # docs/results/tpu.md)
        compile_effort=-0.5,
        # one program per batch compiles faster (CogVideoX 480p's first decoder batch on v6e-8: 203 s against
        # 283 s for its 45 layer programs) and fits
        program_split="batch",
        # libtpu folds a block's width into 8 sublane groups, so narrow blocks waste columns; height splits
        # first raised every changed size's sharding efficiency on v6e-8 (LTX-2 encode 0.85 -> 0.99)
        height_splits_first=True,
        # libtpu 0.0.42 failed on Mochi's and EasyAnimate's GroupNorm reductions (docs/limits.md)
        groupnorm_as_dots=True,
        # libtpu holds no whole score matrix of its own accord: SDXL's 2048x2048 decode peaks at 8.95 GiB on
        # v5e-1 with the whole attention and 9.18 in query blocks (an H100: 16.26 against 5.14; compiled offline)
        attention_score_limit=None,
    ),
    "gpu": Backend(
        "gpu",
        xla_options={
            # synchronous collectives: XLA:GPU's schedule for asynchronous ones keeps more activations alive
            # across them; Wan 2.1 720p's steady decoder needed 2.74 GiB temp per GPU with them and 1.48
            # without, on two H100s (compiled offline: docs/guide/plan.md)
            "xla_gpu_disable_async_collectives": "ALLCOLLECTIVES",
            # GEMMs through cuBLAS, not Triton fusions: on an H100 (jax 0.11.2) Wan 2.2's 121x704x1280 decode
            # died with CUDA_ERROR_ILLEGAL_INSTRUCTION in 3 of 3 processes with them, ran without (4.00 s
            # against PyTorch's 6.29 s); CogVideoX 480p took 0.84 s either way (docs/results/performance.md)
            "xla_gpu_enable_triton_gemm": False,
            # no merged GEMMs: XLA's dot merger joins the GEMMs that share an operand into one whose output lives
            # on; with the per-GPU shapes of a split it joined MoVQ's seven 1x1 spatial-norm convolutions at
            # 512x512 (448 MiB of 672 temp per GPU on two H100s, against 516 on one; 283 without). SDXL, Flux,
            # Sana, Wan 2.1 480p and CogVideoX 480p plan the same bytes either way (compiled offline, 2026-11-29:
            # docs/guide/plan.md); the speed on a GPU is unmeasured with it
            "xla_gpu_dot_merger_threshold_mb": 0,
        },
        # cuDNN's 2 GiB operand limit, and pointwise convolutions as GEMMs (torchax_vae/patches/gpu_conv.py)
        conv_operand_limit=GPU_CONV_LIMIT, halo_conv=True,
        # XLA:GPU plans a whole frame batch's buffers so that sharding barely saves memory (CogVideoX 1.5's
        # first decoder batch: 21.9 GiB on one H100, 21.4 on each of two); layer programs halve it (docs/guide/plan.md)
        program_split="layer",
    ),
}
_ALIASES = {"cuda": "gpu", "rocm": "gpu"}


def backend(platform: str) -> Backend:
    """The row of a JAX platform; an unknown one (a plugin's) gets the defaults: XLA's own choices."""
    name = _ALIASES.get(platform, platform)
    return BACKENDS.get(name) or Backend(name)


def compiler_options(platform: str, effort) -> dict:
    """XLA's compiler options for `compile_effort` ("auto" or a number) on a JAX platform, with the row's own."""
    row = backend(platform)
    if effort == "auto":
        effort = row.compile_effort
    options = dict(row.xla_options)
    if effort is not None and effort != 0:
        options["exec_time_optimization_effort"] = float(effort)
    return options
