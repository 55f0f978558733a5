"""The house: what a user's saved pipelines and imports rely on stays as it was, and one registry names the classes.

The facade classes' modules and names are written out here as they were on 5562f22 (before the package was
rebuilt): diffusers writes them into a saved pipeline's model_index.json, so a move would break what an older
install saved. The registry (torchax_vae/registry.py) is the one list of served classes.
"""

import importlib
import pathlib
import tomllib

import pytest

from torchax_vae import registry

ROOT = pathlib.Path(__file__).resolve().parent.parent

# (diffusers class, facade module, facade class) as on 5562f22: what saved pipelines name
SAVED_NAMES = [
    ("AutoencoderKL", "torchax_vae.models.kl", "KLVAE"),
    ("AutoencoderKLFlux2", "torchax_vae.models.flux2", "Flux2VAE"),
    ("AutoencoderDC", "torchax_vae.models.dc", "DCVAE"),
    ("AutoencoderKLHunyuanImage", "torchax_vae.models.hunyuanimage", "HunyuanImageVAE"),
    ("AutoencoderKLHunyuanImageRefiner", "torchax_vae.models.hunyuanimage_refiner", "HunyuanImageRefinerVAE"),
    ("AutoencoderTiny", "torchax_vae.models.tiny", "TinyVAE"),
    ("AsymmetricAutoencoderKL", "torchax_vae.models.asym_kl", "AsymmetricKLVAE"),
    ("VQModel", "torchax_vae.models.vq", "VQVAE"),
    ("AutoencoderKLTemporalDecoder", "torchax_vae.models.temporal_decoder", "TemporalDecoderVAE"),
    ("ConsistencyDecoderVAE", "torchax_vae.models.consistency", "ConsistencyDecoderVAEModel"),
    ("AutoencoderKLKVAE", "torchax_vae.models.kvae", "KVAEModel"),
    ("AutoencoderRAE", "torchax_vae.models.rae", "RAEVAE"),
    ("AutoencoderKLCogVideoX", "torchax_vae.models.cogvideox", "CogVideoXVAE"),
    ("AutoencoderKLWan", "torchax_vae.models.wan", "WanVAE"),
    ("AutoencoderKLQwenImage", "torchax_vae.models.qwenimage", "QwenImageVAE"),
    ("AutoencoderKLQwenImage21", "torchax_vae.models.qwenimage21", "QwenImage21VAE"),
    ("AutoencoderKLHunyuanVideo", "torchax_vae.models.hunyuanvideo", "HunyuanVideoVAE"),
    ("AutoencoderKLHunyuanVideo15", "torchax_vae.models.hunyuanvideo15", "HunyuanVideo15VAE"),
    ("AutoencoderKLLTXVideo", "torchax_vae.models.ltx", "LTXVideoVAE"),
    ("AutoencoderKLLTX2Video", "torchax_vae.models.ltx2", "LTX2VideoVAE"),
    ("AutoencoderKLMiniMaxH3", "torchax_vae.models.minimax_h3", "MiniMaxH3VAE"),
    ("AutoencoderKLAllegro", "torchax_vae.models.allegro", "AllegroVAE"),
    ("AutoencoderKLMochi", "torchax_vae.models.mochi", "MochiVAE"),
    ("AutoencoderKLCosmos", "torchax_vae.models.cosmos", "CosmosVAE"),
    ("AutoencoderKLMagvit", "torchax_vae.models.magvit", "MagvitVAE"),
    ("Kandinsky6SRVAE", "torchax_vae.models.kandinsky6_sr", "Kandinsky6SRVAEModel"),
    ("AutoencoderKLKVAEVideo", "torchax_vae.models.kvae_video", "KVAEVideoVAE"),
    ("AutoencoderVidTok", "torchax_vae.models.vidtok", "VidTokVAE"),
    ("AutoencoderKLLTX2Audio", "torchax_vae.models.ltx2_audio", "LTX2AudioVAE"),
    ("LTX2Vocoder", "torchax_vae.models.ltx2_vocoder", "LTX2VocoderModel"),
    ("LTX2VocoderWithBWE", "torchax_vae.models.ltx2_vocoder", "LTX2VocoderWithBWEModel"),
    ("AutoencoderKLMiniMaxH3Audio", "torchax_vae.models.minimax_h3_audio", "MiniMaxH3AudioVAE"),
    ("MMAudioVAE", "torchax_vae.models.mmaudio", "MMAudioVAEModel"),
    ("MMAudioVocoder", "torchax_vae.models.mmaudio", "MMAudioVocoderModel"),
    ("Cosmos3AVAEAudioTokenizer", "torchax_vae.models.cosmos3_audio", "Cosmos3AudioVAE"),
    ("AutoencoderOobleck", "torchax_vae.models.oobleck", "OobleckVAE"),
    ("AutoencoderSAME", "torchax_vae.models.same", "SAMEVAE"),
    ("LongCatAudioDiTVae", "torchax_vae.models.longcat_audio", "LongCatAudioVAE"),
    ("AutoencoderKLKVAEAudio", "torchax_vae.models.kvae_audio", "KVAEAudioVAE"),
    ("MiniMaxMusic3Vocoder", "torchax_vae.models.minimax_music3", "MiniMaxMusic3VocoderModel"),
]

# Import paths the docs (README, docs/guide/api.md, docs/guide/cli.md, docs/guide/serve.md) and pyproject name
DOCUMENTED_PATHS = [
    ("torchax_vae", "TorchaxVAE"), ("torchax_vae", "make_mesh"), ("torchax_vae", "clear_compiled"),
    ("torchax_vae.cli", "main"), ("torchax_vae.serve", "create_app"), ("torchax_vae.serve.client", "stream_frames"),
    ("torchax_vae.serve.client", "decode_with_sound"), ("torchax_vae.serve.client", "decode_with_condition"),
    ("torchax_vae.serve.ray_serve", "deployment"), ("torchax_vae.progress", "reporting"),
    ("torchax_vae.cache", "enable"), ("torchax_vae.patches", "apply"),
]


def test_every_saved_name_is_in_the_registry():
    """The names saved pipelines use are the registry's (whatever the installed diffusers serves)."""
    for diffusers_class, module, name in SAVED_NAMES:
        row = registry.by_class(diffusers_class)
        assert row is not None, f"{diffusers_class} left the registry"
        assert (row.module, row.facade) == (module, name), diffusers_class


@pytest.mark.parametrize("diffusers_class,module,name", [  # (a class the installed diffusers lacks: a version gate)
    pytest.param(*row, id=row[0], marks=pytest.mark.skipif(
        registry.by_class(row[0]) is not None and not registry.served_here(registry.by_class(row[0])),
        reason=f"the installed diffusers has no {row[0]}")) for row in SAVED_NAMES])
def test_facade_classes_keep_their_module_and_name(diffusers_class, module, name):
    """Every facade class is where saved pipelines say it is."""
    facade = getattr(importlib.import_module(module), name)
    assert (facade.__module__, facade.__name__, facade.model_class.__name__) == (module, name, diffusers_class)


def test_the_registry_is_every_served_class():
    """The registry has exactly the classes saved pipelines name, and `models.WRAPPERS` is its served rows."""
    from torchax_vae.models import WRAPPERS

    assert [row.diffusers_class for row in registry.ROWS] == [name for name, _, _ in SAVED_NAMES]
    assert WRAPPERS == tuple(registry.loaded(row) for row in registry.served())


@pytest.mark.parametrize("module,name", DOCUMENTED_PATHS, ids=[f"{m}.{n}" for m, n in DOCUMENTED_PATHS])
def test_documented_import_paths(module, name):
    assert callable(getattr(importlib.import_module(module), name))


def test_the_entry_point():
    scripts = tomllib.loads(ROOT.joinpath("pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"torchax-vae": "torchax_vae.cli:main"}


def test_a_second_family_for_a_class_fails_naming_both():
    row = registry.ROWS[0]
    other = registry.Row(row.diffusers_class, "elsewhere.module", "OtherVAE", "other", row.kind)
    with pytest.raises(ValueError) as caught:
        registry.register(other)
    message = str(caught.value)
    assert f"{row.module}.{row.facade}" in message and "elsewhere.module.OtherVAE" in message
    assert registry.by_class(row.diffusers_class) is row


def test_version_gates_come_from_the_registry():
    """scripts/vaes.py builds a class newer than the oldest supported diffusers where the registry says it is."""
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import vaes
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    for name, since, _ in vaes.NEWER_CLASSES:
        assert registry.by_class(name).since == since, name
    newer = {row.diffusers_class for row in registry.ROWS if row.since > registry.FLOOR}
    assert {name for name, _, _ in vaes.NEWER_CLASSES} >= newer


def test_every_module_imports_on_the_installed_diffusers():
    """On the oldest supported diffusers (CI's second job) as on the newest, every module of the package imports, but
    the models of classes that diffusers lacks (the registry's `since`) and their own helpers (a module named after
    one: models/vidtok_tiles.py). The command, the service and scripts/vaes.py import the sound stage, which names
    every sound family: a newer class imported there at the top once broke them all on diffusers 0.36."""
    import pkgutil

    import torchax_vae

    missing = tuple(row.module for row in registry.ROWS if not registry.served_here(row))
    failed = {}
    for found in pkgutil.walk_packages(torchax_vae.__path__, "torchax_vae."):
        if found.name.startswith(missing) or found.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(found.name)
        except ImportError as error:
            failed[found.name] = str(error)
    assert not failed, failed


def test_places_that_list_the_classes_agree_with_the_registry():
    """Every place that names the served classes' labels names all of them (the registry's; README's table:
    tests/test_docs.py)."""
    import torchax_vae
    from torchax_vae import cli
    assert torchax_vae.FAMILIES == {row.diffusers_class: row.label for row in registry.ROWS}
    parser = cli.parser()
    decode = parser._subparsers._group_actions[0].choices["decode"]
    model_help = next(action.help for action in decode._actions if "--model" in action.option_strings)
    places = {
        "torchax-vae --help": parser.description,
        "--model help": model_help,
    }
    for place, text in places.items():
        missing = [label for label in registry.labels() if label not in text]
        assert not missing, f"{place} leaves out {missing}: {text[:200]!r}"


def _package_modules() -> dict[str, pathlib.Path]:
    """Every module of the package by dotted name."""
    files = {}
    for path in (ROOT / "torchax_vae").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        files[name.removesuffix(".__init__")] = path
    return files


def _imports(name: str, path: pathlib.Path, files) -> set[str]:
    """The package modules `name` imports, at any depth (functions included)."""
    import ast

    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + [node.module or ""]).strip(".") \
                if node.level else (node.module or "")
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in files and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in files and target != name:
                found.add(target)
    return found


def test_no_import_cycle_in_the_package():
    """No module of the package reaches itself through imports, counting those inside functions."""
    files = _package_modules()
    edges = {name: _imports(name, path, files) for name, path in files.items()}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node):  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in edges[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(files):
        if name not in index:
            visit(name)
    assert not cycles, f"{len(cycles)} import cycles: {cycles}"


# The package's layers, lowest first: a module imports only from its own layer or the ones before it. The top-level
# modules of the first row are leaves (the package root imports only the registry, so that the command starts light).
LAYERS = [
    {"torchax_vae", "registry", "progress", "cache"},
    {"placement"},  # how arrays split over devices, per-backend choices, tile arithmetic
    {"patches"},  # diffusers' and torchax's layers as our traces run them
    {"engine"},  # programs, lowering, sources, weights, staging, the process
    {"media"},  # files in and out, pixels
    {"plan"},  # offline compiles for a target
    {"facade"},  # TorchaxVAE and what a family is
    {"models"},  # the families
    {"stage3"},  # what the command and the service share
    {"cli", "serve"},  # the front ends
]


def _layer(name: str) -> int:
    parts = name.split(".")
    key = parts[1] if len(parts) > 1 else parts[0]
    return next(i for i, layer in enumerate(LAYERS) if key in layer or key == "__main__" and "cli" in layer)


def test_nothing_imports_upward():
    """Each folder imports only from the layers below it (LAYERS), counting imports in functions."""
    files = _package_modules()
    upward = [f"{name} -> {target}" for name, path in files.items() for target in _imports(name, path, files)
              if _layer(target) > _layer(name)]
    assert not upward, f"{len(upward)} imports upward: {upward}"


def test_the_top_level_is_small():
    """At most ten modules beside the subpackages at the package's top level."""
    top = sorted(path.name for path in (ROOT / "torchax_vae").glob("*.py"))
    assert len(top) <= 10, top


def test_one_package_file_lists_the_served_classes():
    """The registry is the list: another module names a few classes (its own, its companions, examples), never
    the served set (a third of it or more)."""
    import re

    names = [row.diffusers_class for row in registry.ROWS]
    listing = {}
    for path in (ROOT / "torchax_vae").rglob("*.py"):
        text = path.read_text()
        found = [name for name in names if re.search(rf"\b{name}\b", text)]
        if len(found) >= len(names) // 3:
            listing[str(path.relative_to(ROOT))] = len(found)
    assert listing == {"torchax_vae/registry.py": len(names)}, listing


def test_the_families_page_names_every_served_class():
    """docs/guide/families.md's table names each registry row, by its class or its label."""
    text = ROOT.joinpath("docs", "guide", "families.md").read_text()
    missing = [row.diffusers_class for row in registry.ROWS if row.diffusers_class not in text and row.label not in text]
    assert not missing, f"docs/guide/families.md leaves out {missing}"


def test_no_computation_leaves_a_call_through_an_exception_or_a_context_variable():
    """A stream is the prepared call's chunks (`_decode_call`): the capture machinery is gone for good."""
    for path in (ROOT / "torchax_vae").rglob("*.py"):
        text = path.read_text()
        for name in ("Captured", "_CHUNKED", "_CAPTURING", "is_capturing", "is_chunked"):
            assert name not in text, f"{path.relative_to(ROOT)} still has {name}"


def test_the_design_map_and_the_package_docstring_show_every_folder():
    """docs/design/how_it_works.md's map and torchax_vae/__init__.py's docstring name each subpackage, and no folder that is gone."""
    import torchax_vae

    folders = sorted(p.parent.name for p in (ROOT / "torchax_vae").glob("*/__init__.py"))
    design = ROOT.joinpath("docs", "design", "how_it_works.md").read_text()
    tree = design.split("## Layout", 1)[1].split("```", 2)[1]
    shown = sorted(line.split()[0].rstrip("/") for line in tree.splitlines() if line.startswith("  ") and
                   line.split()[0].endswith("/"))
    assert shown == folders, f"docs/design/how_it_works.md's map shows {shown}; the package has {folders}"
    missing = [name for name in folders if f"`{name}/`" not in torchax_vae.__doc__]
    assert not missing, f"the package docstring leaves out {missing}"
