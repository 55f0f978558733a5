"""What each family's adapter defines (torchax_vae/models): its config facts, latent shape and normalization,
its input checks, and its encode and decode loops over the engine's helpers (docs/families.md).
"""

import jax
import torch


class FamilyInterface:
    """The methods an adapter overrides; the defaults raise NotImplementedError or check nothing more."""

    # The rank of what `encode` takes and `decode` gives: 5 for video [B, C, F, H, W], 4 for images [B, C, H, W].
    # The engine's boundary (validation, sources, sharding marks) follows it.
    rank: int = 5
    # Whether `decode(..., generator=)` feeds noise the decoder injects (LTX), so that each call's noise is its own.
    decode_draws_noise: bool = False
    # Whether a 4-D decode's batch holds one video's frames (AutoencoderKLTemporalDecoder: `decode(z, num_frames)`),
    # which the command writes as one MP4.
    batch_is_frames: bool = False

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

