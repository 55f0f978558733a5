"""How each family with sound makes it at stage 3: one `Sound` class per family (torchax_vae/stage3/sound.py runs them).

Three video families make sound, each its own way (`FAMILIES`, one `Sound` class each), and an audio pipeline's
VAE is its whole sound (`AUDIO_ONLY`, `VAESound`):

- LTX-2's pipeline returns, with `output_type="latent"`, the video's latents
  and the audio's ([B, C, L, M], the audio VAE's own). Its stage 3 is
  `audio_vae.decode` (a stereo log-mel spectrogram) and then `vocoder` (the
  waveform [B, 2, samples] at `vocoder.config.output_sampling_rate`).
- MiniMax H3's modular pipeline holds, after its denoise blocks, the video's
  normalized latents [1, C, F, H, W] and the audio's [2, C, L]: its mono audio
  VAE takes the two stereo channels as two batch items. Its audio decode step
  de-normalizes them with the audio VAE's `latents_mean` / `latents_std` and
  decodes them to [2, 1, samples] at `audio_vae.config.sampling_rate`, then
  makes that one stereo clip [1, 2, samples]. Here B clips are 2B items, each
  clip's left then right channel.
- Kandinsky 6 (Kandinsky6TI2VAPipeline, whose video VAE is HunyuanVideo's)
  returns, with `output_type="latent"`, audio latents [B, C, L]; its stage 3
  divides them by the audio VAE's `scaling_factor`, decodes them to a log-mel
  spectrogram (MMAudioVAE) and keeps channel 0 of the vocoder's waveform
  (MMAudioVocoder): mono, at the audio VAE's `sample_rate`.

The models are TorchaxVAEs (models/ltx2_audio.py, models/ltx2_vocoder.py,
models/minimax_h3_audio.py, models/mmaudio.py, models/oobleck.py), loaded from the pipeline folder's `audio_vae/`
(and `vocoder/`), as diffusers lays a saved pipeline out (torchax_vae/stage3/sound.py's `load`).
"""

import dataclasses

import torch

from torchax_vae import registry
from torchax_vae.media.files import InputError

__all__ = ["AUDIO_ONLY", "DECODE_ONLY", "FAMILIES", "WITH_SOUND", "Kandinsky6Sound", "LTX2Sound", "MiniMaxH3Sound",
           "MusicSound", "Sound", "VAESound", "audio_only", "families"]


class Sound:
    """A family's audio stage 3, as TorchaxVAEs: `check(z)` says whether it takes audio latents `z`, `waveform(z)`
    is the waveforms [clips, channels, samples] its pipeline makes of them, at `sample_rate`."""

    sample_rate: int
    audio_vae = None

    def clips(self, z: torch.Tensor) -> int:
        """How many clips (videos) audio latents `z` hold."""
        return z.shape[0]

    def check(self, z: torch.Tensor, where: str, batch: int | None = None) -> None:
        raise NotImplementedError

    def waveform(self, z: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _check_finite(self, z: torch.Tensor, where: str) -> None:
        if not torch.isfinite(z).all():
            raise InputError(f"{where}: audio latents contain NaN or Inf values")

    def _check_batch(self, z: torch.Tensor, where: str, batch: int | None) -> None:
        if batch is not None and self.clips(z) != batch:
            raise InputError(f"{where}: {z.shape[0]} audio latents for {batch} videos; {self.per_clip}, as the "
                             "pipeline makes them")

    per_clip = "one each"


class LTX2Sound(Sound):
    """LTX-2: the audio VAE (latents [B, C, L, M] to a log-mel spectrogram), then the vocoder."""

    def __init__(self, audio_vae, vocoder):
        self.audio_vae = audio_vae
        self.vocoder = vocoder

    @property
    def sample_rate(self) -> int:
        return int(self.vocoder.config.output_sampling_rate)

    def latent_shape(self, batch: int, frames: int) -> tuple[int, int, int, int]:
        """[B, C, L, M] audio latents of `frames` latent frames, as the pipeline makes them (its latent mel bins:
        `config.mel_bins // mel_compression_ratio`)."""
        config = self.audio_vae.config
        return (batch, config.latent_channels, frames, config.mel_bins // self.audio_vae.mel_compression_ratio)

    def check(self, z: torch.Tensor, where: str, batch: int | None = None) -> None:
        """InputError unless `z` is audio latents this audio VAE decodes (and `batch` clips of them, where given)."""
        if z.ndim != 4:
            raise InputError(f"{where}: audio latents must be 4-D [B, C, L, mel_bins] (LTX2Pipeline's "
                             f"output_type='latent' audio), got {z.ndim}-D with shape {tuple(z.shape)}")
        want = self.latent_shape(z.shape[0], z.shape[2])
        if tuple(z.shape) != want or not z.shape[2]:
            raise InputError(f"{where}: audio latents {tuple(z.shape)} do not fit this "
                             f"{self.audio_vae.model_class.__name__}: expected [B, {want[1]}, L, {want[3]}] "
                             f"({want[1]} channels, {want[3]} latent mel bins), L > 0")
        self._check_batch(z, where, batch)
        self._check_finite(z, where)

    def waveform(self, z: torch.Tensor) -> torch.Tensor:
        """The waveform [B, channels, samples] of audio latents: `audio_vae.decode` then `vocoder`, each cast to the
        model's dtype as the pipeline casts them."""
        spectrogram = self.audio_vae.decode(z.to(self.audio_vae.dtype)).sample
        return self.vocoder(spectrogram.to(self.vocoder.dtype))


class MiniMaxH3Sound(Sound):
    """MiniMax H3: normalized audio latents [2B, C, L] (each clip's two stereo channels as two items), de-normalized
    and decoded by the mono audio VAE, then paired into stereo clips [B, 2, samples]."""

    per_clip = "two each (a clip's left and right channels)"

    def __init__(self, audio_vae):
        self.audio_vae = audio_vae

    @property
    def sample_rate(self) -> int:
        return int(self.audio_vae.config.sampling_rate)

    def clips(self, z: torch.Tensor) -> int:
        return z.shape[0] // 2

    def check(self, z: torch.Tensor, where: str, batch: int | None = None) -> None:
        """InputError unless `z` is audio latents this audio VAE decodes (and `batch` clips of them, where given)."""
        channels = self.audio_vae.config.latent_channels
        if z.ndim != 3:
            raise InputError(f"{where}: audio latents must be 3-D [2 x clips, C, L] (MiniMax H3's audio_latents, "
                             f"each clip's two stereo channels as two items), got {z.ndim}-D with shape "
                             f"{tuple(z.shape)}")
        if z.shape[1] != channels or not z.shape[2] or not z.shape[0] or z.shape[0] % 2:
            raise InputError(f"{where}: audio latents {tuple(z.shape)} do not fit this "
                             f"{self.audio_vae.model_class.__name__}: expected [2 x clips, {channels}, L] "
                             f"({channels} channels, two stereo channels per clip), L > 0")
        self._check_batch(z, where, batch)
        self._check_finite(z, where)

    def waveform(self, z: torch.Tensor) -> torch.Tensor:
        """The stereo waveforms [B, 2, samples] of audio latents [2B, C, L], as MiniMax H3's audio decode step makes
        them (`latents * latents_std + latents_mean`, the audio VAE, channels paired)."""
        config = self.audio_vae.config
        mean = torch.tensor(config.latents_mean).view(1, -1, 1)
        std = torch.tensor(config.latents_std).view(1, -1, 1)
        audio = self.audio_vae.decode((z.float() * std + mean).to(self.audio_vae.dtype)).sample
        return audio.float().reshape(z.shape[0] // 2, 2, audio.shape[-1])


class Kandinsky6Sound(Sound):
    """Kandinsky 6: audio latents [B, C, L] as its pipeline returns them (scaled), divided by the audio VAE's
    `scaling_factor`, decoded to a log-mel spectrogram (MMAudioVAE), then the vocoder's mono waveform, channel 0
    kept as the pipeline keeps it: [B, 1, samples] at the audio VAE's `sample_rate`."""

    def __init__(self, audio_vae, vocoder):
        self.audio_vae = audio_vae
        self.vocoder = vocoder

    @property
    def sample_rate(self) -> int:
        return int(self.audio_vae.config.sample_rate)

    def check(self, z: torch.Tensor, where: str, batch: int | None = None) -> None:
        channels = self.audio_vae.config.latent_channels
        if z.ndim != 3:
            raise InputError(f"{where}: audio latents must be 3-D [B, C, L] (Kandinsky6TI2VAPipeline's "
                             f"output_type='latent' audio), got {z.ndim}-D with shape {tuple(z.shape)}")
        if z.shape[1] != channels or not z.shape[2] or not z.shape[0]:
            raise InputError(f"{where}: audio latents {tuple(z.shape)} do not fit this MMAudioVAE: expected "
                             f"[B, {channels}, L] ({channels} channels), L > 0")
        self._check_batch(z, where, batch)
        self._check_finite(z, where)

    def waveform(self, z: torch.Tensor) -> torch.Tensor:
        """The mono waveform [B, 1, samples] of audio latents, as the pipeline's stage 3 makes it."""
        latents = z.to(self.audio_vae.dtype) / self.audio_vae.config.scaling_factor
        mel = self.audio_vae.decode(latents, return_dict=False)[0]
        return self.vocoder(mel.to(self.vocoder.dtype), return_dict=False)[0][:, :1].float()


class VAESound(Sound):
    """An audio VAE that is the pipeline's whole stage 3 (Stable Audio's `AutoencoderOobleck`, LongCat's
    `LongCatAudioDiTVae`): latents as its pipeline returns them ([B, C, L]; LongCat's [B, L, C]) decoded into the
    waveforms [B, channels, samples] themselves, at its config's `sampling_rate` (LongCat's: `sample_rate`)."""

    def __init__(self, audio_vae):
        self.audio_vae = audio_vae

    @property
    def sample_rate(self) -> int:
        config = self.audio_vae.config
        return int(getattr(config, "sampling_rate", None) or config.sample_rate)

    def _as_decoded(self, z: torch.Tensor) -> torch.Tensor:
        """The pipeline's latents in the VAE's own layout [B, C, L] (LongCat's pipeline holds [B, L, C])."""
        return z.transpose(1, 2) if self.audio_vae.pipeline_layout == "BTC" else z

    def check(self, z: torch.Tensor, where: str, batch: int | None = None) -> None:
        channels = self.audio_vae.latent_channels
        layout = f"[B, L, {channels}]" if self.audio_vae.pipeline_layout == "BTC" else f"[B, {channels}, L]"
        if z.ndim != 3 or self._as_decoded(z).shape[1] != channels or not z.shape[2] or not z.shape[1] or not z.shape[0]:
            raise InputError(f"{where}: audio latents {tuple(z.shape)} do not fit this "
                             f"{self.audio_vae.model_class.__name__}: expected {layout}, L > 0 (its pipeline's "
                             "output_type='latent' audios)")
        self._check_batch(z, where, batch)
        self._check_finite(z, where)

    def waveform(self, z: torch.Tensor) -> torch.Tensor:
        return self.audio_vae.decode(self._as_decoded(z).contiguous().to(self.audio_vae.dtype)).sample.float()

    def samples(self, z: torch.Tensor) -> int:
        """Samples per channel that audio latents `z` (checked) decode to, from the config alone."""
        return self.audio_vae._family.decoded_samples(self._as_decoded(z).shape[2])


class MusicSound(VAESound):
    """MiniMax Music 3: its vocoder is its whole stage 3. Latents [B, C, L] (one window, or a song's latents as one)
    give the vocoder's stereo waveform [B, 2, samples]; the pipeline's windows (`latent_chunks`, a list of them)
    give its song, each window vocoded, cropped and joined as its decode step does (models/minimax_music3.py)."""

    def check(self, z, where: str, batch: int | None = None) -> None:
        windows = _windows(z)
        if not windows:
            raise InputError(f"{where}: no windows of latents (the pipeline's latent_chunks hold one or more)")
        for window in windows:
            super().check(window, where, batch)
            if window.shape[0] != windows[0].shape[0]:
                raise InputError(f"{where}: windows of {windows[0].shape[0]} and {window.shape[0]} songs; every "
                                 "window of latent_chunks holds the same batch")

    def clips(self, z) -> int:
        return _windows(z)[0].shape[0]

    def waveform(self, z) -> torch.Tensor:
        return self.audio_vae.song(_windows(z))

    def samples(self, z) -> int:
        return self.audio_vae.song_samples([w.shape[2] for w in _windows(z)])


def _windows(z) -> list:
    """MiniMax Music 3's latents as windows: the pipeline's `latent_chunks` (a list), or one window alone."""
    return list(z) if isinstance(z, (list, tuple)) else [z]


# The audio VAEs (and MiniMax Music 3's vocoder) that decode a pipeline's sound alone (the pipeline folder's vae/;
# MiniMax Music 3's vocoder/), and their labels (torchax_vae/registry.py: `sound`).
AUDIO_ONLY = {row.diffusers_class: row.label for row in registry.ROWS if row.sound}
# Of those, the ones that encode nothing (MiniMax Music 3's Flow-VAE encoder is not in diffusers).
DECODE_ONLY = {row.diffusers_class for row in registry.ROWS if row.sound == "decode only"}


def audio_only(ours) -> VAESound:
    """The sound of a TorchaxVAE of an AUDIO_ONLY class."""
    return MusicSound(ours) if ours.model_class.__name__ == "MiniMaxMusic3Vocoder" else VAESound(ours)


@dataclasses.dataclass(frozen=True)
class SoundFamily:
    """Where a video family's sound is: its name, its saved pipeline's folders, what they hold, how it runs."""

    name: str
    subfolders: tuple[str, ...]
    classes: tuple[tuple[str, ...], ...]  # the classes each folder may hold
    make: type


# The video VAE classes whose pipelines make sound.
FAMILIES = {
    "AutoencoderKLLTX2Video": SoundFamily("LTX-2", ("audio_vae", "vocoder"),
                                          (("AutoencoderKLLTX2Audio",), ("LTX2Vocoder", "LTX2VocoderWithBWE")),
                                          LTX2Sound),
    "AutoencoderKLMiniMaxH3": SoundFamily("MiniMax H3", ("audio_vae",), (("AutoencoderKLMiniMaxH3Audio",),),
                                          MiniMaxH3Sound),
    # Kandinsky 6's video VAE is HunyuanVideo's; a folder with its audio_vae/ and vocoder/ has sound
    "AutoencoderKLHunyuanVideo": SoundFamily("Kandinsky 6", ("audio_vae", "vocoder"),
                                             (("MMAudioVAE",), ("MMAudioVocoder",)), Kandinsky6Sound),
}
WITH_SOUND = {cls: family.name for cls, family in FAMILIES.items()}


def families() -> str:
    return ", ".join(f"{name} ({cls})" for cls, name in WITH_SOUND.items())


def _folders(family: SoundFamily) -> str:
    return " and ".join(f"{name}/" for name in family.subfolders)
