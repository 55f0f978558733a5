"""What a model family is: the facts of its diffusers class and its encode and decode loops (docs/guide/families.md).

A `TorchaxVAE` (torchax_vae/facade/vae.py) is the facade: diffusers' interface and the torch module surface. It holds
one `Family` object, made from the wrapped model and the facade's `Engine` (torchax_vae/engine/runtime.py), and asks it

- its facts: channels, compression, the latent shape of an input, the input checks, the latent normalization
  its pipelines apply;
- its settings: diffusers' attributes that the loops read (`tile_sample_min_height`, ...), copied from the
  wrapped instance. Users and pipelines set them on the facade, which hands them over (`settings`);
- its programs (`lower`: a `lowering.Lowered` of the model) and its loops, `encode` and `decode`: plain
  loops over the engine's programs and the shared helpers (sources, tiling, frame windows), as diffusers'
  `_encode` / `_decode` are loops over its encoder and decoder calls.

Each adapter module (torchax_vae/models) holds its family and the facade class named for saved pipelines
(`WanVAE`, ...), which adds only what diffusers' class differs in at its interface.
"""

import jax
import torch
from diffusers.models.autoencoders.vae import DiagonalGaussianDistribution
from torch import nn

from torchax_vae.engine import convert
from torchax_vae.engine.arrays import join_chunks, run_out
from torchax_vae.engine.runtime import Engine
from torchax_vae.engine.weights import config_of, quiet_construction


def whole_groups(frames: int, first: bool, size: int) -> str | None:
    """`Family.session_chunks` for an encoder that takes the first frame alone, then frames in groups of `size`
    (Wan's calls of 4, Kandinsky 6 SR's temporal pooling): None where a chunk of `frames` ends where a group does,
    else the sizes that would, as words for the error."""
    if first and (frames - 1) % size:
        return f"a first chunk of 1 + {size}k video frames (1, {1 + size}, {1 + 2 * size}, ...)"
    if not first and frames % size:
        return f"later chunks of a multiple of {size} video frames"
    return None


def causal_latent_shape(video_shape, channels: int, temporal: int, spatial: int) -> tuple[int, ...]:
    """[B, channels, F, h, w] latents of a [B, C, 1 + kT frames, H, W] video under a causal video VAE: the first frame
    alone, then `temporal` frames a latent frame; `spatial` pixels a latent in height and width."""
    batch, _, frames, height, width = video_shape
    return (batch, channels, (frames - 1) // temporal + 1, height // spatial, width // spatial)


def of_config(fact):
    """A family's fact as a property computed from its config by a function of the config (`video_channels(config)`,
    which the family module also offers for a config alone)."""
    return property(lambda self: fact(self.config), doc=fact.__doc__)


def config_value(name: str):
    """A family's fact as a property: its config's value of `name`."""
    return property(lambda self: getattr(self.config, name), doc=f"The config's `{name}`.")


def with_config(function):
    """A family's method computed by a function of the config and the method's arguments (`latent_shape(config,
    video_shape)`)."""

    def method(self, *args, **kwargs):
        return function(self.config, *args, **kwargs)

    method.__doc__ = function.__doc__
    return method


class Family:
    """A diffusers VAE class's facts and loops; an adapter overrides what its class does its own way.

    Args:
        vae: the wrapped diffusers model (read, never changed).
        engine: the facade's engine, which the loops run programs through; None for the facts alone (what a
            call's input shape is, before anything is built: `models.input_shape`).
    """

    # The diffusers class this family runs.
    model_class: type = None
    # The rank of what `encode` takes and `decode` gives: 5 for video [B, C, F, H, W], 4 for images [B, C, H, W].
    # The engine's boundary (validation, sources, sharding marks) follows it.
    rank: int = 5
    # How the family's pipelines hold latents (output_type="latent"): the transformer's layout.
    pipeline_layout: str = "BCFHW"
    # What `decode` returns, as the wrapped class returns it (AutoencoderKLAllegro: [B, F, C, H, W]).
    decoded_layout: str = "BCFHW"
    # What `encode` returns the encoder's output as, as the wrapped class does (AutoencoderKLCosmos: its identity).
    posterior_class: type = DiagonalGaussianDistribution
    # Whether `decode(..., generator=)` feeds noise the decoder injects (LTX), so that each call's noise is its own.
    decode_draws_noise: bool = False
    # Whether a 4-D decode's batch holds one video's frames (AutoencoderKLTemporalDecoder: `decode(z, num_frames)`),
    # which the command writes as one MP4.
    batch_is_frames: bool = False
    # diffusers' attributes of the instance that the loops read (tiling and batching), copied from the wrapped
    # model where it has them; the facade hands a user's settings here, and twins (`lower`, `plan`) copy them.
    settings: tuple = ()
    # The family's pixels where they are not diffusers' [-1, 1]: per-channel mean and std, `pixel = value * std + mean`
    # in [0, 1] (MiniMax H3's ImageNet statistics). The command's frames, the service's answers and uint8 streams
    # convert with them (torchax_vae/media/pixels.py).
    pixel_mean: tuple | None = None
    pixel_std: tuple | None = None
    # Whether diffusers' encode and decode cast their input to the first module's dtype (the MiniMax H3 classes,
    # whose float32 modules take a bf16 pipeline's tensors), so that any floating-point input is accepted.
    casts_inputs: bool = False
    # Children that encode and decode never run (AutoencoderKLFlux2's `bn`, whose statistics the pipelines read):
    # their training mode changes no program.
    not_run: tuple = ()
    # The layers whose activations get sharding marks on a mesh (torchax_vae/patches/sharding_marks.py).
    marked: tuple = ()
    # Whether its programs split the height alone on a mesh (`torchax_vae.placement.mesh.program_grid`): its layers fold the
    # width into another axis, where only a height split stays a contiguous block (VidTok).
    rows_only: bool = False

    def __init__(self, vae: nn.Module, engine: Engine | None = None):
        self.config = config_of(vae)
        self.engine = engine
        for name in self.settings:
            if hasattr(vae, name):
                setattr(self, name, getattr(vae, name))
        self.lowered = None if engine is None else self.lower(vae)

    @classmethod
    def load_model(cls, name_or_path: str, subfolder: str | None, **kwargs) -> nn.Module:
        """The model saved in a folder (or hub id) whose config.json names this family's class: diffusers'
        `from_pretrained` (`kwargs` go to it). A family of a model diffusers does not ship says how it is built
        (docs/guide/api.md, "Your own VAE")."""
        model_class = cls.model_class
        # Weights are copied to the JAX device anyway; without accelerate diffusers would warn on every load. A class
        # with modules kept in float32 (AutoencoderKLMiniMaxH3) loads only with it on.
        if not model_class._keep_in_fp32_modules:
            kwargs.setdefault("low_cpu_mem_usage", False)
        with quiet_construction():
            return model_class.from_pretrained(name_or_path, subfolder=subfolder, **kwargs)

    def lower(self, vae: nn.Module):
        """The family's `lowering.Lowered`: a private, patched copy of `vae` and its step functions."""
        raise NotImplementedError

    def lowering_on(self, lowering: type, vae: nn.Module, *args, **kwargs):
        """`lowering(vae, mesh, platform, *args, **kwargs)` on this family's placement: what `lower` returns."""
        placement = self.engine.placement
        return lowering(vae, placement.mesh, placement.platform, *args, **kwargs)

    # ----- facts -----

    @property
    def video_channels(self) -> int:
        """Channels of the videos `encode` takes and `decode` returns."""
        raise NotImplementedError

    @property
    def latent_channels(self) -> int:
        """Channels of the latents `decode` takes (the mean's, for `encode`'s posterior)."""
        return self.config.latent_channels

    @property
    def spatial_compression_ratio(self) -> int:
        """How many video pixels one latent spans in height and width (encode inputs come in multiples of it)."""
        raise NotImplementedError

    def latent_shape(self, video_shape) -> tuple[int, ...]:
        """The latents' shape for an input of `video_shape` (the family's rank)."""
        raise NotImplementedError

    def check_video(self, shape, name: str) -> None:
        """Further family-specific checks of an encode input's shape (ValueError)."""

    def check_latents(self, shape, name: str) -> None:
        """Further family-specific checks of a decode input's shape (ValueError)."""

    def buffer(self, name: str) -> torch.Tensor:
        """A top-level buffer of the model (LTX's and LTX-2 audio's `latents_mean`, `latents_std`) as a CPU tensor of
        its own."""
        return convert.to_torch(self.engine.weights[name][""]).clone()

    def training_differences(self, vae: nn.Module) -> list[str]:
        """What of `vae`'s own code computes otherwise in training mode, beside its dropout and batch norm layers
        (AutoencoderRAE's encoder noise): computing in training mode is refused where this names anything."""
        return []

    def check_training(self) -> None:
        """Refuses a call in training mode where that computes otherwise (the engine's rule; Allegro's differs)."""
        self.engine.check_training()

    # ----- the latents as the family's pipelines normalize them -----

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """The posterior's latents as this family's pipelines hand them to the transformer."""
        raise NotImplementedError

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """`scale_latents` undone, as the pipelines do before `decode`."""
        raise NotImplementedError

    def normalize_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """What the command and the service apply to encoded latents: `scale_latents`, except where the wrapped class
        has a `scale_latents` of its own that means something else (AutoencoderTiny's [0, 1] storage)."""
        return self.scale_latents(latents)

    def denormalize_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """`normalize_latents` undone: what the command and the service apply before `decode`."""
        return self.unscale_latents(latents)

    def decode_inputs(self, latents: torch.Tensor, *, timestep=None, noise_scale=None, seed: int = 0):
        """(latents, decode's further arguments) as the family's pipeline hands them to `decode` at stage 3.

        Families whose decoder takes a timestep (LTX) mix in noise and make it; the others take none and
        refuse one (ValueError).
        """
        if timestep is not None or noise_scale is not None:
            raise ValueError(f"a decode timestep applies to timestep-conditioned decoders (LTX-Video 0.9.1 and "
                             f"later); this {self.model_class.__name__}'s decoder takes none")
        return latents, ()

    # ----- the loops -----

    def encode(self, source, tiled: bool | None = None, **options) -> jax.Array:
        """The posterior's parameters (mean and logvar on channels) of one batch, a JAX array (or its shape).

        tiled: True tiles whatever the size and settings (`tiled_encode`); None follows the tiling mode.
        options: the encoder's program options (LTX-2's `causal`).
        """
        raise NotImplementedError

    def decode(self, source, tiled: bool | None = None, **conditioning) -> jax.Array:
        """The decoded batch, a JAX array (or its shape); conditioning: the decoder's further inputs (LTX's
        timestep, Stable Video Diffusion's num_frames).

        Families whose loop yields frame chunks (`decode_chunks`) get it here, joined on the frame axis. Families
        with one call override it (and get `decode_chunks` as its one chunk).
        """
        return join_chunks(self.decode_chunks(source, tiled, **conditioning), self.frame_axis)

    def decode_chunks(self, source, tiled: bool | None = None, **conditioning):
        """The decoded batch as a generator of frame chunks (JAX arrays or shapes), each yielded once final: what
        the facade's `decode` joins and `decode_stream` hands out. Only what the next chunk needs stays referenced.
        A family whose decode is one call (it overrides `decode`) gives that call's output as one chunk."""
        if type(self).decode is Family.decode:
            raise NotImplementedError(f"{type(self).__name__} defines neither decode nor decode_chunks")
        yield self.decode(source, tiled, **conditioning)

    @property
    def frame_axis(self) -> int | None:
        """The frame axis of `decode`'s output (`decoded_layout`); None for an output without frames."""
        return self.decoded_layout.index("F") if "F" in self.decoded_layout else None

    # ----- sessions: latents (or video frames) fed chunk by chunk (torchax_vae/facade/session.py) -----

    # Whether the family's encode and decode carry state from chunk to chunk (causal caches; MiniMax H3's clip held
    # until its latents have come), so that a session can feed them chunks as a generator (or a camera, or a file
    # read in order) makes them. Families with it implement `session_step`.
    carries_state: bool = False
    # Whether a session holds back what its chunks leave unfinished until `finish()` (MiniMax H3: its last clip,
    # filled by repeating the last latent once the video's end is known). Such a family takes chunks of any
    # length, checks the whole video's latents at the end, and implements `session_finish`.
    holds_back: bool = False
    # Whether a session may tile (each of the family's session calls tiled alone, with no state across tiles).
    session_tiles: bool = False

    def session_chunks(self, frames: int, first: bool, kind: str = "decode") -> str | None:
        """None when a session's chunk of `frames` frames (latent frames for "decode", video frames for
        "encode"; the first chunk, or a later one) keeps the result exact; else the sizes this family accepts,
        as words for the error."""
        return None

    def encode_ranges(self, frames: int) -> list[tuple[int, int]] | None:
        """The (start, end) ranges of a video of `frames` frames that the encoder's loop takes in order, each
        a chunk an encode session accepts (what `torchax-vae encode` reads a file in); None where the encoder
        takes the whole video at once."""
        return self.call_ranges(frames, True, "encode") if self.carries_state else None

    # A family that carries state declares its loop (`chunk_loop`) and where its calls cut a chunk (`call_ranges`);
    # the whole video's loop and a session's step run the same loop over the same ranges.

    def call_ranges(self, frames: int, first: bool, kind: str = "decode") -> list[tuple[int, int]]:
        """The (start, end) frame ranges of the family's calls over `frames` frames: a whole video's (and a
        session's first chunk's) where `first`, else a later session chunk's, continuing the calls before it."""
        raise NotImplementedError

    def chunk_loop(self, kind: str, source, ranges, state):
        """The family's loop: its encoder or decoder calls over `ranges` of the source in order, carrying `state`
        on the device (None: the video's start). A generator of the calls' outputs, returning the state after the
        last (a session's next)."""
        raise NotImplementedError

    def session_step(self, source, state, kind: str = "decode"):
        """A session's chunk run: the family's loop over the chunk's call ranges, its state carried; (decode's
        frames or encode's moments, joined on the frame axis, and the state for the next chunk). State None for
        the first chunk."""
        ranges = self.call_ranges(source.shape[2], state is None, kind)
        outputs, state = run_out(self.chunk_loop(kind, source, ranges, state))
        return join_chunks(outputs, axis=2), state

    def session_finish(self, state, kind: str = "decode"):
        """What a `holds_back` family's session still holds at the video's end (frames or moments), or None."""
        raise NotImplementedError
