"""The service against diffusers' own, unchanged client (`remote_decode`, `remote_encode`): every output type, each
family's layouts and de-normalization, compared with an in-process TorchaxVAE of the same model; then the
JSON errors, the token, the body limit, batching, a full queue, deadlines and clients that go away.
"""

import concurrent.futures
import copy
import http.client
import json
import threading
import time

import numpy as np
import pytest
import requests
import torch
from diffusers.utils.remote_utils import remote_decode, remote_encode
from diffusers.video_processor import VideoProcessor
from PIL import Image

from helpers import BF16_ERROR_RATIO, Bf16ConvsWithFp32Sums, assert_parity, randn, random_vae, with_noise
from serving import metric, serving
from torchax_vae import TorchaxVAE
from torchax_vae.serve import Limits, create_app

pytestmark = pytest.mark.filterwarnings("ignore:`do_scaling` is deprecated:FutureWarning")

FAMILIES = {  # name -> (config, latents as the family's pipelines hold them, unpacked to [B, C, F, H, W])
    "cogvideox": ("tiny", (1, 3, 4, 8, 8)),  # BFCHW: [B, F, C, H, W]
    "wan": ("wan-tiny", (1, 16, 2, 8, 8)),
    "hunyuanvideo": ("hunyuan-tiny", (1, 4, 2, 8, 8)),
    "ltx": ("ltx091-tiny", None),  # timestep-conditioned: decode noise from the request's seed
}


def _ltx_shape(vae):
    return (1, vae.config.latent_channels, 2, 4, 4)


@pytest.fixture(scope="module")
def plain():
    """The diffusers models the service's are wrapped from, in PyTorch: what its answers are checked against."""
    models = {name: random_vae(config) for name, (config, _) in FAMILIES.items()}
    with_noise(models["ltx"])
    models["qwenimage"] = random_vae("qwenimage-tiny")
    models["flux"] = random_vae("flux-tiny")  # AutoencoderKL: images [B, C, H, W]
    models["sana"] = random_vae("dc-tiny")  # AutoencoderDC: latents with no posterior
    models["flux2"] = random_vae("flux2-tiny")  # AutoencoderKLFlux2: bn statistics
    models["flux2"].bn.running_var.uniform_(0.5, 1.5, generator=torch.Generator().manual_seed(0))
    return models


@pytest.fixture(scope="module")
def wrapped(plain):
    return {name: TorchaxVAE(model) for name, model in plain.items()}


def pipeline_decode(name: str, vae, latents, seed: int = 0):
    """What each family's diffusers pipeline does with its latents after denoising, on diffusers' own model in
    PyTorch (diffusers' code, not this package's): the video [B, C, F, H, W] the service must answer `pt` with."""
    from diffusers import LTXPipeline
    from diffusers.utils.torch_utils import randn_tensor

    if name == "cogvideox":  # CogVideoXPipeline.decode_latents
        z = 1 / vae.config.scaling_factor * latents.permute(0, 2, 1, 3, 4)
    elif name == "hunyuanvideo":  # HunyuanVideoPipeline
        z = latents / vae.config.scaling_factor
    elif name == "wan":  # WanPipeline
        mean = torch.tensor(vae.config.latents_mean).view(1, vae.config.z_dim, 1, 1, 1)
        z = latents / (1.0 / torch.tensor(vae.config.latents_std).view(1, vae.config.z_dim, 1, 1, 1)) + mean
    elif name == "ltx":  # LTXPipeline, decode_timestep 0.0 and decode_noise_scale None (its defaults)
        z = LTXPipeline._denormalize_latents(latents, vae.latents_mean, vae.latents_std, vae.config.scaling_factor)
        noise = randn_tensor(z.shape, generator=torch.Generator().manual_seed(seed), dtype=z.dtype)
        scale = torch.tensor([0.0] * z.shape[0])[:, None, None, None, None]
        z = (1 - scale) * z + scale * noise
        torch.manual_seed(seed)  # the decoder's own noise, drawn from torch's generator (the request's seed here)
        return vae.decode(z, torch.tensor([0.0] * z.shape[0])).sample
    else:
        raise ValueError(name)
    return vae.decode(z).sample


@pytest.fixture(scope="module")
def base(wrapped):
    with serving(create_app(wrapped)) as url:
        yield url


def _latents(name, vae, seed=0):
    shape = FAMILIES[name][1] or _ltx_shape(vae)
    return randn(*shape, seed=seed)


def _uint8(video):  # [B, C, F, H, W] in [-1, 1] -> [B, F, H, W, C], as diffusers' processors round
    return ((video / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 4, 1)


def _max_level_diff(a, b) -> int:
    return int(np.abs(np.asarray(a, dtype=np.int32) - np.asarray(b, dtype=np.int32)).max())


@pytest.mark.parametrize("name", list(FAMILIES))
def test_decode_every_output_type_matches_the_pipeline(base, wrapped, plain, name, tmp_path):
    vae = wrapped[name]
    z = _latents(name, vae)
    reference = pipeline_decode(name, plain[name], z)
    endpoint = f"{base}/decode/{name}"

    raw = remote_decode(endpoint=endpoint, tensor=z, output_type="pt", return_type="pt")
    assert raw.shape == reference.shape and raw.dtype == torch.float32
    assert_parity(raw, reference, f"{name}: pt against the pipeline's decode in PyTorch")
    assert reference.std() > 1e-3, f"{name}: a near-constant reference proves nothing"

    levels = _uint8(reference)[0]  # [F, H, W, 3]
    frames = remote_decode(endpoint=endpoint, tensor=z, output_type="pt", partial_postprocess=True, return_type="pt")
    assert frames.dtype == torch.uint8 and tuple(frames.shape) == tuple(levels.shape)
    assert _max_level_diff(frames, levels) <= 1, f"{name}: uint8 frames off by more than one level"

    images = remote_decode(endpoint=endpoint, tensor=z, output_type="pt", partial_postprocess=True)
    assert len(images) == levels.shape[0] and images[0].size == (levels.shape[2], levels.shape[1])

    pil = remote_decode(endpoint=endpoint, tensor=z, output_type="pil", processor=VideoProcessor())
    assert len(pil) == levels.shape[0]
    assert _max_level_diff(np.stack([np.asarray(im) for im in pil]), levels) <= 1

    video = remote_decode(endpoint=endpoint, tensor=z, output_type="mp4", return_type="mp4")
    from torchax_vae.media.video_input import read_video

    path = tmp_path / "answer.mp4"
    path.write_bytes(video)
    decoded, fps = read_video(path)
    assert decoded.shape == tuple(levels.shape) and fps == 8


@torch.no_grad()
def test_scaling_and_shift_factors_as_given(base, plain):
    vae, z = plain["wan"], _latents("wan", plain["wan"], seed=3)
    raw = remote_decode(endpoint=f"{base}/decode/wan", tensor=z, output_type="pt", return_type="pt",
                        scaling_factor=0.5, shift_factor=0.1)
    assert_parity(raw, vae.decode(z / 0.5 + 0.1).sample, "scaling and shift")
    ready = remote_decode(endpoint=f"{base}/decode/wan", tensor=z, output_type="pt", return_type="pt", do_scaling=False)
    assert_parity(ready, vae.decode(z).sample, "do_scaling=False")


@torch.no_grad()
def test_bf16_latents_are_read(base, plain):
    vae, z = plain["wan"], _latents("wan", plain["wan"], seed=4).bfloat16()
    raw = remote_decode(endpoint=f"{base}/decode/wan", tensor=z, output_type="pt", return_type="pt", do_scaling=False)
    assert_parity(raw, vae.decode(z.float()).sample, "bf16 latents")


@torch.no_grad()
def test_packed_latents_with_height_and_width(base, wrapped, plain):
    vae = wrapped["qwenimage"]  # (its unpack_latents: the pipeline's own unpacking, tested in test_qwenimage.py)
    size = 8 * vae.spatial_compression_ratio  # 8x8 latents, packed as 4x4 tokens of 2x2 patches
    packed = randn(1, 16, vae.latent_channels * 4, seed=5)
    raw = remote_decode(endpoint=f"{base}/decode/qwenimage", tensor=packed, output_type="pt", return_type="pt",
                        do_scaling=False, height=size, width=size)
    reference = plain["qwenimage"].decode(vae.unpack_latents(packed, size, size)).sample
    assert_parity(raw, reference, "packed latents")
    image = remote_decode(endpoint=f"{base}/decode/qwenimage", tensor=packed, do_scaling=False, height=size, width=size,
                          output_type="pil", image_format="png")
    assert image.size == (size, size) and image.format == "png"
    assert _max_level_diff(np.asarray(image), _uint8(reference)[0, 0]) <= 1


@torch.no_grad()
def test_images_of_autoencoder_kl_every_output_type(base, plain):
    """Flux's VAE (AutoencoderKL): 4-D latents, scaling and shift as the client sends them, packed latents, a batch
    of two as tensors; every answer equal to diffusers' decode (uint8 within one level)."""
    vae, endpoint = plain["flux"], f"{base}/decode/flux"
    z = randn(2, 16, 8, 12, seed=7)
    reference = vae.decode(z / 0.3611 + 0.1159).sample
    raw = remote_decode(endpoint=endpoint, tensor=z, output_type="pt", return_type="pt", scaling_factor=0.3611,
                        shift_factor=0.1159)
    assert raw.shape == (2, 3, 16, 24)
    assert_parity(raw, reference, "flux, scaling and shift")
    levels = _uint8(reference[:, :, None])[:, 0]  # [B, H, W, 3]
    frames = remote_decode(endpoint=endpoint, tensor=z, output_type="pt", partial_postprocess=True, return_type="pt",
                           scaling_factor=0.3611, shift_factor=0.1159)
    assert tuple(frames.shape) == tuple(levels.shape) and _max_level_diff(frames, levels) <= 1
    one = z[:1]
    image = remote_decode(endpoint=endpoint, tensor=one, output_type="pil", image_format="png", scaling_factor=0.3611,
                          shift_factor=0.1159)
    assert image.size == (24, 16) and _max_level_diff(np.asarray(image), levels[0]) <= 1
    packed = one.view(1, 16, 4, 2, 6, 2).permute(0, 2, 4, 1, 3, 5).reshape(1, 24, 64)  # FluxPipeline._pack_latents
    unpacked = remote_decode(endpoint=endpoint, tensor=packed, output_type="pt", return_type="pt", height=16, width=24,
                             scaling_factor=0.3611, shift_factor=0.1159)
    assert_parity(unpacked, reference[:1], "flux, packed latents")
    answer = _post(endpoint, one.numpy().tobytes(), {"shape": list(one.shape), "dtype": "float32", "output_type": "mp4"})
    assert answer.status_code == 400 and "decodes images" in answer.json()["error"]
    answer = _post(endpoint, b"\0" * 4096, {"shape": [1, 16, 1, 8, 8], "dtype": "float32"})
    assert answer.status_code == 400 and "must be 4-D [B, C, H, W]" in answer.json()["error"], answer.text
    pixels = (np.random.default_rng(2).random((32, 48, 3)) * 255).astype(np.uint8)
    latents = remote_encode(endpoint=f"{base}/encode/flux", image=Image.fromarray(pixels), scaling_factor=0.3611,
                            shift_factor=0.1159)
    x = torch.from_numpy(pixels).permute(2, 0, 1)[None].float() / 127.5 - 1
    expected = (vae.encode(x).latent_dist.mode() - 0.1159) * 0.3611
    assert_parity(latents, expected, "flux, encode")



@pytest.mark.parametrize("name", ["sana", "flux2"])
@torch.no_grad()
def test_sana_and_flux2_images_with_their_own_normalization(base, wrapped, plain, name):
    """do_scaling with no factors: each VAE's own normalization (Sana's `z / scaling_factor`, Flux.2's bn statistics
    and its packed latents); encode's latents (Sana's with no posterior); each against diffusers' model."""
    ours, vae, endpoint = wrapped[name], plain[name], f"{base}/decode/{name}"
    z = randn(1, ours.latent_channels, 8, 12, seed=8)
    reference = vae.decode(ours.unscale_latents(z)).sample
    raw = remote_decode(endpoint=endpoint, tensor=z, output_type="pt", return_type="pt", do_scaling=True)
    assert_parity(raw, reference, f"{name}, its own normalization")
    if name == "flux2":  # the pipeline's output_type="latent": 2x2 patches of latents as tokens
        from diffusers import Flux2Pipeline

        # .contiguous(): remote_decode sends the tensor's storage as it lies (safetensors' _to_ndarray), and
        # _pack_latents returns a transposed view
        packed = Flux2Pipeline._pack_latents(Flux2Pipeline._patchify_latents(z)).contiguous()
        unpacked = remote_decode(endpoint=endpoint, tensor=packed, output_type="pt", return_type="pt",
                                 do_scaling=True, height=16, width=24)
        assert_parity(unpacked, reference, "flux2, packed latents")
    pixels = (np.random.default_rng(3).random((32, 32, 3)) * 255).astype(np.uint8)
    latents = remote_encode(endpoint=f"{base}/encode/{name}", image=Image.fromarray(pixels), scaling_factor=0.5)
    x = torch.from_numpy(pixels).permute(2, 0, 1)[None].float() / 127.5 - 1
    out = vae.encode(x)
    expected = (out.latent if name == "sana" else out.latent_dist.mode()) * 0.5
    assert_parity(latents, expected, f"{name}, encode")


@torch.no_grad()
def test_encode_an_image_and_a_tensor(base, plain):
    vae = plain["cogvideox"]
    pixels = (np.random.default_rng(0).random((32, 48, 3)) * 255).astype(np.uint8)
    latents = remote_encode(endpoint=f"{base}/encode/cogvideox", image=Image.fromarray(pixels))
    x = torch.from_numpy(pixels).permute(2, 0, 1)[None, :, None].float() / 127.5 - 1
    mode = vae.encode(x).latent_dist.mode()
    expected = mode.permute(0, 2, 1, 3, 4)  # CogVideoX's pipelines hold [B, F, C, H, W]
    assert_parity(latents, expected, "cogvideox, encode an image")

    video = randn(1, 3, 5, 16, 16, seed=6).clamp(-1, 1)
    scaled = remote_encode(endpoint=f"{base}/encode/cogvideox", image=video, scaling_factor=0.7, shift_factor=0.2)
    expected = ((vae.encode(video).latent_dist.mode() - 0.2) * 0.7).permute(0, 2, 1, 3, 4)
    assert_parity(scaled, expected, "cogvideox, encode a tensor")


def test_round_trip_through_both_routes(base):
    pixels = (np.random.default_rng(1).random((32, 32, 3)) * 255).astype(np.uint8)
    latents = remote_encode(endpoint=f"{base}/encode/wan", image=Image.fromarray(pixels))
    image = remote_decode(endpoint=f"{base}/decode/wan", tensor=latents, do_scaling=False, output_type="pil")
    assert image.size == (32, 32)


def _post(url, body=b"", params=None, headers=None):
    return requests.post(url, data=body, params=params or {}, headers=headers or {}, timeout=60)


@pytest.mark.parametrize("params, body, status, words", [
    ({"shape": [1, 16, 2, 8, 8], "dtype": "float32"}, b"\0" * 12, 400, "needs 8192"),
    ({"shape": [1, 16, 2, 8, 8], "dtype": "int8"}, b"\0" * 2048, 400, "dtype must be one of"),
    ({"shape": [1, 4, 2, 8, 8], "dtype": "float32"}, b"\0" * 2048, 400, "decoder takes 16"),
    ({"shape": [16, 8, 8], "dtype": "float32"}, b"\0" * 4096, 400, "packed"),
    ({"shape": [1, 16, 2, 8, 8], "dtype": "float32", "output_type": "gif"}, b"\0" * 8192, 400, "output_type"),
    ({"shape": ["a"], "dtype": "float32"}, b"", 400, "integers"),
    ({"shape": [1, 16, 2, 8, 8], "dtype": "float32", "scaling_factor": "0"}, b"\0" * 8192, 400, "positive"),
])
def test_bad_requests_get_json_400(base, params, body, status, words):
    answer = _post(f"{base}/decode/wan", body, params)
    assert answer.status_code == status and words in answer.json()["error"], answer.text


def test_nan_unknown_model_routes_and_one_image_of_a_video(base):
    z = np.zeros((1, 16, 2, 8, 8), np.float32)
    z[0, 0, 0, 0, 0] = np.nan
    params = {"shape": list(z.shape), "dtype": "float32"}
    answer = _post(f"{base}/decode/wan", z.tobytes(), params)
    assert answer.status_code == 400 and "NaN" in answer.json()["error"]
    assert _post(f"{base}/decode/nope", z.tobytes(), params).status_code == 404
    assert requests.get(f"{base}/decode/wan").status_code == 405
    assert requests.get(f"{base}/elsewhere").json()["error"].startswith("no route")
    z[:] = 0
    answer = _post(f"{base}/decode/wan", z.tobytes(), {**params, "output_type": "pil"}, {"Accept": "image/jpeg"})
    assert answer.status_code == 400 and "VideoProcessor" in answer.json()["error"]
    answer = _post(f"{base}/encode/wan", b"not an image")
    assert answer.status_code == 400 and "neither an image" in answer.json()["error"]
    # the server is undisturbed
    assert remote_decode(endpoint=f"{base}/decode/wan", tensor=torch.zeros(1, 16, 2, 8, 8), output_type="pt",
                         return_type="pt", do_scaling=False).shape == (1, 3, 5, 64, 64)
    assert metric(base, "torchax_vae_rejected_requests_total", reason="bad_request") >= 2


@pytest.fixture(scope="module")
def guarded(wrapped):
    app = create_app({"wan": wrapped["wan"]}, token="s3cret", limits=Limits(max_body_mb=0.01))
    with serving(app) as url:
        yield url


def test_token_bearer_basic_and_open_health(guarded):
    z = torch.zeros(1, 16, 2, 8, 8)
    refused = _post(f"{guarded}/decode/wan", z.numpy().tobytes(), {"shape": list(z.shape), "dtype": "float32"})
    assert refused.status_code == 401 and "Bearer" in refused.headers["WWW-Authenticate"]
    assert "token" in refused.json()["error"]
    bearer = _post(f"{guarded}/decode/wan", z.numpy().tobytes(), {"shape": list(z.shape), "dtype": "float32"},
                   {"Authorization": "Bearer s3cret"})
    assert bearer.status_code == 200
    port = guarded.rsplit(":", 1)[1]  # the unchanged client, with the token in the URL as Basic auth
    out = remote_decode(endpoint=f"http://user:s3cret@127.0.0.1:{port}/decode/wan", tensor=z, output_type="pt",
                        return_type="pt", do_scaling=False)
    assert out.shape == (1, 3, 5, 64, 64)
    wrong = requests.post(f"http://user:wrong@127.0.0.1:{port}/decode/wan", data=b"")
    assert wrong.status_code == 401
    assert requests.get(f"{guarded}/health/ready").status_code == 200
    assert requests.get(f"{guarded}/metrics").status_code == 200


def test_body_limit_by_length_and_by_bytes(guarded):
    headers = {"Authorization": "Bearer s3cret"}
    params = {"shape": [1, 16, 2, 64, 64], "dtype": "float32"}
    answer = _post(f"{guarded}/decode/wan", b"\0" * 20000, params, headers)
    assert answer.status_code == 413 and "--max-body-mb" in answer.json()["error"]
    chunked = requests.post(f"{guarded}/decode/wan", data=iter([b"\0" * 4096] * 5), params=params, headers=headers)
    assert chunked.status_code == 413  # no Content-Length: counted as it arrives


def test_requests_of_one_shape_batch_together(wrapped, plain):
    vae = wrapped["wan"]
    zs = [randn(1, 16, 2, 8, 8, seed=10 + i) for i in range(4)]
    with torch.no_grad():
        references = [plain["wan"].decode(z).sample for z in zs]
    with serving(create_app({"wan": vae}, limits=Limits(max_batch=4, max_wait_ms=0))) as url:
        gate = Gate(vae)  # the first request holds the worker until the other three are queued: no race on arrival
        try:
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                def send(z):
                    return remote_decode(endpoint=f"{url}/decode/wan", tensor=z, output_type="pt", return_type="pt",
                                         do_scaling=False)

                first = pool.submit(send, zs[0])
                assert gate.entered.wait(60)
                rest = [pool.submit(send, z) for z in zs[1:]]
                _until(lambda: metric(url, "torchax_vae_queue_length") == 3)
                gate.open.set()
                outs = [first.result()] + [r.result() for r in rest]
        finally:
            gate.close()
        # two batches: the first alone, then the three queued behind it together
        assert metric(url, "torchax_vae_batch_size_count") == 2 and metric(url, "torchax_vae_batch_size_sum") == 4
    for out, reference in zip(outs, references):
        assert_parity(out, reference, "a batched answer against diffusers' decode")


class Gate:
    """Holds the model's decode until opened: the worker is busy, so requests queue behind it. (The worker's
    decode is a stream: its prepared call, `_decode_call`, is where each request's decode starts.)"""

    def __init__(self, vae):
        self.open, self.entered = threading.Event(), threading.Event()
        self.vae, self.decode = vae, vae._decode_call

        def decode(*args, **kwargs):
            self.entered.set()
            self.open.wait(60)
            return self.decode(*args, **kwargs)

        vae._decode_call = decode

    def close(self):
        self.open.set()
        del self.vae._decode_call  # the class's method again


def _send(url, z):
    return _post(url, z.numpy().tobytes(), {"shape": list(z.shape), "dtype": "float32", "output_type": "pt"})


def _until(condition, within: float = 30) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_full_queue_429_deadline_504_and_a_client_that_goes_away():
    vae = TorchaxVAE(random_vae("wan-tiny"))
    z = torch.zeros(1, 16, 2, 8, 8)
    vae.decode(z)  # compiled: the first request, held past its deadline, stops before its first chunk and runs none
    # a deadline far past the few polls below however loaded the machine (the gate, not the clock, holds the worker)
    app = create_app({"wan": vae}, limits=Limits(max_batch=1, max_queue=1, max_wait_ms=0, timeout_s=10))
    with serving(app) as url:
        gate = Gate(vae)
        try:
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                first = pool.submit(_send, f"{url}/decode/wan", z)
                assert gate.entered.wait(30)
                second = pool.submit(_send, f"{url}/decode/wan", z)  # waits in the queue
                _until(lambda: metric(url, "torchax_vae_queue_length") == 1)
                full = _send(f"{url}/decode/wan", z)
                assert full.status_code == 429 and full.headers["Retry-After"] == "1", full.text
                assert "queue is full" in full.json()["error"]
                # no answer within 10 s: both are answered 504; the one still queued never reaches the device
                assert second.result().status_code == 504 and "dropped" in second.result().json()["error"]
                assert first.result().status_code == 504
                gate.open.set()
            # the first, past its deadline once the gate opens, stops at its first chunk; the second never runs
            _until(lambda: metric(url, "torchax_vae_device_seconds_count", model="wan", kind="decode") == 1)
            _until(lambda: metric(url, "torchax_vae_rejected_requests_total", reason="dropped") == 1)
            # a client that sends its request and leaves: dropped before the device
            gate.open.clear()
            gate.entered.clear()
            busy = concurrent.futures.ThreadPoolExecutor(1).submit(_send, f"{url}/decode/wan", z)
            assert gate.entered.wait(30)
            port = int(url.rsplit(":", 1)[1])
            connection = http.client.HTTPConnection("127.0.0.1", port)
            query = "&".join(f"shape={d}" for d in z.shape) + "&dtype=float32&output_type=pt"
            connection.request("POST", f"/decode/wan?{query}", body=z.numpy().tobytes())
            _until(lambda: metric(url, "torchax_vae_queue_length") == 1)
            connection.sock.close()
            threading.Event().wait(0.5)
            gate.open.set()
            assert busy.result().status_code == 200
            _until(lambda: metric(url, "torchax_vae_rejected_requests_total", reason="client_gone") == 1)
            assert metric(url, "torchax_vae_rejected_requests_total", reason="client_gone") == 1
        finally:
            gate.close()
        assert _send(f"{url}/decode/wan", z).status_code == 200  # still up
        # ran: the first (held, late), the busy one and the last; never the queued 504 nor the one whose client left
        assert metric(url, "torchax_vae_device_seconds_count", model="wan", kind="decode") == 3
        assert json.loads(requests.get(f"{url}/health/live").text) == {"status": "live"}


def test_metrics_names_types_and_counts(base):
    """Each metric has its type, and one answered decode moves the counts it should by one."""
    from prometheus_client.parser import text_string_to_metric_families

    def families():
        return {f.name: f.type for f in text_string_to_metric_families(requests.get(f"{base}/metrics").text)}

    types = families()
    for name, kind in (("torchax_vae_requests", "counter"), ("torchax_vae_queue_length", "gauge"),
                       ("torchax_vae_batch_size", "histogram"), ("torchax_vae_queue_wait_seconds", "histogram"),
                       ("torchax_vae_device_seconds", "histogram"), ("torchax_vae_request_seconds", "histogram"),
                       ("torchax_vae_compiles", "counter"), ("torchax_vae_rejected_requests", "counter"),
                       ("torchax_vae_first_chunk_seconds", "histogram"), ("torchax_vae_chunks", "counter"),
                       ("torchax_vae_cancelled_jobs", "counter"), ("torchax_vae_ready", "gauge")):
        assert types.get(name) == kind, (name, types.get(name))
    labels = {"route": "decode", "model": "wan"}
    counted = {
        "answered": lambda: metric(base, "torchax_vae_requests_total", code="200", **labels),
        "timed": lambda: metric(base, "torchax_vae_request_seconds_count", **labels),
        "device calls": lambda: metric(base, "torchax_vae_device_seconds_count", model="wan", kind="decode"),
        "first chunks": lambda: metric(base, "torchax_vae_first_chunk_seconds_count"),
    }
    before = {k: f() for k, f in counted.items()}
    assert _send(f"{base}/decode/wan", randn(1, 16, 2, 8, 8, seed=30)).status_code == 200
    moved = {k: f() - before[k] for k, f in counted.items()}
    assert moved == dict.fromkeys(counted, 1.0), moved
    assert metric(base, "torchax_vae_ready") == 1 and metric(base, "torchax_vae_queue_length") == 0


def test_bf16_service_answers_bf16_within_pytorch_bf16s_error():
    """A bf16 model's answer is bf16, and its error against diffusers' fp32 decode is at most 2x PyTorch bf16's own
    (helpers.bf16_errors); it is also the in-process bf16 decode, bit for bit (the service casts what it is sent to
    the model's dtype)."""
    vae = random_vae("wan-tiny")
    ours = TorchaxVAE(vae, dtype=torch.bfloat16)
    z = randn(1, 16, 2, 8, 8, seed=8)
    with serving(create_app({"wan": ours})) as url:
        raw = remote_decode(endpoint=f"{url}/decode/wan", tensor=z, output_type="pt", return_type="pt",
                            do_scaling=False)
    assert raw.dtype == torch.bfloat16
    with torch.no_grad(), Bf16ConvsWithFp32Sums():
        reference = vae.decode(z).sample
        theirs = copy.deepcopy(vae).to(torch.bfloat16).decode(z.bfloat16()).sample
    torch_bf16 = (theirs.float() - reference).abs().max().item()
    served = (raw.float() - reference).abs().max().item()
    assert served <= BF16_ERROR_RATIO * torch_bf16, f"served bf16 max |Δ| {served:.3g}; PyTorch bf16's {torch_bf16:.3g}"
    assert torch.equal(raw.float(), ours.decode(z.bfloat16()).sample.float()), "bf16 answer differs from in-process"


def test_an_output_larger_than_memory_is_413_before_compiling(base, monkeypatch):
    import torchax_vae.engine.memory

    monkeypatch.setattr(torchax_vae.engine.memory, "free_bytes", lambda device: 10**6)  # 1 MB free on the device
    z = torch.zeros(1, 16, 9, 8, 8)  # 33 frames of 64x64: about 3.2 MB of frames, more than is free
    calls = metric(base, "torchax_vae_device_seconds_count", model="wan")
    answer = _post(f"{base}/decode/wan", z.numpy().tobytes(), {"shape": list(z.shape), "dtype": "float32"})
    assert answer.status_code == 413 and "more than the" in answer.json()["error"], answer.text
    assert metric(base, "torchax_vae_device_seconds_count", model="wan") == calls  # it never reached the device
