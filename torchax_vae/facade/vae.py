"""TorchaxVAE: a diffusers VAE run on JAX through torchax, with diffusers' interface.

The facade: diffusers' interface (encode, decode, forward, tiling and slicing switches, config, saving) and the
torch module surface, over two objects it holds. Its `Engine` (torchax_vae/engine/runtime.py) is what computes: dtype,
placement, programs, weights, the tiling decision. Its `Family` (torchax_vae/facade/family.py) is what the wrapped
diffusers class decides: its facts and its encode and decode loops. Each adapter module under
`torchax_vae.models` holds a family and the facade class named for it (`WanVAE`, ...), which says which family
it holds and adds only where diffusers' class differs at its interface; `TorchaxVAE(vae)` picks it from the type
of `vae`.
"""

import dataclasses
import functools
import inspect
import logging
from collections.abc import Callable

import jax
import torch
from diffusers import ConfigMixin, ModelMixin
from diffusers.models.autoencoders.vae import DecoderOutput
from diffusers.models.modeling_outputs import AutoencoderKLOutput
from jax.sharding import Mesh
from torch import nn

from torchax_vae import cache, registry
from torchax_vae.engine import convert, gradients, process, validation, weights
from torchax_vae.engine.arrays import apply, is_abstract, join, join_chunks, side_by_side
from torchax_vae.facade.ahead import _TWIN, AheadOfTime
from torchax_vae.engine.runtime import Engine
from torchax_vae.facade.config import ConfigFacade
from torchax_vae.facade.family import Family
from torchax_vae.facade.loading import load_diffusers
from torchax_vae.engine.lowering import jax_weights
from torchax_vae.facade.module_surface import ModuleSurface
from torchax_vae.facade.streaming import Streaming
from torchax_vae.facade.policy import Policy
from torchax_vae.placement.mesh import Placement, check_mesh
from torchax_vae.engine.programs import Programs
from torchax_vae.engine.stored import ProgramStore
from torchax_vae.engine.sources import DeviceSource, HostSource

logger = logging.getLogger(__name__)

# What a facade class reports of its family, as class attributes (read where only the class is at hand: the
# command's layouts, `models.input_shape`, `isinstance`).
FAMILY_FACTS = ("model_class", "rank", "pipeline_layout", "decoded_layout", "posterior_class", "decode_draws_noise",
                "batch_is_frames")


class TorchaxVAE(Streaming, AheadOfTime, ConfigFacade, ModuleSurface, Policy, ModelMixin, ConfigMixin):
    """A diffusers VAE lowered to JAX through torchax; a drop-in for `pipe.vae`.

    `TorchaxVAE(vae)` returns the facade class for the family of `vae`: any diffusers class in
    torchax_vae/registry.py (`torchax_vae.FAMILIES` names them, with their labels), or a model of your own whose
    family is registered (docs/guide/api.md, "Your own VAE"). Video VAEs take [B, C, F, H, W], image VAEs
    [B, C, H, W], sound VAEs waveforms or spectrograms as diffusers' classes do; vocoders are called as
    diffusers' modules are.

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

    # The family this facade class holds (torchax_vae/facade/family.py); each adapter's class names its own, and gets
    # the family's FAMILY_FACTS as class attributes.
    family: type[Family] = None
    config_name = "config.json"  # ConfigMixin: the wrapped model's config, in diffusers' file
    # enable_gradient_checkpointing works for every family (jax.checkpoint on each program), whatever the
    # wrapped class says (diffusers' AutoencoderKLWan and AutoencoderKLQwenImage say False)
    _supports_gradient_checkpointing = True

    # What the wrapped diffusers class lacks, a facade class lacks too (`hasattr`, which pipelines ask, answers as for
    # the wrapped class): each facade class names its own, methods or the `use_tiling` / `use_slicing` flags.
    diffusers_lacks: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.family is not None:
            for name in FAMILY_FACTS:
                setattr(cls, name, getattr(cls.family, name))
        for name in dict.fromkeys(name for k in reversed(cls.__mro__) for name in vars(k).get("diffusers_lacks", ())):
            if name in ("use_tiling", "use_slicing"):
                setattr(cls, name, _missing_flag(name))
            else:
                found = inspect.getattr_static(cls, name)
                absent = where_diffusers_has(getattr(found, "method", found))
                absent.__set_name__(cls, name)
                setattr(cls, name, absent)

    def __new__(cls, vae=None, *args, **kwargs):
        if isinstance(vae, TorchaxVAE):
            raise TypeError(f"vae is a TorchaxVAE already (of a {vae.model_class.__name__}): use it as it is")
        if cls is TorchaxVAE:
            cls = registry.facade_for(vae)
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
        super().__init__()  # a ModelMixin, so pipelines cast, save and offload it (see `save_pretrained`)
        process.start()  # the process-wide changes, once, before the first device query starts JAX's backends
        self._device = weights.device_of(vae)
        self._internal_dict = weights.config_of(vae)  # ConfigMixin's `config`: the wrapped model's
        twin = _TWIN.get()  # what `_twin` builds this one for: another platform, its own program cache
        placement = Placement(None if mesh is None else check_mesh(mesh), platform=twin.get("platform"),
                              rows_only=self.family.rows_only)
        # compiled programs, and (unless the caches are off) traced programs kept on disk for the next process
        programs = twin.get("programs")  # (an empty cache is falsy: it has a __len__)
        if programs is None:
            programs = Programs(store=ProgramStore.for_model(cache.for_api(), vae))
        self._engine = Engine(convert.as_torch_dtype(dtype) or weights.compute_dtype_of(vae), placement, programs, memory_budget)
        self._engine.weights = jax_weights(vae, self._engine.jax_dtype, placement.replicated)
        self._family = self.family(vae, self._engine)
        if hasattr(vae, "use_slicing"):  # (AutoencoderKLTemporalDecoder has neither flag, and neither has its adapter)
            self.use_slicing = vae.use_slicing
        # diffusers' flag on: tile every input larger than a tile; off: "auto", tile what would not fit
        self.tiling_mode = "on" if getattr(vae, "use_tiling", False) else "auto"
        self._entries = weights.layout(vae)  # the wrapped model's tensor names, for state_dict and friends
        # its top-level submodules (True) and None ones (False: Flux's post_quant_conv), shown by `__getattr__`
        self._children = {name: module is not None for name, module in vae._modules.items()}
        self._children.update({name: False for name, value in vars(vae).items()
                               if value is None and not name.startswith("_") and name not in self._children})
        self._stochastic = [name for name in weights.stochastic_layers(vae) if name.split(".")[0] not in self._family.not_run]
        self._stochastic += self._family.training_differences(vae)
        self.train(vae.training)
        # a modular pipeline's loading spec (`ComponentSpec.load` tags what it loads): kept, so that
        # `pipe.update_components(vae=TorchaxVAE(pipe.vae))` keeps the VAE's repository and subfolder
        if getattr(vae, "_diffusers_load_id", "null") != "null":
            self._diffusers_load_id = vae._diffusers_load_id

    def __repr__(self) -> str:
        """The wrapped diffusers class and how it runs (its facade class's name is internal)."""
        devices = len(self._engine.placement.replicated.device_set)
        return (f"TorchaxVAE({self.model_class.__name__}, dtype={str(self.dtype).removeprefix('torch.')}, "
                f"devices={devices}, tiling={self.tiling_mode})")

    def __setattr__(self, name: str, value) -> None:
        """A family setting (`tile_sample_min_height`, ...: `family.settings`) goes to the family, whose loops read
        it; anything else is torch's."""
        family = self.__dict__.get("_family")
        if family is not None and name in family.settings:
            setattr(family, name, value)
        else:
            super().__setattr__(name, value)

    @property
    def _input_dtype(self) -> torch.dtype | None:
        """The dtype inputs must have (diffusers' models raise on another), or None where the wrapped class casts
        them itself (`Family.casts_inputs`)."""
        return None if self._family.casts_inputs else self.dtype

    @property
    def mesh(self) -> Mesh | None:
        """The ('dp', 'tp') mesh this runs on, or None for one device."""
        return self._engine.placement.mesh

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
        # a modular pipeline's spec holds the class `__class__` reports (never instantiated): its adapter builds
        cls = cls.__dict__.get("_reported_for", cls)
        vae = load_diffusers(name_or_path, subfolder, None if cls is TorchaxVAE else cls.model_class, **kwargs)
        return cls(vae, dtype=dtype, mesh=mesh)

    # ----- encode / decode -----

    def encode(self, x: torch.Tensor, return_dict: bool = True):
        """Encodes videos [B, C, F, H, W] into a `DiagonalGaussianDistribution` (`posterior_class`), as diffusers does.

        Differentiable: when `x` requires grad, so does the posterior (torchax_vae/engine/gradients.py).
        """
        posterior = self._posterior(x)
        return AutoencoderKLOutput(latent_dist=posterior) if return_dict else (posterior,)

    def _posterior(self, x: torch.Tensor):
        """x's posterior (`posterior_class`), whatever the wrapped class's `encode` returns it as (AutoencoderDC: the
        latents themselves): what the command and the service take latents from."""
        return self.posterior_class(self._encode_with(x, "encode"))

    def decode(self, z: torch.Tensor, return_dict: bool = True):
        """Decodes latents [B, C, F, H, W] into videos, as diffusers does; differentiable like `encode`."""
        return self._decoder_output(self._decode_call(z), return_dict)

    def _decode_call(self, z: torch.Tensor) -> "DecodeCall":
        """`decode`'s checks, and the loop it runs (`decode` joins its chunks, `decode_stream` hands them out).

        Each facade class whose `decode` takes other arguments has a `_decode_call` of the same arguments (less
        `return_dict`), which is what `decode_stream(z, *args, **kwargs)` calls."""
        validation.check_video(z, name="decode input", channels=self.latent_channels, role="decoder", rank=self.rank,
                                  dtype=self._input_dtype)
        self._family.check_latents(tuple(z.shape), "decode input")
        return self._prepare(functools.partial(self._per_sample, self._family.decode_chunks), z)

    def _prepare(self, chunks, x: torch.Tensor) -> "DecodeCall":
        """A decode whose input has passed its checks: the model's own checks, then the call as a value."""
        self._check_weights()
        self._family.check_training()
        return DecodeCall(chunks, x)

    def _joined(self, call: "DecodeCall") -> torch.Tensor:
        """A prepared decode run: its chunks joined on the frame axis, a tensor like its input (differentiable)."""
        axis = self._family.frame_axis
        return self._compute(lambda source: join_chunks(call.chunks(source), axis), call.x)

    def _decoder_output(self, call: "DecodeCall", return_dict: bool):
        sample = self._joined(call)
        return DecoderOutput(sample=sample) if return_dict else (sample,)

    def tiled_encode(self, x: torch.Tensor) -> torch.Tensor:
        """diffusers' `tiled_encode`: the posterior's parameters (moments) of `x`, tiled whatever its size or the settings.

        Tiles with the `enable_tiling` settings; no slicing, as diffusers'.
        """
        return self._encode_with(x, "tiled_encode", tiled=True)

    def _encode_with(self, x: torch.Tensor, name: str, tiled: bool | None = None, **options) -> torch.Tensor:
        """The moments of `x` (checked first as `name`'s input), sliced per video unless `tiled` (as diffusers'
        tiled_encode); options: the family's encoder program options (LTX-2's `causal`), given to `_encode`."""
        validation.check_video(x, name=f"{name} input", channels=self.video_channels, role="encoder", rank=self.rank,
                                  dtype=self._input_dtype)
        self._family.check_video(tuple(x.shape), f"{name} input")
        encode = functools.partial(self._family.encode, **options)
        if tiled:
            return self._compute(functools.partial(encode, tiled=True), x)
        return self._compute(functools.partial(self._per_sample, encode), x)

    def tiled_decode(self, z: torch.Tensor, return_dict: bool = True):
        """diffusers' `tiled_decode`: `z` decoded in tiles whatever its size or the settings (no slicing)."""
        validation.check_video(z, name="tiled_decode input", channels=self.latent_channels, role="decoder", rank=self.rank,
                                  dtype=self._input_dtype)
        self._family.check_latents(tuple(z.shape), "tiled_decode input")
        return self._decoder_output(self._prepare(functools.partial(self._family.decode_chunks, tiled=True), z),
                                    return_dict)

    def forward(self, sample: torch.Tensor, sample_posterior: bool = False, return_dict: bool = True, generator=None):
        """Encode then decode, as diffusers' VAEs' `forward`."""
        posterior = self.encode(sample).latent_dist
        z = posterior.sample(generator=generator) if sample_posterior else posterior.mode()
        dec = self.decode(z).sample
        return DecoderOutput(sample=dec) if return_dict else (dec,)

    __call__ = forward

    def _run_kind(self, kind: str, source):
        """encode's or decode's loop over a source, run to its end (decode's chunks joined): what precompile, lower
        and output_shape run on shapes."""
        return join_chunks(self._kind_chunks(kind, source), self._family.frame_axis)

    def _kind_chunks(self, kind: str, source):
        """encode's output or decode's chunks (sliced as `encode` and `decode` slice), as `_run_kind` runs them."""
        return self._per_sample(self._family.encode if kind == "encode" else self._family.decode_chunks, source)

    def _planned_run(self, kind: str, source):
        """What `plan` compiles for a job of `kind` (decode: its chunks): `_kind_chunks`, unless a family's
        pipelines always run another call (AsymmetricAutoencoderKL's conditioned decode)."""
        return self._kind_chunks(kind, source)

    def _shape_source(self, kind: str, shape):
        """The shape-only source of an encode or decode input of `shape`, checked as a real input would be."""
        if kind not in ("encode", "decode"):
            raise ValueError(f"kind must be 'encode' or 'decode', got {kind!r}")
        role = "encoder" if kind == "encode" else "decoder"
        channels = self.video_channels if kind == "encode" else self.latent_channels
        shape = validation.check_shape(shape, name=f"{kind} shape", channels=channels, role=role, rank=self.rank)
        if kind == "encode":
            self._family.check_video(shape, f"{kind} shape")
        else:
            self._family.check_latents(shape, f"{kind} shape")
        return self._engine.shapes(shape)

    def _compute(self, run, x: torch.Tensor) -> torch.Tensor:
        """run (over a source of x) as a tensor like x; differentiable with respect to x when x requires grad."""
        self._check_weights()
        self._family.check_training()
        if not (x.requires_grad and torch.is_grad_enabled()):
            return convert.like(run(self._source(x)), x, own_dtype=self._family.casts_inputs)
        if convert.is_torchax(x):
            raise NotImplementedError(
                "gradients through a TorchaxVAE flow to torch tensors (CPU or CUDA); this input is a torchax "
                "tensor that requires grad: pass a torch tensor, or detach it"
            )
        engine = self._engine
        start = convert.to_jax(x.detach(), None, engine.placement.activation(tuple(x.shape)))
        return gradients.vjp(lambda data: run(DeviceSource(data, engine.jax_dtype, engine.placement)), start, x)

    def _check_weights(self) -> None:
        if is_abstract(self._engine.weights):
            raise ValueError(
                "this TorchaxVAE wraps a model on the meta device: it has no weights to compute with "
                "(it can `lower` and `precompile`); wrap a model with real weights, or load_state_dict them"
            )

    def _source(self, x: torch.Tensor):
        engine = self._engine
        if convert.is_torchax(x):
            return DeviceSource(x._elem, engine.jax_dtype, engine.placement)
        return HostSource(x, engine.jax_dtype, engine.placement)

    def _per_sample(self, fn, source, **per_sample):
        """Runs `fn` on the whole batch, or per batch element when slicing: a JAX array (or its shape), or, where
        `fn` gives chunks (a decode's), the chunks of each video side by side, joined on the batch axis.

        per_sample: further arguments of `fn` with the batch as their first axis (LTX's timesteps),
        split with the source when slicing; None passes through.
        """
        if not (getattr(self, "use_slicing", False) and source.shape[0] > 1):
            return fn(source, **per_sample)
        outputs = [fn(piece, **{k: None if v is None else v[i : i + 1] for k, v in per_sample.items()})
                   for i, piece in enumerate(source.split())]
        if not all(isinstance(out, (jax.Array, jax.ShapeDtypeStruct)) for out in outputs):
            return side_by_side(outputs)  # (generators: nothing has run yet)
        return outputs[0] if len(outputs) == 1 else apply(join, outputs, axis=0)

    # ----- the family's facts, as diffusers' classes and this package's command and service read them -----

    @property
    def video_channels(self) -> int:
        """Channels of the videos (images) `encode` takes and `decode` returns."""
        return self._family.video_channels

    @property
    def latent_channels(self) -> int:
        """Channels of the latents `decode` takes."""
        return self._family.latent_channels

    @property
    def spatial_compression_ratio(self) -> int:
        """How many pixels one latent spans in height and width."""
        return self._family.spatial_compression_ratio

    def latent_shape(self, video_shape) -> tuple[int, ...]:
        """The latents' shape for an encode input of `video_shape`."""
        return self._family.latent_shape(video_shape)

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """The posterior's latents as this family's pipelines hand them to the transformer."""
        return self._family.scale_latents(latents)

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """`scale_latents` undone, as the pipelines do before `decode`."""
        return self._family.unscale_latents(latents)

    def normalize_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """What the command and the service apply to encoded latents (`Family.normalize_latents`)."""
        return self._family.normalize_latents(latents)

    def denormalize_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """`normalize_latents` undone: what the command and the service apply before `decode`."""
        return self._family.denormalize_latents(latents)

    def decode_inputs(self, latents: torch.Tensor, *, timestep=None, noise_scale=None, seed: int = 0):
        """(latents, decode's further arguments) as the family's pipeline hands them to `decode` (`Family.decode_inputs`)."""
        return self._family.decode_inputs(latents, timestep=timestep, noise_scale=noise_scale, seed=seed)


for _name in FAMILY_FACTS:  # TorchaxVAE itself reports the base Family's (its facade classes: their family's)
    setattr(TorchaxVAE, _name, getattr(Family, _name))


class where_diffusers_has:
    """A method that a facade class has only where its diffusers class has one of that name, so that `hasattr` (which
    pipelines ask) answers as for the wrapped class: AutoencoderKL has `fuse_qkv_projections`, AutoencoderDC not."""

    def __init__(self, method):
        self.method = method
        functools.update_wrapper(self, method)

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, instance, owner=None):
        owner = owner or type(instance)
        if not hasattr(owner.model_class, self.name):
            raise AttributeError(f"'{owner.model_class.__name__}' object has no attribute '{self.name}'")
        return self.method if instance is None else self.method.__get__(instance, owner)


def _missing_flag(name: str) -> property:
    """diffusers' `use_tiling` / `use_slicing` flag where the wrapped class has none: reading it raises, as there."""

    def missing(self):
        raise AttributeError(f"{type(self).model_class.__name__} has no {name} (no {name.removeprefix('use_')})")

    return property(missing)


@functools.cache
def _reported_class(adapter: type) -> type:
    """A class deriving from the adapter and its diffusers class, named as the adapter; never instantiated."""
    if adapter.model_class is None or issubclass(adapter, adapter.model_class):
        return adapter
    namespace = {"__module__": adapter.__module__, "__qualname__": adapter.__qualname__, "__doc__": adapter.__doc__,
                 "_reported_for": adapter}
    return type(adapter.__name__, (adapter, adapter.model_class), namespace)


@dataclasses.dataclass(frozen=True)
class DecodeCall:
    """A decode whose arguments have passed every check (`TorchaxVAE._decode_call`): `chunks(source)` is its loop
    over a source of `x`, a generator of final frame chunks; `decode` joins them, `decode_stream` hands them out."""

    chunks: Callable
    x: torch.Tensor
