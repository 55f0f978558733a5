"""Scripts run (so they cannot rot) and say what they measured."""

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from torchax_vae.engine import staging
from torchax_vae.models.cogvideox import STAGES
from helpers import by_hand, random_vae

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def load(name):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.heavy  # 56 s on 2 cores: out of CI's time (the parity tests run the same comparisons)
def test_parity_script_prints_table(capsys):
    assert load("parity").main(["--config", "tiny", "--frames", "9", "17", "--batch", "1", "2", "--size", "16"]) == 0
    out = capsys.readouterr().out
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in out.splitlines() if line.startswith("| tiny")]
    # fp32: 9 and 17 frames at batch 1, and at batch 2 with slicing off and on; bf16: batch 1.
    assert [(r[1], r[2], r[3], r[4]) for r in rows] == [
        ("float32", "9", "1", "off"), ("float32", "9", "2", "off"), ("float32", "9", "2", "on"),
        ("float32", "17", "1", "off"), ("float32", "17", "2", "off"), ("float32", "17", "2", "on"),
        ("bfloat16", "9", "1", "off"), ("bfloat16", "17", "1", "off"),
    ]
    for r in rows:
        errors = [float(v) for v in r[6:10]]
        if r[1] == "float32":
            assert max(errors) <= 1e-4, r
        else:
            assert float(r[10]) > 0 and errors[3] <= 2 * float(r[10]), r
    assert re.search(r"fp32 worst max \|Δ\|: \d\.\d\de-\d\d", out)


@by_hand  # 45-67 s on 2 cores: out of CI's time
def test_bench_script_compiles_tiny_tiling_cases(capsys, tmp_path):
    out_json = tmp_path / "bench.jsonl"
    # One scheduler (the other is an XLA flag in the worker's environment; README's tables come from both).
    argv = ["--config", "tiny", "--frames", "9", "--size", "64x96", "--tile", "32x48", "--schedulers", "concurrency_off"]
    assert load("bench").main([*argv, "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in out.splitlines() if line.startswith("| tiny")]
    assert [(r[0], r[1]) for r in rows] == [
        (label, scheduler)
        for scheduler in ("concurrency_off",)
        for label in (
            "tiny decode 9x32x48 tiling off tiles 32x48 fp32",
            "tiny decode 9x64x96 tiling on tiles 32x48 fp32",
            "tiny decode 13x64x96 tiling on tiles 32x48 fp32",
            "tiny decode 9x64x96 tiling off tiles 32x48 fp32",
        )
    ]
    # 9 frames: one frame batch of 3 latent frames; 13: two batch shapes. A program per layer (the CPU default).
    n = len(staging.plan(random_vae("tiny").decoder, STAGES))
    assert [r[2] for r in rows[:4]] == [str(n), str(n), str(2 * n), str(n)]
    assert re.search(rf"concurrency_off scheduler: tiled .* compiles {n} programs in \d+\.\d\d s = \d+\.\d\dx the untiled", out)
    records = [json.loads(line) for line in out_json.read_text().splitlines()]
    assert len(records) == 4 and all(r["environment"]["jax"] for r in records)
    for scheduler in ("concurrency_off",):
        one_tile, tiled, _, untiled = (r["max_temp_bytes"] for r in records if r["scheduler"] == scheduler)
        assert one_tile <= tiled <= 1.05 * one_tile < untiled, (scheduler, one_tile, tiled, untiled)


@pytest.mark.slow  # the default suite keeps a faster case of the same feature
@pytest.mark.heavy  # 40 s on 2 cores: out of CI's time
def test_bench_script_reports_per_device_memory_over_a_mesh(capsys):
    argv = ["--config", "tiny", "--frames", "9", "--size", "64x128", "--devices", "1,8", "--schedulers", "default"]
    assert load("bench").main(argv) == 0
    out = capsys.readouterr().out
    ratios = {
        (m["kind"], int(m["devices"])): float(m["ratio"])
        for m in re.finditer(r"tiny (?P<kind>\w+) 9x64x128 tiling off fp32(?: on (?P<devices>\d) devices)?: "
                             r"temp per device [\d.]+ GB = (?P<ratio>[\d.]+)x", out)
        if m["devices"]
    }
    assert set(ratios) == {("decode", 8), ("encode", 8)}, out
    assert all(r <= 0.35 for r in ratios.values()), ratios


@pytest.mark.slow  # the default suite keeps a faster case of the same feature
@pytest.mark.heavy  # 43 s on 2 cores (AMD): out of CI's time, as the other script tests
def test_bench_script_compares_cold_and_cached_start(capsys):
    assert load("bench").main(["--config", "tiny", "--frames", "9", "--size", "32x48", "--cache-start"]) == 0
    out = capsys.readouterr().out
    m = re.search(r"XLA compile (?P<cold>[\d.]+) s cold, (?P<cached>[\d.]+) s from the cache", out)
    assert m, out
    assert float(m["cached"]) < 0.5 * float(m["cold"]), m.groupdict()


@pytest.mark.slow
@pytest.mark.heavy  # 89 s on 2 cores: out of CI's time; run by hand after a change to scripts/train_tiny.py
def test_train_tiny_trains_resumes_and_exports(tmp_path, capsys):
    from diffusers import AutoencoderKLCogVideoX

    train = load("train_tiny")
    argv = ["--workdir", str(tmp_path / "run"), "--batch", "1", "--frames", "9", "--size", "16", "--warmup", "1",
            "--eval-every", "2", "--checkpoint-every", "2", "--noise-ramp", "2,4"]
    train.main([*argv, "--steps", "4"])
    train.main([*argv, "--steps", "6"])  # picks up the checkpoint at step 4
    assert "resuming at step 4" in capsys.readouterr().out
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [2, 4, 6]
    assert [r["noise"] for r in log] == [0.0, 0.5, 1.0]
    assert all(r["val_psnr"] > 0 and r["loss"] > 0 for r in log)
    target = train.export(tmp_path / "run", seed=0, target=tmp_path / "model")
    model = AutoencoderKLCogVideoX.from_pretrained(target, low_cpu_mem_usage=False)
    assert list(model.config.block_out_channels) == train.TINY_CONFIG["block_out_channels"]
    assert model.config.scaling_factor != AutoencoderKLCogVideoX().config.scaling_factor  # measured, not the default
    assert (target / "training_log.jsonl").read_text() == (tmp_path / "run" / "log.jsonl").read_text()


@by_hand  # 77 s on 2 cores, each side in its own process: out of CI's time, as the GPU table row below
def test_bench_speed_times_both_sides(capsys, tmp_path):  # runs the same path
    """--speed: both sides per case in their own processes, numerics checked first, a table and JSON lines."""
    out_json = tmp_path / "speed.jsonl"
    argv = ["--speed", "--config", "tiny", "--frames", "9", "--size", "32x48", "--repeats", "2", "--profile"]
    assert load("bench").main([*argv, "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in out.splitlines() if line.startswith("| tiny")]
    assert [r[0] for r in rows] == ["tiny decode 9x32x48 fp32", "tiny encode 9x32x48 fp32"]
    assert all(float(r[1].split(" / ")[0]) <= 1e-4 for r in rows), rows  # max |Δ| / relative L2
    assert re.search(r"tiny decode 9x32x48 fp32: TorchaxVAE runs at \d+\.\d\dx PyTorch's speed", out)
    assert re.search(r"tiny encode 9x32x48 fp32: first call [\d.]+ s cold, [\d.]+ s warm \(\d+ of \d+ programs", out)
    assert re.search(r"its \d+ convolutions timed alone take \d+\.\d\d s in PyTorch, \d+\.\d\d s in XLA", out)
    records = [json.loads(line) for line in out_json.read_text().splitlines()]
    timed, profiles = records[:2], records[2:]
    for r in timed:
        assert r["numerics_ok"] and r["environment"]["torch"]
        for side in ("torch", "torchax", "torchax_warm"):
            assert len(r[side]["seconds"]) == 2 and r[side]["peak_rss_bytes"] > 1e8
            assert r[side]["median_seconds"] > 0 and r[side]["cold_seconds"] > 0
        assert r["torch"]["peak_rss_bytes"] != r["torchax"]["peak_rss_bytes"]  # separate processes
        # cold: every program traced; warm (a new process, the same cache folder): every program from the store,
        # with the same result
        cold, warm = r["torchax"]["first_call"], r["torchax_warm"]["first_call"]
        assert cold["from_store"] == 0 and warm["from_store"] == warm["programs"] == cold["programs"] > 0
        assert warm["trace_lower_seconds"] < cold["trace_lower_seconds"] and r["warm_max_abs_diff"] == 0.0
        # XLA counts every op of the executed programs. The analytic count is of PyTorch's convolutions:
        # torchax_vae/patches/spatial_norm.py runs the spatial norms' pointwise ones at the latents' size, so fewer.
        assert 0 < 0.8 * r["conv_flops"] <= r["torchax"]["xla_flops"]
        # one frame batch, as one program per layer (the CPU default)
        role = "decoder" if r["case"]["kind"] == "decode" else "encoder"
        assert r["torchax"]["programs_run"] == len(staging.plan(getattr(random_vae("tiny"), role), STAGES))
        assert r["torchax"]["max_temp_bytes"] > 0
        assert r["mfu"] is None and r["torch"]["peak_device_bytes"] is None  # a CPU has no listed peak
    assert all(row[-4] == "n/a" and row[-1] == "n/a" for row in rows)  # MFU and device memory columns
    conv_profiles, op_profiles = profiles[:2], profiles[2:]
    assert all(p["convs"] and p["conv_flops"] == t["conv_flops"] for p, t in zip(conv_profiles, timed))
    assert len(op_profiles) == 2 and all(p["ops"] and p["seconds"] > 0 for p in op_profiles)
    assert re.search(r"tiny decode 9x32x48 fp32: one traced call \d+\.\d\d s; XLA ops by kind: \w+", out)


def test_speed_flags_disagreeing_outputs(monkeypatch, tmp_path):
    """The numerics check comes first: a side whose output differs beyond the tolerance fails the row."""
    import numpy as np

    speed = load("speed")

    def fake_side(side, case, repeats, out_path, cache_dir=None, profile_dir=None):
        np.save(out_path, np.full((2, 2), 1.0 if side == "torch" else 1.001, np.float32))
        return {"median_seconds": 1.0, "cold_seconds": 1.0, "conv_flops": 10, "peak_rss_bytes": 1}

    monkeypatch.setattr(speed, "run_side", fake_side)
    row = speed.compare(speed.SpeedCase("tiny", "decode", 9, 32, 48))
    assert not row["numerics_ok"] and abs(row["max_abs_diff"] - 1e-3) < 1e-6


def test_speed_reports_mfu_against_the_devices_peak(monkeypatch, tmp_path):
    import numpy as np

    speed = load("speed")
    assert speed.peak_flops("TPU v5 lite", "bf16") == 197e12 and speed.peak_flops("TPU v5p", "bf16") == 459e12
    assert speed.peak_flops("cpu", "fp32") is None

    def fake_side(side, case, repeats, out_path, cache_dir=None, profile_dir=None):
        np.save(out_path, np.zeros((2, 2), np.float32))
        seconds = 2.0 if side == "torch" else 1.0
        return {"median_seconds": seconds, "cold_seconds": 1.0, "conv_flops": 989e12, "peak_rss_bytes": 1}

    monkeypatch.setattr(speed, "run_side", fake_side)
    monkeypatch.setattr(speed, "device_kind", lambda: "NVIDIA H100 80GB HBM3")
    row = speed.compare(speed.SpeedCase("tiny", "decode", 9, 32, 48))
    import pytest

    assert row["mfu"] == pytest.approx({"torch": 989 / 494 / 2, "torchax": 989 / 494})  # fp32: against TF32's peak


def test_every_gpu_table_case_has_a_small_version_its_tiny_model_takes():
    """--small maps each released size to a tiny model of its family and a size that model takes."""
    table = load("gpu_table")
    from vaes import input_shape, meta_vae  # load() put scripts/ on the path

    for name, case in table.CASES.items():
        tiny = table.small(case)
        assert (tiny.kind, tiny.dtype) == (case.kind, case.dtype) and tiny.config.endswith("tiny"), name
        model = meta_vae(tiny.config)
        shape = input_shape(tiny, model)
        from torchax_vae.models import wrapper_for

        rank = wrapper_for(model).rank  # images [B, C, H, W], videos [B, C, F, H, W]
        assert len(shape) == rank and min(shape) > 0, (name, shape)


@pytest.mark.slow  # 14 s (CI: every sixth run)
def test_every_gpu_table_case_checks_bf16_at_a_size_its_family_takes():
    """The bf16 reference (PyTorch bf16 against fp32, at most 9x480x720) is cut to whole latents: HunyuanImage's
    and the DC-AE's encoders (32x) refuse a width of 720, which failed hunyuanimage-encode on the H200."""
    table = load("gpu_table")
    from torchax_vae.models import wrapper_for
    from vaes import meta_vae

    for name, case in table.CASES.items():
        ref = table.speed.reference_case(case)
        model = meta_vae(case.config)
        ratio = wrapper_for(model).family(model).spatial_compression_ratio
        assert ref.height % ratio == 0 and ref.width % ratio == 0, (name, ratio, ref)
        assert (ref.frames, ref.height, ref.width) <= (case.frames, case.height, case.width)
    assert table.speed.reference_case(table.CASES["hunyuanimage-encode"]).width == 704
    assert table.speed.reference_case(table.CASES["wan2.1-480p-decode"]).width == 720  # the rows on record


def test_speed_encoded_takes_every_served_encode_output():
    """speed.encoded: the posterior's mode, AutoencoderDC's `latent`, AutoencoderTiny's `latents` (taesdxl-encode
    failed on the H200 without it), for diffusers' model and for TorchaxVAE alike."""
    import torch

    table = load("gpu_table")
    from torchax_vae import TorchaxVAE
    from vaes import random_vae as named_vae

    for name in ("sd1.5-encode", "sana-encode", "taesdxl-encode"):
        case = table.small(table.CASES[name])
        vae = named_vae(case.config)
        x = torch.randn(table.speed.input_shape(case, vae), generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            ours, theirs = table.speed.encoded(TorchaxVAE(vae), x), table.speed.encoded(vae, x)
        delta = (ours - theirs).abs().max().item()
        assert ours.shape == theirs.shape and delta <= 1e-4, (name, delta)


def test_speed_reads_torch_compile_peak_memory_from_torch(monkeypatch):
    """The torch.compile side's peak device memory is torch's (it read JAX's, 0, on the H200)."""
    import torch

    speed = load("gpu_table").speed
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda: 12345)
    assert speed._peak_device_bytes("torch") == speed._peak_device_bytes("torch.compile") == 12345


@pytest.mark.slow  # 20 s on 2 cores
def test_crash_probe_runs_each_variant_in_its_own_process(monkeypatch, tmp_path, capsys):
    """scripts/crash_probe.py: a variant's decode in a fresh process, its row compared with PyTorch's; a variant
    whose package folder is missing says so instead of running the checkout's."""
    probe = load("crash_probe")
    monkeypatch.setitem(probe.VARIANTS, "old", {"ROOT": str(tmp_path / "absent")})
    broken = tmp_path / "broken" / "torchax_vae"  # a package whose import fails as a CUDA fault would, naming a kernel
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise RuntimeError('CUDA_ERROR_ILLEGAL_INSTRUCTION in fusion.7')\n")
    monkeypatch.setitem(probe.VARIANTS, "broken", {"ROOT": str(broken.parent)})
    out = tmp_path / "probe.jsonl"
    assert probe.main(["wan-tiny=9x32x64", "--variants", "head,old,broken", "--json", str(out)]) == 1
    head, old, bad = [json.loads(line) for line in out.read_text().splitlines()]
    assert head["outcome"] == "finished" and head["finite"] and head["shape"] == [1, 3, 9, 32, 64], head
    assert 0 < head["rel_l2"] < 0.2 and head["torchax_vae_from"].endswith("torchax_vae"), head
    assert old["outcome"] == "not run" and "absent" in old["error"], old
    assert bad["outcome"] == "exit 1" and "ILLEGAL_INSTRUCTION" in bad["error"], bad
    assert any("fusion.7" in line for line in bad["kernel_lines"]), bad
    with pytest.raises(SystemExit):
        probe.main(["wan-tiny=9x32", "--variants", "head"])
    assert "CONFIG=FRAMESxHEIGHTxWIDTH" in capsys.readouterr().err


def test_speed_row_goes_on_when_torch_compile_runs_past_its_limit(monkeypatch, tmp_path):
    """--compile-timeout: a torch.compile side past its seconds is recorded as such, and the other sides still make
    the row (a device call would otherwise lose the whole row to an inductor compile of a long video decoder)."""
    import subprocess

    import numpy as np

    speed = load("gpu_table").speed
    calls = []

    def fake_side(side, case, repeats, out_path, timeout=3600, cache_dir=None, profile_dir=None):
        calls.append((side, timeout))
        if side == "torch.compile":
            raise subprocess.TimeoutExpired(["worker"], timeout)
        np.save(out_path, np.full((2, 3), 1.0 if side == "torch" else 1.00002, np.float32))
        first = {"trace_lower_seconds": 1.0, "compile_seconds": 2.0}
        return {"median_seconds": 0.5 if side == "torch" else 0.25, "cold_seconds": 4.0, "conv_flops": 1e9,
                "first_call": first, "xla_flops": 1e9, "max_temp_bytes": 1e8, "peak_rss_bytes": 1e9,
                "peak_device_bytes": 2e9}

    monkeypatch.setattr(speed, "run_side", fake_side)
    monkeypatch.setattr(speed, "device_kind", lambda: "cpu")
    case = speed.SpeedCase("tiny", "decode", 9, 32, 64, dtype="fp32")
    row = speed.compare(case, 1, torch_compile=True, compile_timeout=7)
    assert ("torch.compile", 7) in calls and all(t == 3600 for s, t in calls if s != "torch.compile"), calls
    assert row["torch.compile"] == {"timed_out_seconds": 7} and "torch_compile_max_abs_diff" not in row
    assert row["ratio"] == 2.0 and row["numerics_ok"] and set(row["gflops_per_s"]) == {"torch", "torchax"}
    assert "| not done in 7 s |" in speed.markdown([row])


@pytest.mark.slow  # 46 s on 2 cores
@pytest.mark.heavy  # 66 s on 2 cores (AMD): out of CI's time, as the script tests above
def test_gpu_table_row_runs_end_to_end_at_a_small_size(capsys, tmp_path):
    """scripts/gpu_table.py: one accelerator-table row (here Wan 2.2's path at 9x32x64 on the CPU), all sides, the
    warm process's first call profiled (--profile-first: JAX's trace and cProfile's stats)."""
    table = load("gpu_table")
    assert table.main(["--list"]) == 0
    listed = capsys.readouterr().out
    assert "cogvideox1.5-decode: official decode 81x768x1360 bf16" in listed and listed.count("\n") == len(table.CASES)
    out_json = tmp_path / "row.jsonl"
    profile = tmp_path / "profile"
    assert table.main(["wan2.2-decode", "--small", "--repeats", "1", "--no-torch-compile", "--json", str(out_json),
                       "--profile-first", str(profile)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\| wan2.2-tiny decode 9x32x64 bf16 \| [\d.e+-]+ / [\d.e+-]+ \|", out), out
    assert re.search(r"first call [\d.]+ s cold, [\d.]+ s warm \(\d+ of \d+ programs from the store", out)
    (row,) = [json.loads(line) for line in out_json.read_text().splitlines()]
    assert row["name"] == "wan2.2-decode" and row["numerics_ok"] and row["rel_l2"] > 0
    assert row["torchax_warm"]["first_call"]["from_store"] == row["torchax_warm"]["first_call"]["programs"]
    assert row["torchax_warm"]["profiled"] and not row["torchax"]["profiled"] and not row["torch"]["profiled"]
    import pstats

    calls = pstats.Stats(str(profile / "first_call.prof")).stats
    assert any(name == "decode" and "torchax_vae" in path for path, _, name in calls), sorted(calls)[:5]
    assert list(profile.glob("plugins/profile/*/*.xplane.pb")), sorted(profile.rglob("*"))


def test_bench_speed_rejects_no_repeats(capsys):
    import pytest

    with pytest.raises(SystemExit) as exit_info:
        load("bench").main(["--speed", "--repeats", "0"])
    assert exit_info.value.code == 2
    assert "--repeats must be at least 1" in capsys.readouterr().err


@pytest.mark.slow  # the default suite keeps a faster case of the same feature; CI runs this with -m slow
def test_bench_wan_memory_rows(capsys):
    """Wan: --memory gives each decoder chunk program's temp memory (--speed's Wan rows run the same cases)."""
    bench = load("bench")
    assert bench.main(["--memory", "--config", "wan-tiny", "--size", "64x96", "--schedulers", "default"]) == 0
    out = capsys.readouterr().out
    programs = re.findall(r"wan-tiny decode 5x64x96 tiling off fp32: program (\S+) \(input \[1, 16, (\d), 8, 12\]\): "
                          r"temp (\d+\.\d) MB", out)
    # 2 latent frames: the first chunk's program and the steady one, one latent frame each
    assert [(name, frames) for name, frames, _ in programs] == [("decoder", "1"), ("decoder+feat_cache", "1")], out
    assert all(float(gb) > 0 for _, _, gb in programs)


def test_plan_table_plans_a_released_size(capsys, tmp_path):
    """scripts/plan_table.py: LTX-2's released decode (121x512x768, one program) for one H100, as a table row and
    a JSON line with the environment."""
    table = load("plan_table")
    case = "ltx2" if "ltx2" in table.RELEASED else "ltx0.9.1"
    assert table.main([case, "--targets", "h100", "--kinds", "decode", "--json", str(tmp_path / "plans.jsonl")]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"\| {re.escape(case)} \| decode \| h100 \| 1x1 \| 1 \(1\) \| yes \|", out), out
    row = json.loads((tmp_path / "plans.jsonl").read_text())
    assert row["fits"] and row["environment"]["jax"] and row["programs"][0]["kernels"]["cudnn_convolutions"] > 0


def test_released_sound_sizes_agree_with_their_models():
    """vaes.RELEASED_SOUND: each decode input is what its encode input encodes to (the family's own arithmetic),
    and each vocoder takes the spectrogram its audio VAE's decode input makes (that VAE's encode input)."""
    from vaes import MISSING, RELEASED_SOUND, meta_vae

    from torchax_vae import TorchaxVAE

    cases = {name: entry for name, entry in RELEASED_SOUND.items() if entry[0] not in MISSING}
    for name, (config, encode_input, decode_input) in cases.items():
        if encode_input is not None:
            family = TorchaxVAE(meta_vae(config))._family
            assert tuple(family.latent_shape(encode_input)) == decode_input, (name, family.latent_shape(encode_input))
    pairs = {"ltx2-vocoder": "ltx2-audio", "ltx2.3-vocoder": "ltx2-audio", "kandinsky6-vocoder": "kandinsky6-audio"}
    for vocoder, vae in pairs.items():
        if vocoder in cases and vae in cases:
            family = TorchaxVAE(meta_vae(RELEASED_SOUND[vae][0]))._family
            assert tuple(family.latent_shape(cases[vocoder][2])) == cases[vae][2], (vocoder, vae)


def test_the_both_ways_page_is_the_table_it_was_written_from():
    """docs/results/diffusers_both_ways.md is what scripts/diffusers_both_ways.py writes from its state file (the counts
    first): a table run that the page does not follow fails. README carries no test counts, only the link."""
    both_ways = load("diffusers_both_ways")
    text, summary = both_ways.table(json.loads(both_ways.STATE.read_text()))
    assert both_ways.MARKDOWN.read_text() == both_ways.page(text, summary)
    readme = (SCRIPTS.parent / "README.md").read_text()
    assert " passed" not in readme and "docs/results/diffusers_both_ways.md" in readme


@pytest.mark.slow  # about 40 s on 2 cores
def test_live_bench_compares_batched_with_one_after_another(tmp_path):
    """scripts/live_bench.py on the tiny Wan, in process and through the service: a row per stream count, with
    both modes' frame rates and latencies and their ratio, written atomically as JSON."""
    for extra in ([], ["--service"]):
        out = tmp_path / f"live{len(extra)}.json"
        proc = subprocess.run([sys.executable, str(SCRIPTS / "live_bench.py"), "--model", "wan-tiny", "--height", "32",
                               "--width", "32", "--blocks", "2", "--streams", "1,2", "--out", str(out), *extra],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        record = json.loads(out.read_text())
        assert [row["streams"] for row in record["rows"]] == [1, 2] and record["service"] == bool(extra)
        for row in record["rows"]:
            for mode in ("batched", "one_after_another"):
                assert row[mode]["frames"] == row["streams"] * 21 and row[mode]["fps"] > 0, row  # 2 blocks: 9 + 12
            assert row["ratio"] == row["batched"]["fps"] / row["one_after_another"]["fps"]
