"""The diffusers model as pure JAX functions of (weights, frames, conv_cache), through torchax.

The user's module is never changed: a structural copy of it whose tensors live
on torch's "meta" device (no memory) gets the patches, and its weights are
JAX arrays passed in at call time through `torch.func.functional_call`. The
diffusers forward code itself runs unmodified on torchax tensors.
"""

import contextlib
import copy
import functools
import itertools
import warnings

import jax
import torch
from torch import nn

from . import convert, patches, staging


def private_copy(model: nn.Module) -> nn.Module:
    """A deep copy of `model` whose parameters and buffers are storage-less meta tensors."""
    memo = {}
    for t in itertools.chain(model.parameters(), model.buffers()):
        meta = torch.empty_like(t, device="meta")
        memo[id(t)] = nn.Parameter(meta, requires_grad=False) if isinstance(t, nn.Parameter) else meta
    clone = copy.deepcopy(model, memo)
    clone.eval()
    return clone


def jax_weights(model: nn.Module, dtype, device=None) -> dict[str, dict[str, jax.Array]]:
    """Copies of the model's parameters and buffers as JAX arrays, grouped by top-level child."""
    grouped: dict[str, dict[str, jax.Array]] = {}
    for name, t in itertools.chain(model.named_parameters(), model.named_buffers()):
        child, _, rest = name.partition(".")
        cast = dtype if t.is_floating_point() else None
        grouped.setdefault(child, {})[rest] = convert.to_jax(t, cast, device)
    return grouped


@contextlib.contextmanager
def tracing(env, options):
    """The context a program of a patched model is traced in: torchax's `env`, the patches' `options`."""
    with patches.options.tracing(options), env, torch.no_grad(), warnings.catch_warnings():
        # torchax asks for torch's int64 index dtype; without jax_enable_x64 JAX makes it int32
        # (enough for any index here) and warns once per call site.
        warnings.filterwarnings("ignore", message="Explicitly requested dtype int64", category=UserWarning)
        yield


class LoweredVAE:
    """Patched private copy of an AutoencoderKLCogVideoX and its JAX step functions."""

    def __init__(self, vae: nn.Module, mesh=None, platform: str | None = None):
        self.model = private_copy(vae)
        self.patch_counts = patches.apply(self.model)
        self.env = patches.import_torchax().default_env()
        self.mesh = mesh  # activations are marked for this jax.sharding.Mesh (patches/sharding_marks.py)
        # the JAX platform the programs are for (default: JAX's default backend); picks CPU-only lowerings
        self.platform = platform or jax.default_backend()
        # stage modules of the encoder and decoder, for one program per block (torchax_vae/staging.py)
        self.stages = {role: staging.install(getattr(self.model, role)) for role in ("encoder", "decoder")}

    def _tracing(self, valid, size):
        options = patches.options.TraceOptions(
            cpu_kernels=patches.options.cpu_kernels_for(self.platform),
            mesh=self.mesh,
            tile_extent=None if valid is None else (valid, tuple(size)),
        )
        return tracing(self.env, options)

    def _call(self, child: str, weights, *args, **kwargs):
        module = getattr(self.model, child)
        return torch.func.functional_call(module, weights[child], args, kwargs)

    def encode_step(self, weights, frames, conv_cache, valid=None):
        """One encoder call on a frame batch: (moments, conv_cache), as JAX arrays.

        With `valid` (int32 [height, width]), frames is a zero-padded tile of which
        only that top-left region is real (patches/tile_mask.py).
        """
        weights, frames, conv_cache = self.env.j2t_iso((weights, frames, conv_cache))
        with self._tracing(valid, frames.shape[3:]):
            h, conv_cache = self._call("encoder", weights, frames, conv_cache=conv_cache)
            if self.model.quant_conv is not None:
                h = self._call("quant_conv", weights, h)
        return self.env.t2j_iso((h, conv_cache))

    def decode_step(self, weights, latents, conv_cache, valid=None):
        """One decoder call on a latent frame batch: (frames, conv_cache), as JAX arrays; `valid` as above."""
        weights, latents, conv_cache = self.env.j2t_iso((weights, latents, conv_cache))
        with self._tracing(valid, latents.shape[3:]):
            if self.model.post_quant_conv is not None:
                latents = self._call("post_quant_conv", weights, latents)
            frames, conv_cache = self._call("decoder", weights, latents, conv_cache=conv_cache)
        return self.env.t2j_iso((frames, conv_cache))

    # ----- one program per stage (torchax_vae/staging.py) -----

    def stage_weights(self, role: str, stage: staging.Stage, weights) -> dict:
        """The weights a stage's program reads: its top-level stage module's (named relative to it), and the quant conv."""
        subset = {role: staging.weights_of(stage.path, weights[role])}
        for child in ("post_quant_conv",) if role == "decoder" else ("quant_conv",):
            if child in weights:
                subset[child] = weights[child]
        return subset

    def encode_stage(self, stage, weights, frames, conv_cache, given, valid=None):
        """One stage of one encoder call: (its output, its conv_cache); given = (previous stage's, sub-stage's output)."""
        weights, frames, conv_cache, given = self.env.j2t_iso((weights, frames, conv_cache, given))
        weights = {**weights, "encoder": staging.rooted(stage.path, weights["encoder"])}
        stages = self.stages["encoder"]
        with self._tracing(valid, frames.shape[3:]):
            forward = functools.partial(self._call, "encoder", weights, frames, conv_cache=None)
            h, conv_cache = staging.run(stages, stage, *given, conv_cache, forward)
            if stage == stages[-1] and self.model.quant_conv is not None:
                h = self._call("quant_conv", weights, h)
        return self.env.t2j_iso((h, conv_cache))

    def decode_stage(self, stage, weights, latents, conv_cache, given, valid=None):
        """One stage of one decoder call: (its output, its conv_cache); given = (previous stage's, sub-stage's output)."""
        weights, latents, conv_cache, given = self.env.j2t_iso((weights, latents, conv_cache, given))
        weights = {**weights, "decoder": staging.rooted(stage.path, weights["decoder"])}
        with self._tracing(valid, latents.shape[3:]):
            if self.model.post_quant_conv is not None:  # the decoder's zq: every stage's spatial norms read it
                latents = self._call("post_quant_conv", weights, latents)
            forward = functools.partial(self._call, "decoder", weights, latents, conv_cache=None)
            h, conv_cache = staging.run(self.stages["decoder"], stage, *given, conv_cache, forward)
        return self.env.t2j_iso((h, conv_cache))
