"""The decoder's condition in the service (AsymmetricAutoencoderKL, SD inpainting's asymmetric VAE): a decode that
sends the image being inpainted and its mask beside the latents gets the conditioned decode, as the pipeline's
`vae.decode(latents, generator=, image=, mask=)`.

The protocol (docs/guide/serve.md): `image_shape` and `mask_shape` (repeated, as `shape`) give their shapes, [B, 3, H, W]
and [B, 1, H, W] at the decoded size, as the pipeline preprocesses them (the image in [-1, 1], the mask 1 where it
repaints); their bytes follow the latents' in the body, image then mask, in the same `dtype`. Such a decode runs
alone (its condition is its own), in the device worker's queue as any other.
"""

import math

from torchax_vae.models.asym_kl import AsymmetricKL
from torchax_vae.serve.protocol import decode_request, Parsed, RequestError, shape_of, TENSOR_DTYPES, tensor_of

KEYS = ("image_shape", "mask_shape")


def asked(params) -> bool:
    """Whether a decode request sends a condition."""
    return any(params.get(key) is not None for key in KEYS)


def _conditioned(vae) -> bool:

    return isinstance(vae._family, AsymmetricKL)


def parse(vae, name: str, params, headers, body: bytes, normalized: bool) -> Parsed:
    """A decode request with the decoder's condition for the model `name` (`vae`), checked."""
    if not _conditioned(vae):
        raise RequestError(400, f"{name} ({vae.model_class.__name__}) decodes latents alone: image_shape and "
                                "mask_shape condition AsymmetricAutoencoderKL's decoder (SD inpainting's)")
    if any(params.get(key) is None for key in KEYS):
        raise RequestError(400, "the decoder's condition is the image and its mask: send both, with image_shape "
                                "and mask_shape (one per dimension) and their bytes after the latents'")
    image_shape, mask_shape = shape_of(params, "image_shape"), shape_of(params, "mask_shape")
    dtype_name = params.get("dtype")
    if dtype_name not in TENSOR_DTYPES:
        raise RequestError(400, f"dtype must be one of {sorted(TENSOR_DTYPES)}, got {dtype_name!r}")
    dtype = TENSOR_DTYPES[dtype_name]
    image_bytes, mask_bytes = (math.prod(shape) * dtype.itemsize for shape in (image_shape, mask_shape))
    if len(body) < image_bytes + mask_bytes:
        raise RequestError(400, f"the body holds {len(body)} bytes; the image and mask alone (image_shape "
                                f"{list(image_shape)}, mask_shape {list(mask_shape)} of {dtype_name}) need "
                                f"{image_bytes + mask_bytes}")
    view = memoryview(body)
    split = len(body) - image_bytes - mask_bytes
    parsed = decode_request(vae, params, headers, bytes(view[:split]), normalized)
    z = parsed.tensor
    size = [n * vae.spatial_compression_ratio for n in z.shape[-2:]]
    for what, shape, channels in (("image", image_shape, vae.video_channels), ("mask", mask_shape, 1)):
        if tuple(shape) != (z.shape[0], channels, *size):
            raise RequestError(400, f"the {what} must be [{z.shape[0]}, {channels}, {size[0]}, {size[1]}] for latents "
                                    f"{list(z.shape)} (the decoded size), got {what}_shape {list(shape)}")
    image = tensor_of(view[split:split + image_bytes], image_shape, dtype)
    mask = tensor_of(view[split + image_bytes:], mask_shape, dtype)
    parsed.decode_args = (None, image.contiguous(), mask.contiguous())  # decode(z, generator, image, mask)
    return parsed
