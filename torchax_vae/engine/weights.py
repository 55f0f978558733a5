"""The wrapped model's weights as torch sees them: names, `state_dict`, `load_state_dict`, parameters.

A TorchaxVAE computes with JAX arrays (`Engine.weights`: the wrapped
model's parameters and buffers, grouped by top-level child). To torch and
diffusers it shows them under the wrapped model's own names and shapes:

- what torch hands out (`state_dict()`, `parameters()`) are *copies* of the
  JAX arrays, made when asked for, on the wrapper's device: one copy of the
  weights while the caller holds them, none otherwise (a bf16 Wan 2.2 VAE,
  705 M parameters, is 1.4 GB). Editing a copy changes nothing here;
- what torch hands in (`load_state_dict`) replaces the JAX arrays one at a
  time, after every key and shape has been checked, under torch's strict and
  non-strict rules and with torch's error messages. The compiled programs
  take the weights as arguments, so the next call computes with the new ones
  and nothing is compiled again.
"""

import collections
import collections.abc
import contextlib
import dataclasses
import warnings

import jax
import torch
from diffusers.configuration_utils import FrozenDict
from torch import nn

from torchax_vae.engine import convert


@dataclasses.dataclass(frozen=True)
class Entry:
    """One tensor of the wrapped model: its name, whether a parameter, and whether state_dict holds it."""

    name: str
    parameter: bool
    persistent: bool  # False for a buffer registered with persistent=False


def layout(model: nn.Module) -> tuple[Entry, ...]:
    """The model's parameters and buffers in torch's order (state_dict's, then non-persistent buffers)."""
    params = {name for name, _ in model.named_parameters()}
    saved = list(model.state_dict(keep_vars=True))  # references, no copies
    transient = [name for name, _ in model.named_buffers() if name not in set(saved)]
    return tuple(Entry(n, n in params, True) for n in saved) + tuple(Entry(n, False, False) for n in transient)


def kept_in_fp32(name: str, keep: tuple) -> bool:
    """Whether diffusers keeps the tensor `name` in float32 whatever `torch_dtype` a model is loaded in: its class's
    `_keep_in_fp32_modules` (`keep`) names one of its path's parts (AutoencoderKLMiniMaxH3's encoder and norms)."""
    return any(part in keep for part in name.split("."))


def compute_dtype(name: str, dtype, keep: tuple):
    """The dtype a floating-point tensor `name` computes in under the compute dtype `dtype` (a JAX dtype):
    float32 where diffusers keeps it so (`kept_in_fp32`), `dtype` elsewhere."""
    return jax.numpy.float32 if keep and kept_in_fp32(name, keep) else dtype


def recast(weights: dict, dtype, keep: tuple) -> dict:
    """`weights` ({child: {name: array}}) with each floating-point array in its `compute_dtype` under `dtype`."""
    return {child: {rest: w.astype(compute_dtype(f"{child}.{rest}", dtype, keep))
                    if jax.numpy.issubdtype(w.dtype, jax.numpy.floating) else w for rest, w in group.items()}
            for child, group in weights.items()}


def _split(name: str) -> tuple[str, str]:
    child, _, rest = name.partition(".")
    return child, rest


def get(weights: dict, name: str):
    child, rest = _split(name)
    return weights[child][rest]


def copy(array, device: torch.device) -> torch.Tensor:
    """A torch tensor on `device` with its own memory, equal to a JAX array (a meta tensor for a shape)."""
    if isinstance(array, jax.ShapeDtypeStruct):
        return torch.empty(array.shape, dtype=convert.torch_dtype(array.dtype), device="meta")
    # to_torch may alias the JAX buffer (DLPack); the array stays ours, so the copy is made after
    return convert.to_torch(array, device=device).clone()


def state_dict(weights: dict, entries, device: torch.device, prefix: str = "", destination=None) -> dict:
    """The wrapped model's state_dict: every persistent entry, copied to `device`."""
    out = collections.OrderedDict() if destination is None else destination
    for entry in entries:
        if entry.persistent:
            out[prefix + entry.name] = copy(get(weights, entry.name), device)
    return out


def named(weights: dict, entries, device: torch.device, parameters: bool, prefix: str = ""):
    """(name, copy) of every parameter (as nn.Parameter, requires_grad False) or buffer, one copy at a time."""
    for entry in entries:
        if entry.parameter == parameters:
            tensor = copy(get(weights, entry.name), device)
            yield prefix + entry.name, nn.Parameter(tensor, requires_grad=False) if parameters else tensor


def load(weights: dict, entries, state: dict, *, strict: bool, dtype, sharding, owner: str, keep: tuple = ()):
    """Replaces the arrays of `weights` (in place) by the tensors of `state`; torch's (missing, unexpected) keys.

    Everything is checked before anything is replaced: a wrong shape, a value
    that is not a tensor, or with `strict` a missing or unexpected key raises
    RuntimeError in torch's words and leaves the weights as they were.
    Floating-point tensors are cast to `dtype` (the wrapper's compute dtype),
    as torch's `copy_` casts to the parameter's (float32 where diffusers keeps it so: `keep`, `compute_dtype`).
    """
    if not isinstance(state, collections.abc.Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state)}.")
    known = {entry.name for entry in entries if entry.persistent}
    missing = [entry.name for entry in entries if entry.persistent and entry.name not in state]
    unexpected = [key for key in state if key not in known]
    errors = []
    for key in state:
        if key not in known:
            continue
        value, current = state[key], get(weights, key)
        if not isinstance(value, torch.Tensor):
            errors.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                          f"object from checkpoint but received {type(value)}")
        elif tuple(value.shape) != tuple(current.shape):
            errors.append(f"size mismatch for {key}: copying a param with shape {value.shape} from checkpoint, "
                          f"the shape in current model is {torch.Size(current.shape)}.")
    if strict:
        if unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
        if missing:
            errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
    if errors:
        raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(owner, "\n\t".join(errors)))
    for key, value in state.items():
        if key in known:
            child, rest = _split(key)
            cast = compute_dtype(key, dtype, keep) if value.is_floating_point() else get(weights, key).dtype
            weights[child][rest] = convert.to_jax(value, cast, sharding)  # a clone: later edits of value stay out
    return torch.nn.modules.module._IncompatibleKeys(missing, unexpected)


class Submodule:
    """A read-only view of one submodule of the wrapped model (`vae.post_quant_conv`, `vae.bn`): what pipelines
    read of it, its tensors as copies of the current JAX weights (`named_parameters`, `parameters`,
    `named_buffers`, `buffers`, and each tensor or nested submodule by attribute: `vae.bn.running_mean`).

    SDXL's pipelines read `next(iter(vae.post_quant_conv.parameters())).dtype`; Flux.2's `vae.bn.running_var`.
    Nothing set on it reaches the weights (`load_state_dict` does).
    """

    def __init__(self, owner, path: str):
        self._owner, self._path = owner, path

    def _entries(self, parameters: bool | None = None):
        start = self._path + "."
        return [e for e in self._owner._entries if e.name.startswith(start) and parameters in (None, e.parameter)]

    def _named(self, parameters: bool, prefix: str):
        entries = [Entry(e.name[len(self._path) + 1:], e.parameter, e.persistent) for e in self._entries(parameters)]
        weights = {}
        for e in self._entries(parameters):
            child, rest = _split(e.name[len(self._path) + 1:])
            weights.setdefault(child, {})[rest] = get(self._owner._engine.weights, e.name)
        yield from named(weights, entries, self._owner._copy_device(), parameters, prefix)

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named(True, prefix)

    def parameters(self, recurse: bool = True):
        return (p for _, p in self.named_parameters())

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named(False, prefix)

    def buffers(self, recurse: bool = True):
        return (b for _, b in self.named_buffers())

    @property
    def _non_persistent_buffers_set(self) -> set:
        """torch's names of this submodule's own buffers that state_dict leaves out (accelerate's size helpers, which
        diffusers' sharded-checkpoint tests use, read it)."""
        start = self._path + "."
        return {e.name[len(start):] for e in self._owner._entries
                if e.name.startswith(start) and not e.persistent and "." not in e.name[len(start):]}

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        full = f"{self._path}.{name}"
        for entry in self._owner._entries:
            if entry.name == full:
                tensor = copy(get(self._owner._engine.weights, full), self._owner._copy_device())
                return nn.Parameter(tensor, requires_grad=False) if entry.parameter else tensor
            if entry.name.startswith(full + "."):
                return Submodule(self._owner, full)
        raise AttributeError(f"{self._owner.model_class.__name__}.{self._path} has no tensor or submodule {name!r}")

    def __repr__(self) -> str:
        return f"<a read-only view of {self._owner.model_class.__name__}.{self._path}: copies of its JAX weights>"


def config_of(model: nn.Module):
    """A model's config: a diffusers model's, or (a PyTorch model of a user's own, which has none) its `config` if it
    has one, else an empty one (docs/guide/api.md, "Your own VAE")."""
    config = getattr(model, "config", None)
    return config if isinstance(config, FrozenDict) else FrozenDict(dict(config or {}))


def device_of(model: nn.Module) -> torch.device:
    """A model's device: a diffusers model's `device`, or that of its first parameter (CPU for none)."""
    device = getattr(model, "device", None)
    if isinstance(device, torch.device):
        return device
    return next((p.device for p in model.parameters()), torch.device("cpu"))


def compute_dtype_of(model: nn.Module) -> torch.dtype:
    """The dtype a model computes in: its own (`model.dtype`), or for a class that keeps some modules in float32
    (`_keep_in_fp32_modules`), that of its other floating-point weights (loaded with torch_dtype=bf16: bf16)."""
    keep = tuple(getattr(model, "_keep_in_fp32_modules", None) or ())
    if keep:
        for name, tensor in model.named_parameters():
            if tensor.is_floating_point() and not kept_in_fp32(name, keep):
                return tensor.dtype
    dtype = getattr(model, "dtype", None)  # (a PyTorch model of a user's own: its first floating-point weights')
    if isinstance(dtype, torch.dtype):
        return dtype
    return next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)


def stochastic_layers(model: nn.Module) -> list[str]:
    """Names of the layers whose training mode computes otherwise than eval: dropout with p > 0, batch norm."""
    return [
        name for name, module in model.named_modules()
        if (isinstance(module, nn.modules.dropout._DropoutNd) and module.p > 0)
        or isinstance(module, nn.modules.batchnorm._BatchNorm)
    ]


def rebuilt_on_meta(model_class, config) -> nn.Module:
    """`rebuilt` on the meta device (no memory). A class whose constructor computes with its own tensors (VidTok's
    FSQ: `.item()` of its levels, its implicit codebook) is built on the CPU and then moved there."""
    try:
        with torch.device("meta"):
            return rebuilt(model_class, config)
    except (RuntimeError, NotImplementedError) as error:
        if "meta" not in str(error):
            raise
    return rebuilt(model_class, config).to("meta")


def rebuilt(model_class, config) -> nn.Module:
    """A new `model_class` model from a model's `config`, as `from_config` builds it, without the keys its own
    `__init__` registers beyond its arguments (AsymmetricAutoencoderKL's `block_out_channels` and `force_upcast`,
    which `from_config` would warn about on every rebuild: diffusers' own round trip)."""
    import inspect

    accepted = inspect.signature(model_class.__init__).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
        config = {key: value for key, value in dict(config).items() if key in accepted or key.startswith("_")}
    with quiet_construction():
        return model_class.from_config(config)


@contextlib.contextmanager
def quiet_construction():
    """diffusers' audio classes build torch's deprecated `weight_norm` (AutoencoderOobleck): torch's FutureWarning on
    each load is diffusers' to act on, not what a user of the command or the service can."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*torch\.nn\.utils\.weight_norm.* is deprecated",
                                category=FutureWarning)
        yield
