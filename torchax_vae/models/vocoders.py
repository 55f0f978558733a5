"""What the vocoders' adapters share (LTX-2's, Kandinsky 6's MMAudio, MiniMax Music 3's).

A vocoder has no encoder, no decoder and no cache: diffusers calls its forward, one call from what it takes (a
spectrogram, or latents) to a waveform. Its family runs that forward as one program ("vocoder") per input shape and
encodes nothing; its facade is called as diffusers' module is and lacks what the module lacks (`encode`, `decode`,
tiling, slicing), so that `hasattr` answers as for the wrapped class.
"""

import jax

from torchax_vae.facade.family import Family

__all__ = ["VocoderFacade", "VocoderFamily"]


class VocoderFamily(Family):
    """A vocoder's whole forward, one program per input shape; its lowering has a `forward_step`."""

    rank = 3  # [B, C, T] in, [B, channels, samples] out
    pipeline_layout = decoded_layout = "BCT"

    @property
    def video_channels(self) -> int:
        raise AttributeError("a vocoder encodes nothing")

    @property
    def spatial_compression_ratio(self) -> int:
        return 1

    def decode(self, source, tiled: bool | None = None) -> jax.Array:
        return self.engine.run_batch("vocoder", self.lowered.forward_step, self.engine.weights, source.take())

    def encode(self, source, tiled: bool | None = None):
        raise AttributeError("a vocoder encodes nothing")

    def scale_latents(self, latents):
        return latents  # the pipelines hand a vocoder its input as it is

    def unscale_latents(self, latents):
        return latents


class VocoderFacade:
    """Mixed in before TorchaxVAE: what diffusers' vocoder lacks, the facade lacks too."""

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("encode", "decode", "tiled_encode", "tiled_decode", "enable_slicing", "disable_slicing",
                       "disable_tiling", "use_tiling")

    def _decode_call(self, *args, **kwargs):
        """A vocoder is called, not decoded: no `decode`, so no `decode_stream`."""
        raise AttributeError(f"'{type(self).model_class.__name__}' object has no attribute 'decode'")
