"""The command's round trip of a video family, in its pipeline's layout: what `Pipeline(output_type="latent")` hands
over, decoded by `torchax-vae decode` to frames that must be the pipeline's own (diffusers' model in PyTorch, within
one uint8 step), and those frames as an MP4 encoded back to latents of the pipeline's shape."""

import numpy as np
import torch


def video_round_trip(tmp_path, capsys, vae, latent_shape: tuple, pipeline_latents, frames: tuple, warmup: str = "",
                     channels_second: bool = False) -> None:
    """`vae` saved as a pipeline folder's vae/; seeded latents of `latent_shape` ([B, C, F, H, W]) decoded by the
    command, against `vae.decode(pipeline_latents(z))` (the pipeline's own arithmetic: its scaling and statistics)
    in PyTorch; `frames` the video's [F, H, W, 3]; `warmup` a `--shape` warmed first; `channels_second`: the
    decoder's output is [B, F, C, H, W] (Allegro)."""
    from torchax_vae.cli import main
    from torchax_vae.media import files

    vae.save_pretrained(tmp_path / "model" / "vae")
    z = torch.randn(*latent_shape, generator=torch.Generator().manual_seed(0))
    torch.save(z, tmp_path / "latents.pt")
    args = ["--model", str(tmp_path / "model"), "--no-cache", "--json"]
    if warmup:
        assert main(["warmup", "--shape", warmup, "--kind", "both", *args]) == 0
    assert main(["decode", str(tmp_path / "latents.pt"), "-o", str(tmp_path / "video.npy"), *args]) == 0
    capsys.readouterr()
    with torch.no_grad():
        expected = vae.decode(pipeline_latents(z)).sample[0]
    expected = expected.permute(1, 0, 2, 3) if channels_second else expected
    expected = ((expected / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 3, 0).numpy()
    decoded = np.load(tmp_path / "video.npy")
    assert decoded.shape == frames, decoded.shape
    worst = np.abs(decoded.astype(int) - expected.astype(int)).max()
    assert worst <= 1, f"the command's frames differ from the pipeline's by {worst} uint8 steps"
    files.write_mp4(tmp_path / "video.mp4", decoded)
    assert main(["encode", str(tmp_path / "video.mp4"), "-o", str(tmp_path / "back.pt"), *args]) == 0
    assert tuple(torch.load(tmp_path / "back.pt").shape) == tuple(latent_shape)  # the pipelines' [B, C, F, H, W]
