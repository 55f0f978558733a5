"""Everything torchax_vae changes in torchax and in its private copy of the diffusers model.

One file per patch; each docstring says what upstream thing it replaces, why,
and which test shows it is still needed. `apply` is the one place they are
applied; importing this package changes nothing.

- `torchax_torch213`: import torchax 0.0.13 under torch 2.13.
- `group_norm`: nn.GroupNorm as one vectorized JAX reduction.
- `safe_conv3d`: CogVideoXSafeConv3d without its cuDNN 2 GB chunking.
- `gpu_conv`: on GPUs, pointwise convolutions as matmuls and no convolution operand of 2^31 bytes or more
  (torchax's convolution lowering, taken over only while tracing for a GPU).
- `cpu_conv`: on CPU, weight-bound convolutions (few output positions, many channels) as one matmul over
  gathered patches (XLA:CPU's convolution ran LTX-2's 2048-channel mid block 70x slower than PyTorch);
  applied through `gpu_conv`'s hook on torchax's convolution lowering, and by `frame_conv` for its layers.
- `halo_conv`: on GPU meshes, "same" convolutions of split activations as each device's own convolution plus
  its neighbours' edge terms (no halo-padded copy or mask beside each shard); reached through `gpu_conv`'s
  hook, and HunyuanVideo's replicate-padded causal convolutions through their forward.
- `nearest_upsample`: nearest-neighbour upsampling by whole factors as a repeat, not torchax's gather (which
  XLA cannot partition: on a mesh it all-gathered every upsampler's input); every trace.
- `hann_window`: `torch.hann_window` from `arange` and `cos` (torchax 0.0.13 has no lowering for it; Cosmos 3's
  sound tokenizer makes its STFT window with it).
- `weight_norm`: `torch._weight_norm` in float32, rounded once, as ATen's fused kernel (torchax traces the
  composite form, in bf16 three roundings; the sound VAEs' weight-normalized convolutions).
- `keyword_linear`: `F.linear(input=..., weight=..., bias=...)` by torch's keyword names (torchax 0.0.13's lowering
  names them otherwise; MiniMax H3's audio VAE calls it so).
- `antialias_resize`: `F.interpolate(..., antialias=True)`, bilinear and bicubic, as ATen's separable kernel
  weighs it (torchax 0.0.13's lowering fails; DINOv2's position embeddings in AutoencoderRAE's encoder use it).
- `attention_split`: on a mesh, scaled-dot-product attention with each device's share of the queries (keys and
  values whole), not the whole attention on every device; traces for a mesh only.
- `attention_blocks`: without a mesh, attention whose scores would pass the backend table's limit (AutoencoderKL's
  mid block at 2048x2048: 65,536 tokens in one head) in blocks of queries under `lax.map`, one block's scores live.
- `frame_conv`: on CPU, 3-D convolutions as sums of per-frame 2-D convolutions (XLA:CPU runs those faster).
- `zero_history`: Wan's and Qwen-Image's causal convolutions with one output frame read only their real
  frames (the time taps on the zero padding dropped: a one-frame input convolves as 2-D, a third of the FLOPs);
  on GPUs their height and width padding inside the convolution (Qwen-Image 2.1's too).
- `pointwise_conv_cache`: no conv_cache for time-kernel-1 causal convs (diffusers copies the whole input).
- `spatial_norm`: CogVideoXSpatialNorm3D's pointwise convs on the latents before upsampling, not after.
- `time_pool`: CogVideoXDownsample3D's frame averaging without merging width into the batch axis.
- `tile_mask`: edge tiles at the full tile shape, with convolutions and GroupNorm limited to the valid region.
- `sharding_marks`: NCTHW activations split on width over a ('dp', 'tp') mesh while tracing for one.
- `ltx_noise`: LTX-Video 0.9.1's injected decoder noise as program inputs the caller draws with torch's generator.
- `causal_mask`: HunyuanVideo 1.5's frame-causal attention mask from one index comparison, not a Python loop
  of one write per token.
- `torch_accelerator`: torchax's "jax" device reported as unavailable to torch, which cannot use it (torchax
  made it torch's accelerator on machines without CUDA, and every `torch.compile` in the process failed);
  applied once per process by torchax_vae/engine/process.py.
- `wan_upsample`: WanUpsample's (and QwenImageUpsample's) cast back to bf16 through `.to` (torchax 0.0.13's
  `type_as` works in place).

The patched layers read what a trace is for (CPU kernels, mesh, tile extent) from one
frozen `options.TraceOptions` the lowering sets around each trace.

Each patch replaces modules by class, so `apply` fits any family: a model without a patch's
classes gets none of it (a Wan model gets `frame_conv`, `sharding_marks` and `wan_upsample`).
Which layers carry sharding marks is the family's knowledge, so its adapter passes them (`marked`).
"""

from torch import nn

from torchax_vae.patches import (
    antialias_resize,
    attention_split,
    causal_mask,
    frame_conv,
    gpu_conv,
    group_norm,
    halo_conv,
    hann_window,
    keyword_linear,
    ltx_noise,
    nearest_upsample,
    options,
    pointwise_conv_cache,
    safe_conv3d,
    sharding_marks,
    spatial_norm,
    tile_mask,
    time_pool,
    wan_upsample,
    weight_norm,
    zero_history,
)
from torchax_vae.patches.torchax_torch213 import import_torchax

__all__ = ["apply", "import_torchax"]


def apply(model: nn.Module, marked: tuple = ()) -> dict[str, int]:
    """Patches `model` (a private copy: its classes change), makes torchax importable, routes its
    convolution lowering through `gpu_conv` (once per process; stock outside GPU traces) and its nearest
    upsampling through `nearest_upsample` and its attention through `attention_split` (once per process).

    marked: the layer classes whose activations get sharding marks (each family's adapter says which).
    Returns how many modules each patch replaced.
    """
    import_torchax()
    gpu_conv.patch()
    nearest_upsample.patch()
    attention_split.patch()
    keyword_linear.patch()
    hann_window.patch()
    weight_norm.patch()
    antialias_resize.patch()
    return {
        "group_norm": group_norm.patch(model),
        "safe_conv3d": safe_conv3d.patch(model),
        "frame_conv": frame_conv.patch(model),  # after safe_conv3d: it refines PlainConv3d
        "zero_history": zero_history.patch(model),  # after frame_conv: it refines the causal classes it made
        "pointwise_conv_cache": pointwise_conv_cache.patch(model),
        "spatial_norm": spatial_norm.patch(model),  # after pointwise_conv_cache: it needs cache-less conv_y, conv_b
        "time_pool": time_pool.patch(model),
        "tile_mask": tile_mask.patch(model),  # after safe_conv3d, frame_conv and time_pool: it refines their classes
        "sharding_marks": sharding_marks.patch(model, marked),  # hooks on the classes the others set
        "wan_upsample": wan_upsample.patch(model),
        "ltx_noise": ltx_noise.patch(model),
        "causal_mask": causal_mask.patch(model),
        "halo_conv": halo_conv.patch(model),
    }
