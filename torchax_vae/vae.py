"""TorchaxVAE: a diffusers video VAE run on JAX through torchax, with diffusers' interface.

This module holds what every model family shares: dtype and device handling,
slicing, input checks, the compiled-program cache, encode/decode/forward and
precompile. How a video is cut into encoder and decoder calls, and everything
else a family's diffusers class decides, lives in its adapter module under
`torchax_vae.models` (a subclass of `TorchaxVAE`); `TorchaxVAE(vae)` picks it
from the type of `vae`.
"""

import dataclasses
import functools
import json
import logging
import pathlib

import jax
import jax.numpy as jnp
import torch
from diffusers import ConfigMixin, ModelMixin
from diffusers.models.autoencoders.vae import DecoderOutput, DiagonalGaussianDistribution
from diffusers.models.modeling_outputs import AutoencoderKLOutput
from jax.sharding import Mesh
from torch import nn

from . import cache, convert, gradients, memory, process, progress, validation, weights
from .backends import compiler_options
from .mesh import Placement, check_mesh
from .programs import LoweredOnly, Programs
from .stored import ProgramStore
from .sources import DeviceSource, HostSource, ShapeSource, is_abstract

logger = logging.getLogger(__name__)

_DTYPE_NAMES = {
    "fp32": torch.float32,
    "float32": torch.float32,
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
    "fp16": torch.float16,
    "float16": torch.float16,
}


def _as_dtype(dtype) -> torch.dtype | None:
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, str) and dtype.removeprefix("torch.") in _DTYPE_NAMES:
        return _DTYPE_NAMES[dtype.removeprefix("torch.")]
    raise TypeError(f"dtype must be a torch.dtype or one of {sorted(_DTYPE_NAMES)}, got {dtype!r}")


def _is_torchax(x) -> bool:
    return getattr(x, "_elem", None) is not None and isinstance(x._elem, jax.Array)


def _like(out: jax.Array, x: torch.Tensor) -> torch.Tensor:
    """out as a tensor like the caller's x: a torchax tensor on the device, or a torch tensor on x's device."""
    if _is_torchax(x):
        return x._env.j2t_iso(out.astype(convert.jax_dtype(x.dtype)))
    return convert.to_torch(out, device=x.device, dtype=x.dtype)


def vae_subfolder(name_or_path, subfolder: str | None) -> str | None:
    """`subfolder`, or None where a local folder holds the VAE itself (its config.json at the top)."""
    local = pathlib.Path(name_or_path).expanduser()
    if subfolder and local.is_dir() and not (local / subfolder).is_dir() and (local / "config.json").is_file():
        return None
    return subfolder


class TorchaxVAE(ModelMixin, ConfigMixin):
    """A diffusers video VAE lowered to JAX through torchax; a drop-in for `pipe.vae`.

    `TorchaxVAE(vae)` returns the wrapper for the family of `vae` (see
    `torchax_vae.models`): `AutoencoderKLCogVideoX`, `AutoencoderKLWan`, `AutoencoderKLQwenImage`,
    `AutoencoderKLHunyuanVideo`, `AutoencoderKLHunyuanVideo15`, `AutoencoderKLLTXVideo`,
    `AutoencoderKLLTX2Video`, `AutoencoderKLQwenImage21`, `AutoencoderKLAllegro`, `AutoencoderKLMochi`,
    `AutoencoderKLCosmos` or `AutoencoderKLMagvit`.

    The PyTorch module passed in is left untouched and keeps working: its weights
    are copied to the JAX device, and a private, storage-less copy of its module
    tree (with the family's patches) is what gets traced. Each encoder or
    decoder call of diffusers' own loop runs as a jitted program compiled once
    per input shape; the causal-convolution cache stays on the device between
    calls.

    Args:
        vae: the diffusers model to run.
        dtype (`torch.dtype`, *optional*): compute dtype; defaults to the model's.
        memory_budget (`int`, *optional*): bytes the "auto" tiling mode lets one
            program use (per device); by default what the device reports free.
        mesh (`jax.sharding.Mesh`, *optional*): run on all its devices, axes ('dp', 'tp')
            (`torchax_vae.make_mesh()`): weights replicated, activations split on
            their width axis (batch over 'dp' when it divides).
    """

    # Set by each family's adapter (torchax_vae.models).
    model_class: type = None
    config_name = "config.json"  # ConfigMixin: the wrapped model's config, in diffusers' file
    # enable_gradient_checkpointing works for every family (jax.checkpoint on each program), whatever the
    # wrapped class says (diffusers' AutoencoderKLWan and AutoencoderKLQwenImage say False)
    _supports_gradient_checkpointing = True
    # How the family's pipelines hold latents (output_type="latent"): the transformer's layout.
    pipeline_layout: str = "BCFHW"
    # What `decode` returns, as the wrapped class returns it (AutoencoderKLAllegro: [B, F, C, H, W]).
    decoded_layout: str = "BCFHW"
    # What `encode` returns the encoder's output as, as the wrapped class does (AutoencoderKLCosmos: its identity).
    posterior_class: type = DiagonalGaussianDistribution

    def __new__(cls, vae=None, *args, **kwargs):
        if isinstance(vae, TorchaxVAE):
            raise TypeError(f"vae is a TorchaxVAE already (of a {vae.model_class.__name__}): use it as it is")
        if cls is TorchaxVAE:
            from .models import wrapper_for

            cls = wrapper_for(vae)
        return super().__new__(cls)

    def __init__(
        self,
        vae: nn.Module,
        *,
        dtype: torch.dtype | str | None = None,
        memory_budget: int | None = None,
        mesh: Mesh | None = None,
    ):
        if not isinstance(vae, self.model_class):
            raise TypeError(f"vae must be a diffusers {self.model_class.__name__}, got {type(vae).__name__}")
        if memory_budget is not None and (not isinstance(memory_budget, int) or memory_budget <= 0):
            raise ValueError(f"memory_budget must be a positive number of bytes, got {memory_budget!r}")
        super().__init__()  # a ModelMixin, so pipelines cast, save and offload it (see `save_pretrained`)
        self._dtype = _as_dtype(dtype) or vae.dtype
        process.start()  # the process-wide changes, once, before the first device query starts JAX's backends
        self._device = vae.device
        self._internal_dict = vae.config  # ConfigMixin's `config`: the wrapped model's (register_to_config copies)
        self._placement = Placement(None if mesh is None else check_mesh(mesh))
        # compiled programs, and (unless the caches are off) traced programs kept on disk for the next process
        self._programs = Programs(store=ProgramStore.for_model(cache.for_api(), vae))
        self.compile_effort = "auto"
        self.memory_budget = memory_budget
        self.use_slicing = vae.use_slicing
        # diffusers' flag on: tile every input larger than a tile; off: "auto", tile what would not fit
        self.tiling_mode = "on" if vae.use_tiling else "auto"
        self._auto_tiling_logged = False
        self._entries = weights.layout(vae)  # the wrapped model's tensor names, for state_dict and friends
        self._stochastic = stochastic_layers(vae)
        self.train(vae.training)

    @property
    def __class__(self):
        """What `isinstance` sees: the adapter's class and the wrapped diffusers class, both.

        Pipelines branch on their VAE's class (`SanaVideoPipeline`: `isinstance(self.vae, AutoencoderKLWan)` picks
        the latent de-normalization), so a TorchaxVAE must pass for the class it wraps. Python's `isinstance`
        asks `__class__` when the type itself does not match (as `unittest.mock` relies on): this reports a
        class deriving from both, named as the adapter (so diffusers' `model_index.json` still names the
        adapter, and a saved pipeline loads it back). Only `isinstance` and names read it; methods and
        attributes resolve on `type(self)`, the adapter, so none of the diffusers class's methods runs on a
        TorchaxVAE.
        """
        return _reported_class(type(self))

    @classmethod
    def from_pretrained(
        cls, name_or_path: str, subfolder: str | None = "vae", dtype=None, mesh: Mesh | None = None, **kwargs
    ) -> "TorchaxVAE":
        """Loads the VAE through diffusers (a local directory works offline) and wraps it.

        The class is read from the VAE folder's config (`_class_name`); it must be
        one `TorchaxVAE` supports. A folder `pipe.save_pretrained` wrote from a
        pipeline holding a TorchaxVAE works too (its `vae/` is diffusers' format).

        Args:
            name_or_path (`str`): hub id or local directory, as for diffusers' `from_pretrained`.
            subfolder (`str`, *optional*, defaults to `"vae"`): the VAE's folder inside it.
            dtype (`torch.dtype`, *optional*): compute dtype; the checkpoint's by default.
            mesh (`jax.sharding.Mesh`, *optional*): as for the constructor.
            kwargs: passed to the model class's `from_pretrained`.
        """
        from .models import load_diffusers

        vae = load_diffusers(name_or_path, subfolder, None if cls is TorchaxVAE else cls.model_class, **kwargs)
        return cls(vae, dtype=dtype, mesh=mesh)

    # ----- ConfigMixin: the wrapped model's config -----

    @classmethod
    def _config_class(cls, config) -> type:
        """The diffusers class a config is for: this wrapper's, or (on TorchaxVAE) the one its `_class_name` names."""
        if cls.model_class is not None:
            return cls.model_class
        from .models import wrapper_for_config

        name = dict(config).get("_class_name")
        if not name:
            raise ValueError("this config has no `_class_name` (a saved config.json has one) to say which VAE it is "
                             "for: call this on the family's class, e.g. type(vae), or add the name")
        return wrapper_for_config(name).model_class

    @classmethod
    def from_config(cls, config=None, return_unused_kwargs: bool = False, **kwargs):
        """A TorchaxVAE of a new diffusers model (random weights) built from `config`, as the class's `from_config`.

        `dtype` and `mesh` go to TorchaxVAE; the other `kwargs` to the diffusers class's `from_config`.
        """
        options = {key: kwargs.pop(key) for key in ("dtype", "mesh", "memory_budget") if key in kwargs}
        if config is None:
            raise ValueError("from_config needs a config (a dict, or a model's .config)")
        made = cls._config_class(config).from_config(config, return_unused_kwargs=return_unused_kwargs, **kwargs)
        model, unused = made if return_unused_kwargs else (made, None)
        wrapped = TorchaxVAE(model.eval(), **options)  # a new model; diffusers leaves its dropout layers training
        return (wrapped, unused) if return_unused_kwargs else wrapped

    @classmethod
    def extract_init_dict(cls, config_dict, **kwargs):
        """The wrapped class's split of a config into its `__init__` arguments and the rest."""
        return cls._config_class(config_dict).extract_init_dict(config_dict, **kwargs)

    def to_json_string(self) -> str:
        """The config as JSON, naming the wrapped diffusers class (so that diffusers alone loads it)."""
        # ConfigMixin's writer, on a config holder named as the wrapped class (it writes its class's name)
        holder = type(self.model_class.__name__, (ConfigMixin,), {"config_name": self.config_name})()
        holder._internal_dict = dict(self._internal_dict)
        return holder.to_json_string()

    def save_pretrained(
        self, save_directory, safe_serialization: bool = True, variant: str | None = None,
        max_shard_size: int | str = "10GB", **kwargs,
    ) -> None:
        """Writes the wrapped diffusers model's folder, with the weights this TorchaxVAE computes with.

        config.json names diffusers' class (`AutoencoderKLWan`, ...), so diffusers
        alone loads the folder; `pipe.save_pretrained` calls this for `pipe.vae`.
        The weights are in this TorchaxVAE's dtype, as diffusers saves a cast model.
        """
        self.diffusers_model().save_pretrained(
            save_directory, safe_serialization=safe_serialization, variant=variant, max_shard_size=max_shard_size, **kwargs
        )

    def diffusers_model(self) -> nn.Module:
        """A new diffusers model of the wrapped class on the CPU, holding copies of this TorchaxVAE's weights."""
        with torch.device("meta"):
            model = self.model_class.from_config(self.config)
        # the wrapped model's own names (top-level buffers too: LTX's latents_mean), copies the user owns
        state = weights.state_dict(self._weights, self._entries, torch.device("cpu"))
        model.load_state_dict(state, strict=True, assign=True)
        return model.eval()

    # ----- what each family defines -----

    @property
    def video_channels(self) -> int:
        """Channels of the videos `encode` takes and `decode` returns."""
        raise NotImplementedError

    @property
    def latent_channels(self) -> int:
        """Channels of the latents `decode` takes (the mean's, for `encode`'s posterior)."""
        raise NotImplementedError

    @property
    def spatial_compression_ratio(self) -> int:
        """How many video pixels one latent spans in height and width (encode inputs come in multiples of it)."""
        raise NotImplementedError

    def latent_shape(self, video_shape) -> tuple[int, ...]:
        """[B, C, F, H, W] of the latents of a video of `video_shape` [B, C, F, H, W]."""
        raise NotImplementedError

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """The posterior's latents as this family's pipelines hand them to the transformer."""
        raise NotImplementedError

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """`scale_latents` undone, as the pipelines do before `decode`."""
        raise NotImplementedError

    def decode_inputs(self, latents: torch.Tensor, *, timestep=None, noise_scale=None, seed: int = 0):
        """(latents, decode's further arguments) as the family's pipeline hands them to `decode` at stage 3.

        Families whose decoder takes a timestep (LTX) mix in noise and make it; the others take none and
        refuse one (ValueError).
        """
        if timestep is not None or noise_scale is not None:
            raise ValueError(f"a decode timestep applies to timestep-conditioned decoders (LTX-Video 0.9.1 and "
                             f"later); this {self.model_class.__name__}'s decoder takes none")
        return latents, ()

    def _encode(self, source, tiled: bool | None = None) -> jax.Array:
        """The posterior's parameters (mean and logvar on channels) of one batch, a JAX array (or its shape).

        tiled: True tiles whatever the size and settings (`tiled_encode`); None follows `tiling_mode`.
        """
        raise NotImplementedError

    def _decode(self, source, tiled: bool | None = None) -> jax.Array:
        raise NotImplementedError

    def _check_video(self, shape, name: str) -> None:
        """Further family-specific checks of an encode input's shape (ValueError)."""

    def _check_latents(self, shape, name: str) -> None:
        """Further family-specific checks of a decode input's shape (ValueError)."""

    # ----- what pipelines and users touch besides encode/decode -----

    @property
    def dtype(self) -> torch.dtype:
        return self._dtype

    @property
    def device(self) -> torch.device:
        """The torch device the wrapped model was on; results go to the caller's input device."""
        return self._device

    def to(self, *args, **kwargs) -> "TorchaxVAE":
        """Like `nn.Module.to`: a dtype recasts the JAX weights; a device is recorded, compute stays on JAX."""
        device, dtype, _, _ = torch._C._nn._parse_to(*args, **kwargs)
        if device is not None:
            self._device = torch.device(device)
        if dtype is not None and dtype != self._dtype:
            target = convert.jax_dtype(dtype)
            self._weights = jax.tree.map(lambda w: w.astype(target), self._weights)
            self._dtype = dtype
        return self

    def float(self) -> "TorchaxVAE":
        return self.to(torch.float32)

    def bfloat16(self) -> "TorchaxVAE":
        return self.to(torch.bfloat16)

    def half(self) -> "TorchaxVAE":
        return self.to(torch.float16)

    # ----- the torch module surface: weights, training state (torchax_vae/weights.py, gradients.py) -----

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False) -> dict:
        """The wrapped model's state_dict (its keys and shapes), holding copies of the weights this computes with.

        Copies on `self.device`, made by this call: editing them changes nothing
        here (`load_state_dict` does). While held they take one model's worth of
        memory (705 M parameters of Wan 2.2: 2.8 GB in fp32, 1.4 GB in bf16).
        A wrapper of a meta-device model gives meta tensors.
        """
        if args:  # torch's deprecated positional (destination, prefix, keep_vars)
            destination, prefix = (list(args) + [destination, prefix])[:2]
        return weights.state_dict(self._weights, self._entries, self._copy_device(), prefix, destination)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Replaces the weights by those of `state_dict` (the wrapped model's keys), as `nn.Module.load_state_dict`.

        Keys and shapes are checked first, under torch's rules: with `strict`, a
        missing or unexpected key raises RuntimeError; a wrong shape always does;
        either way no weight changes. Floating-point tensors are cast to this
        wrapper's dtype. The next call computes with the new weights without
        compiling anything. `assign` is accepted for torch's signature: the
        tensors are always copied to the JAX device.

        Returns:
            `NamedTuple` with `missing_keys` and `unexpected_keys`, as torch.
        """
        return weights.load(self._weights, self._entries, state_dict, strict=strict,
                            dtype=convert.jax_dtype(self._dtype), sharding=self._placement.replicated,
                            owner=type(self).__name__)

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """The wrapped model's parameters as `nn.Parameter` copies on `self.device`, one made per step.

        `next(vae.parameters())` costs one small copy; `num_parameters()` counts
        them all. They do not require grad: gradients flow to inputs, not weights.
        """
        yield from weights.named(self._weights, self._entries, self._copy_device(), parameters=True, prefix=prefix)

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """The wrapped model's buffers, as copies (see `named_parameters`)."""
        yield from weights.named(self._weights, self._entries, self._copy_device(), parameters=False, prefix=prefix)

    def _copy_device(self) -> torch.device:
        return torch.device("meta") if is_abstract(self._weights) else self._device

    def requires_grad_(self, requires_grad: bool = True) -> "TorchaxVAE":
        """`requires_grad_(False)` (freezing the VAE, as training scripts do) is what a TorchaxVAE always is.

        Gradients reach a TorchaxVAE's inputs (`encode`'s video, `decode`'s
        latents), never its weights, so `requires_grad_(True)` raises.
        """
        if requires_grad:
            raise NotImplementedError(
                "a TorchaxVAE computes gradients for its inputs only, not for its weights (they are constants of "
                "the JAX programs); fine-tune the diffusers model in PyTorch, then load_state_dict its weights here"
            )
        return self

    def train(self, mode: bool = True) -> "TorchaxVAE":
        """Sets `training`, as torch does; the programs compute the same in both modes.

        They are traced in eval mode, which is the same computation for models
        without dropout (p > 0) or batch norm: every released CogVideoX and Wan VAE.
        Training mode on a model with such layers raises.
        """
        if mode and self._stochastic:
            raise ValueError(
                f"this model has layers that differ in training mode ({', '.join(self._stochastic[:3])}); a "
                "TorchaxVAE computes in eval mode: call .eval(), or run the diffusers model in PyTorch to train it"
            )
        self.training = bool(mode)
        return self

    def eval(self) -> "TorchaxVAE":
        return self.train(False)

    def enable_gradient_checkpointing(self, gradient_checkpointing_func=None) -> None:
        """Trades compute for memory in the backward pass, as diffusers' does.

        Each program keeps only its inputs for the backward pass and runs again
        there (`jax.checkpoint`), instead of keeping its activations.
        `gradient_checkpointing_func` (a torch function) cannot apply to JAX programs.
        """
        if gradient_checkpointing_func is not None:
            raise ValueError("a TorchaxVAE checkpoints its JAX programs with jax.checkpoint; "
                             "gradient_checkpointing_func (a torch function) cannot apply: leave it None")
        self.gradient_checkpointing = True

    def disable_gradient_checkpointing(self) -> None:
        self.gradient_checkpointing = False

    @property
    def gradient_checkpointing(self) -> bool:
        return self._programs.checkpoint

    @gradient_checkpointing.setter
    def gradient_checkpointing(self, value: bool) -> None:
        self._programs.checkpoint = bool(value)

    def modules(self):
        """Like `nn.Module.modules()`: this wrapper alone (its weights live in JAX, in no torch submodule).

        diffusers' `get_module_execution_device` walks it looking for offload hooks, then reads `device`.
        """
        yield self

    def enable_slicing(self) -> None:
        """Encode and decode one batch element at a time."""
        self.use_slicing = True

    def disable_slicing(self) -> None:
        self.use_slicing = False

    # ----- tiling mode, shared by the families (each has diffusers' enable_tiling arguments) -----

    @property
    def tiling_mode(self) -> str:
        """"on", "off", or "auto" (tile an input larger than a tile only when it would not fit untiled)."""
        return self._tiling

    @tiling_mode.setter
    def tiling_mode(self, mode: str) -> None:
        if mode not in ("on", "off", "auto"):
            raise ValueError(f"tiling_mode must be 'on', 'off' or 'auto', got {mode!r}")
        self._tiling = mode

    @property
    def use_tiling(self) -> bool:
        """diffusers' flag: True when tiling is forced on."""
        return self._tiling == "on"

    @use_tiling.setter
    def use_tiling(self, value: bool) -> None:
        self._tiling = "on" if value else "off"

    def disable_tiling(self) -> None:
        """Never tile (mode "off"), even where the untiled programs would not fit."""
        self.tiling_mode = "off"

    def _should_tile(self, name: str, need, shape, tile) -> bool:
        """Whether to tile an input larger than a tile: "on"/"off" as set; in "auto", if the untiled call would not fit.

        need: a function giving the bytes the untiled call needs (it compiles programs, so only "auto" calls it).
        """
        if self._tiling != "auto":
            return self._tiling == "on"
        budget = self.memory_budget
        if budget is None:
            budget = memory.free_bytes(self._placement.local_device())
        if budget is None:
            return False
        with self._programs.probe():
            try:
                needed = need()
            except jax.errors.JaxRuntimeError as error:  # libtpu refuses to compile what cannot fit its HBM
                if "RESOURCE_EXHAUSTED" not in str(error):
                    raise
                needed = float("inf")
        if needed <= budget:
            return False
        if not self._auto_tiling_logged:
            logger.warning(
                "TorchaxVAE: the untiled %s needs %.3g GB for input %s, more than the %.3g GB available; "
                "tiling it in %dx%d tiles. enable_tiling()/disable_tiling() force the choice.",
                name, needed / 1e9, tuple(shape), budget / 1e9, *tile,
            )
            self._auto_tiling_logged = True
        return True

    @property
    def compile_effort(self):
        """How hard XLA optimizes each program: "auto" (the default), or XLA's `exec_time_optimization_effort`
        from -1.0 (fastest compile) to 1.0 (0.0: XLA's own default).

        "auto" is -0.5 on TPUs and XLA's default elsewhere. libtpu spends about 3 s per convolution at its
        default effort: CogVideoX's first 480x720 decoder batch compiled in 135 s for v6e-8, at -0.5 in 34 s,
        with the same FLOPs and fewer bytes accessed by XLA's count (compiled offline; speed on a TPU
        unmeasured: docs/tpu.md). Set 0.0 for XLA's full effort. Programs compiled before a change are kept.
        """
        return self._compile_effort

    @compile_effort.setter
    def compile_effort(self, effort) -> None:
        if effort != "auto" and not (isinstance(effort, (int, float)) and not isinstance(effort, bool)
                                     and -1.0 <= effort <= 1.0):
            raise ValueError(f"compile_effort must be 'auto' or a number from -1.0 to 1.0, got {effort!r}")
        self._compile_effort = effort
        self._programs.compiler_options = compiler_options(self._placement.local_device().platform, effort)

    def compile_stats(self) -> list[dict]:
        """One dict per compiled program: name, input_shapes, lower/compile seconds, devices, flops, temp_bytes."""
        return self._programs.stats()

    # ----- encode / decode -----

    def encode(self, x: torch.Tensor, return_dict: bool = True):
        """Encodes videos [B, C, F, H, W] into a `DiagonalGaussianDistribution` (`posterior_class`), as diffusers does.

        Differentiable: when `x` requires grad, so does the posterior (torchax_vae/gradients.py).
        """
        posterior = self.posterior_class(self._encode_with(x, "encode"))
        return AutoencoderKLOutput(latent_dist=posterior) if return_dict else (posterior,)

    def decode(self, z: torch.Tensor, return_dict: bool = True):
        """Decodes latents [B, C, F, H, W] into videos, as diffusers does; differentiable like `encode`."""
        validation.check_video(z, name="decode input", channels=self.latent_channels, role="decoder")
        self._check_latents(tuple(z.shape), "decode input")
        sample = self._compute(functools.partial(self._per_sample, self._decode), z)
        return DecoderOutput(sample=sample) if return_dict else (sample,)

    def tiled_encode(self, x: torch.Tensor) -> torch.Tensor:
        """diffusers' `tiled_encode`: the posterior's parameters (moments) of `x`, tiled whatever its size or the settings.

        Tiles with the `enable_tiling` settings; no slicing, as diffusers'.
        """
        return self._encode_with(x, "tiled_encode", tiled=True)

    def _encode_with(self, x: torch.Tensor, name: str, tiled: bool | None = None, **options) -> torch.Tensor:
        """The moments of `x` (checked first as `name`'s input), sliced per video unless `tiled` (as diffusers'
        tiled_encode); options: the family's encoder program options (LTX-2's `causal`), given to `_encode`."""
        validation.check_video(x, name=f"{name} input", channels=self.video_channels, role="encoder")
        self._check_video(tuple(x.shape), f"{name} input")
        encode = functools.partial(self._encode, **options)
        if tiled:
            return self._compute(functools.partial(encode, tiled=True), x)
        return self._compute(functools.partial(self._per_sample, encode), x)

    def tiled_decode(self, z: torch.Tensor, return_dict: bool = True):
        """diffusers' `tiled_decode`: `z` decoded in tiles whatever its size or the settings (no slicing)."""
        validation.check_video(z, name="tiled_decode input", channels=self.latent_channels, role="decoder")
        self._check_latents(tuple(z.shape), "tiled_decode input")
        sample = self._compute(functools.partial(self._decode, tiled=True), z)
        return DecoderOutput(sample=sample) if return_dict else (sample,)

    def forward(self, sample: torch.Tensor, sample_posterior: bool = False, return_dict: bool = True, generator=None):
        """Encode then decode, as diffusers' VAEs' `forward`."""
        posterior = self.encode(sample).latent_dist
        z = posterior.sample(generator=generator) if sample_posterior else posterior.mode()
        dec = self.decode(z).sample
        return DecoderOutput(sample=dec) if return_dict else (dec,)

    __call__ = forward

    def precompile(self, kind: str, shape) -> list[dict]:
        """Compiles, without running anything, every program `encode` or `decode` needs for an input of `shape`.

        Follows the current tiling and slicing settings. Returns those programs'
        `compile_stats()` entries; later calls with that shape compile nothing.
        A pipeline that will decode at a known size can call this first, so that
        the first video does not pay the compilation (docs/performance.md, "The first call").

        Args:
            kind (`str`): `"encode"` or `"decode"`.
            shape (`tuple[int, ...]`): the input's [batch, channels, frames, height, width].
        """
        source = self._shape_source(kind, shape)
        with self._programs.recording() as used:
            self._per_sample(self._encode if kind == "encode" else self._decode, source)
        return [dataclasses.asdict(stats) for stats in used]

    def output_shape(self, kind: str, shape) -> tuple[int, ...]:
        """The shape `encode` (of the posterior's moments) or `decode` gives for an input of `shape`; compiles as `precompile`."""
        source = self._shape_source(kind, shape)
        return tuple(self._per_sample(self._encode if kind == "encode" else self._decode, source).shape)

    def lower(self, kind: str, shape, platform: str | None = None) -> dict[str, str]:
        """The StableHLO of every program `encode` or `decode` runs for an input of `shape`, lowered for `platform`.

        Traces and lowers without compiling or running, so a machine without that
        backend can check what it would get (tests/test_gpu_conv.py lowers every
        released size for "cuda" on a CPU). Follows the tiling and slicing
        settings, except that "auto" tiling lowers the untiled programs (its
        memory check needs a compilation). A model on the meta device works here.

        Args:
            kind (`str`): `"encode"` or `"decode"`.
            shape (`tuple[int, ...]`): the input's [batch, channels, frames, height, width].
            platform (`str`, *optional*): a JAX lowering platform ("cuda", "rocm", "tpu", "cpu");
                by default this TorchaxVAE's device's.
        Returns:
            program name -> StableHLO text, in first-use order.
        """
        source = self._shape_source(kind, shape)
        platform = platform or self._lowered.platform
        programs, default = LoweredOnly(platform), (self._programs, self._lowered.platform)
        self._programs, self._lowered.platform = programs, platform  # the adapter's traces read the platform
        try:
            self._per_sample(self._encode if kind == "encode" else self._decode, source)
        finally:
            self._programs, self._lowered.platform = default
        return programs.texts

    def plan(self, kind: str, shape, target: str = "v6e-8", *, dp: int = 1, observer=None):
        """Compiles offline, for an accelerator this machine need not have, what `encode`/`decode` would run there.

        A twin of this TorchaxVAE (its config on the meta device, its settings) on a mesh of the target's
        abstract devices compiles the same programs a run there would; nothing runs. Returns a
        `torchax_vae.plan.Plan`: per program its runs per call, compile seconds, per-chip memory and FLOPs; per
        call the peak per chip against the chip's memory (`fits`), sharding efficiency and a roofline bound.
        Figures are compiled offline, never measured speed (docs/plan.md).

        Args:
            kind (`str`): `"encode"` or `"decode"`.
            shape (`tuple[int, ...]`): the input's [batch, channels, frames, height, width].
            target (`str`): "v6e-8", "v5e-4", "v5p-8", "v4-8", a libtpu topology ("v6e:2x4"), "h100", "h100x8", "h200".
            dp (`int`): the mesh's 'dp' rows, a divisor of the target's device count.
            observer: called (program name, None) before and (name, stats) after each compile.
        """
        from .plan import plan

        return plan(self, kind, shape, target, dp=dp, observer=observer)

    def _shape_source(self, kind: str, shape) -> ShapeSource:
        """The shape-only source of an encode or decode input of `shape`, checked as a real input would be."""
        if kind not in ("encode", "decode"):
            raise ValueError(f"kind must be 'encode' or 'decode', got {kind!r}")
        role = "encoder" if kind == "encode" else "decoder"
        channels = self.video_channels if kind == "encode" else self.latent_channels
        shape = validation.check_shape(shape, name=f"{kind} shape", channels=channels, role=role)
        if kind == "encode":
            self._check_video(shape, f"{kind} shape")
        else:
            self._check_latents(shape, f"{kind} shape")
        return ShapeSource(shape, convert.jax_dtype(self._dtype), self._placement)

    def _compute(self, run, x: torch.Tensor) -> torch.Tensor:
        """run (over a source of x) as a tensor like x; differentiable with respect to x when x requires grad."""
        self._check_weights()
        if not (x.requires_grad and torch.is_grad_enabled()):
            return _like(run(self._source(x)), x)
        if _is_torchax(x):
            raise NotImplementedError(
                "gradients through a TorchaxVAE flow to torch tensors (CPU or CUDA); this input is a torchax "
                "tensor that requires grad: pass a torch tensor, or detach it"
            )
        dtype = convert.jax_dtype(self._dtype)
        start = convert.to_jax(x.detach(), None, self._placement.activation(tuple(x.shape)))
        return gradients.vjp(lambda data: run(DeviceSource(data, dtype, self._placement)), start, x)

    def _check_weights(self) -> None:
        if is_abstract(self._weights):
            raise ValueError(
                "this TorchaxVAE wraps a model on the meta device: it has no weights to compute with "
                "(it can `lower` and `precompile`); wrap a model with real weights, or load_state_dict them"
            )

    def _source(self, x: torch.Tensor):
        dtype = convert.jax_dtype(self._dtype)
        if _is_torchax(x):
            return DeviceSource(x._elem, dtype, self._placement)
        return HostSource(x, dtype, self._placement)

    def _per_sample(self, fn, source, **per_sample):
        """Runs `fn` on the whole batch, or per batch element when slicing; a JAX array (or its shape).

        per_sample: further arguments of `fn` with the batch as their first axis (LTX's timesteps),
        split with the source when slicing; None passes through.
        """
        if not (self.use_slicing and source.shape[0] > 1):
            return fn(source, **per_sample)
        pieces = [(piece, {k: None if v is None else v[i : i + 1] for k, v in per_sample.items()})
                  for i, piece in enumerate(source.split())]
        outputs = [fn(piece, **kwargs) for piece, kwargs in pieces]
        if len(outputs) == 1:
            return outputs[0]
        return apply(join, outputs, axis=0)

    def _ran_batch(self, output) -> None:
        """Hands a queued encoder/decoder call's output (a JAX array or pytree, or its shapes) to the call's
        observer (torchax_vae/progress.py)."""
        progress.ran_batch(output)


@functools.cache
def _reported_class(adapter: type) -> type:
    """A class deriving from the adapter and its diffusers class, named as the adapter; never instantiated."""
    if adapter.model_class is None or issubclass(adapter, adapter.model_class):
        return adapter
    namespace = {"__module__": adapter.__module__, "__qualname__": adapter.__qualname__, "__doc__": adapter.__doc__}
    return type(adapter.__name__, (adapter, adapter.model_class), namespace)


def stochastic_layers(model: nn.Module) -> list[str]:
    """Names of the layers whose training mode computes otherwise than eval: dropout with p > 0, batch norm."""
    return [
        name for name, module in model.named_modules()
        if (isinstance(module, nn.modules.dropout._DropoutNd) and module.p > 0)
        or isinstance(module, nn.modules.batchnorm._BatchNorm)
    ]


def join(arrays, *, axis):
    return jnp.concatenate(arrays, axis=axis)


def apply(fn, *args, **static):
    """fn(*args, **static) on arrays, or its output's shape when args are jax.ShapeDtypeStruct."""
    if is_abstract(args):
        return jax.eval_shape(functools.partial(fn, **static), *args)
    return fn(*args, **static)
