"""`torchax-vae encode` of a video file in chunks: frames read in order, a frame range at a time, through an
encode session (torchax_vae/facade/session.py), so neither the host nor the device holds the whole video.

The ranges are the encoder loop's own (`Family.encode_ranges`: Wan's first frame then 4 at a time, CogVideoX's
frame batches), so the posterior is the whole video's, bit for bit: the same programs on the same frames.
"""

import numpy as np
import torch

from torchax_vae.media import pixels, video_input
from torchax_vae.media.checks import InputError

__all__ = ["streams", "moments"]


def streams(vae, programs: list[dict]) -> bool:
    """Whether the encode of a video by `vae` streams: its family's encoder runs in ranges of frames carrying
    state, and the call's programs (`precompile`'s) are untiled, as a session's are (or the family's sessions
    tile as its encode does: MiniMax H3's clips)."""
    family = vae._family
    return (family.carries_state and family.encode_ranges(1) is not None
            and (family.session_tiles or not any("/tile" in p["name"] for p in programs)))


def moments(vae, path, frames: int, channels: int) -> torch.Tensor:
    """The posterior's parameters [1, 2C, f, h, w] of the video file's first `frames` frames, on the host."""
    ranges = vae._family.encode_ranges(frames)
    out = []
    with video_input.video_frames(path, channels) as (_, each), vae.encode_session() as session:
        for start, end in ranges:
            chunk = [frame for _, frame in zip(range(end - start), each)]
            if len(chunk) < end - start:  # the file ended before the count said it would
                raise InputError(f"video {path} ended after {start + len(chunk)} frames; counted {frames}")
            x = pixels.from_uint8(torch.from_numpy(np.stack(chunk)).permute(3, 0, 1, 2)[None], vae._family, 1)
            out.append(session.encode(x.to(vae.dtype)).latent_dist.parameters)  # the model's dtype
        out.append(session.finish().latent_dist.parameters)  # what the session held back (MiniMax H3's last clip)
    return torch.cat(out, dim=2)
