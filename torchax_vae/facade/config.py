"""diffusers' ConfigMixin facade of a TorchaxVAE: its config is the wrapped model's, and it saves and loads as
diffusers' own class (a folder `pipe.save_pretrained` writes loads in plain diffusers).

A mixin of `torchax_vae.facade.vae.TorchaxVAE`; it reads `model_class`, `_internal_dict`, `_engine.weights`, `_entries`.
"""

import torch
from diffusers import ConfigMixin
from torch import nn

from torchax_vae import registry
from torchax_vae.engine import weights


class ConfigFacade:
    """The wrapped model's config, and saving and loading as its diffusers class (the module doc)."""

    @classmethod
    def _config_class(cls, config) -> type:
        """The diffusers class a config is for: this wrapper's, or (on TorchaxVAE) the one its `_class_name` names."""
        if cls.model_class is not None:
            return cls.model_class
        name = dict(config).get("_class_name")
        if not name:
            raise ValueError("this config has no `_class_name` (a saved config.json has one) to say which VAE it is "
                             "for: call this on the family's class, e.g. type(vae), or add the name")
        return registry.facade_for_class_name(name).model_class

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
        wrapped = registry.facade_for(model)(model.eval(), **options)  # a new model; diffusers leaves its dropout layers training
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
        model = weights.rebuilt_on_meta(self.model_class, self.config)
        # the wrapped model's own names (top-level buffers too: LTX's latents_mean), copies the user owns
        cpu = torch.device("cpu")
        model.load_state_dict(weights.state_dict(self._engine.weights, self._entries, cpu), strict=True, assign=True)
        saved = {entry.name for entry in self._entries if entry.persistent}
        for name, tensor in weights.named(self._engine.weights, self._entries, cpu, parameters=False):
            if name not in saved:  # non-persistent buffers (VidTok's FSQ levels), which load_state_dict leaves on meta
                parent, _, leaf = name.rpartition(".")
                model.get_submodule(parent).register_buffer(leaf, tensor, persistent=False)
        return model.eval()


class LatentStatistics:
    """`latents_mean` / `latents_std` as the model's top-level buffers (copies), which the LTX pipelines read off
    their VAEs (`pipe.vae.latents_mean`, `pipe.audio_vae.latents_std`): a mixin of those facade classes."""

    @property
    def latents_mean(self) -> torch.Tensor:
        return self._family.buffer("latents_mean").to(self.device)

    @property
    def latents_std(self) -> torch.Tensor:
        return self._family.buffer("latents_std").to(self.device)
