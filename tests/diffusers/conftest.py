"""The harness that runs diffusers' own autoencoder model tests (vendored, unmodified, in tests/) on TorchaxVAE.

Each test class of those files names its model through a `model_class` property (diffusers'
`AutoencoderKLWan`, ...). Here that property returns `TorchaxModel(cls)` instead: called with the
test's init dict, it builds the diffusers model and returns `TorchaxVAE(model)`; its `from_pretrained`
loads through `TorchaxVAE.from_pretrained`; every other attribute is the diffusers class's. Nothing in
the vendored files is edited (SOURCE.md says where they came from).

Every test here is in the slow set (`pytest -m slow`). `EXPECTED_FAILURES` (expectations.py) lists the tests that fail on
TorchaxVAE, each with its reason and where docs/limits.md says so; they are strict xfails, so one that
starts passing fails the run until it is taken off the list. Every other test passes as on plain
diffusers (`TORCHAX_VAE_PLAIN_DIFFUSERS=1` runs them on diffusers alone, for comparison).

diffusers' pipeline fast tests (tests/pipelines, issue 39) run the same way: each test class's
`get_dummy_components()` returns its "vae" wrapped in a TorchaxVAE, and the hub's tiny tokenizers they load are
offline stand-ins (hub_standins.py). Tests that fail on plain diffusers with those stand-ins (hard-coded value
slices) are expected failures in both runs; test_pipeline_outputs.py compares the pipelines' outputs.

Qwen-Image has no test file in diffusers; `tests/models/autoencoders/test_models_autoencoder_wan.py`'s
classes run again for `AutoencoderKLQwenImage` (its constructor takes Wan's arguments), collected from
`test_qwenimage_as_wan.py` beside this file.
"""

import json
import os
import pathlib

import pytest

HERE = pathlib.Path(__file__).parent
PLAIN = os.environ.get("TORCHAX_VAE_PLAIN_DIFFUSERS") == "1"
# a plain run records the modular tests' failures here (JSON lines; modular_expectations.py says what for)
RECORD = os.environ.get("TORCHAX_VAE_RECORD_FAILURES")

# diffusers' remote-VAE tests (tests/remote) talk to this project's service: remote_harness.py
import remote_harness  # noqa: E402
from remote_harness import remote_vae_service  # noqa: E402,F401  (the fixture)

if not PLAIN:
    remote_harness.point_endpoints_here()


class TorchaxModel:
    """A stand-in for a diffusers VAE class whose instances are TorchaxVAEs of that class's models."""

    def __init__(self, model_class):
        self.model_class = model_class
        self.__name__ = model_class.__name__

    def __call__(self, *args, **kwargs):
        return wrap(self.model_class(*args, **kwargs))

    def from_pretrained(self, path, *args, torch_dtype=None, dtype=None, **kwargs):
        dtype = dtype or torch_dtype
        if dtype is not None:
            kwargs["torch_dtype"] = dtype
        return wrap(self.model_class.from_pretrained(path, *args, **kwargs))

    def __getattr__(self, name):
        if name == "model_class":  # copy.copy(self.model_class) makes one without __init__
            raise AttributeError(name)
        return getattr(self.model_class, name)


import failures  # noqa: E402
import modular_expectations  # noqa: E402
from wrapping import float64, paused, served_vae_classes, wrap, wrap_served_vaes  # noqa: E402

# which tests are expected to fail (expectations.py), and which files run where (file_sets.py)
from expectations import (  # noqa: E402
    EXPECTED_FAILURES, FAIL_IN_BOTH_RUNS, FAIL_ON_PLAIN_DIFFUSERS, PLAIN_RAISES, RAISES,
)
from file_sets import FILES_HEAVY, PIPELINE_FILES_IN_CI, SECOND_ENVIRONMENT, imports  # noqa: E402

FAIL_IN_BOTH_RUNS = {**FAIL_IN_BOTH_RUNS, **modular_expectations.FAIL_IN_BOTH_RUNS}  # (modular_expectations.py)

# Modules of diffusers' tests that the vendored pipeline tests import (helpers and mixins); their own tests are
# diffusers' model tests of UNets and transformers, not of a VAE, so they are not collected here.
collect_ignore = ["tests/models/test_modeling_common.py", "tests/models/unets", "tests/models/transformers",
                  "tests/others"]


@pytest.fixture(scope="session", autouse=True)
def _hub_standins(request, tmp_path_factory):
    """diffusers' pipeline tests resolve `hf-internal-testing/...` to hub_standins.py's repositories, offline:
    built once per session, and huggingface_hub's cache points there for the session (class-scoped fixtures of
    those tests build their pipelines before any function-scoped fixture runs). The modular pipelines' whole tiny
    pipelines (modular_standins.py) are built only in a session that runs their tests."""
    import hub_standins
    from huggingface_hub import constants

    root = hub_standins.build(tmp_path_factory.mktemp("hub"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(constants, "HF_HUB_CACHE", str(root))
        patch.setattr(constants, "HF_HUB_OFFLINE", True)
        sources = _modular_sources(request.session.items)
        if sources:
            import modular_standins

            with paused():  # the stand-ins are saved plain diffusers models, as on the hub
                modular_standins.build(root, sources)
        yield root


def _modular_sources(items) -> list[str]:
    """The source texts of the modular pipeline test files the session runs (test_modular_outputs.py's cases name
    theirs), whose repository ids say which stand-ins to build."""
    files = set()
    for item in items:
        if "tests/modular_pipelines/" in item.nodeid:
            files.add(pathlib.Path(str(item.path)))
        elif "test_modular_outputs" in item.nodeid and hasattr(item, "callspec"):
            module = item.callspec.params["module"].replace(".", "/")
            files.add(HERE / "tests" / "modular_pipelines" / f"{module}.py")
    return [file.read_text() for file in sorted(files)]


@pytest.fixture(autouse=True)
def _no_grad():
    """diffusers' tests set grad mode themselves (this project's tests run under torch.no_grad())."""
    yield


@pytest.fixture(autouse=True)
def _remote_tests_talk_to_the_service(request):
    """diffusers' remote-VAE tests: the local service (remote_harness.py) runs while they do."""
    if not PLAIN and "tests/remote/" in request.node.nodeid:
        request.getfixturevalue("remote_vae_service")
    yield


@pytest.fixture(scope="class", autouse=True)
def _torchax_model_class(request):
    """Swaps the test class's `model_class` for `TorchaxModel` of it, for the class's tests."""
    cls = request.cls
    if PLAIN or cls is None or not isinstance(getattr(cls, "model_class", None), property):
        yield
        return
    original = cls.model_class.fget(None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cls, "model_class", property(lambda self: TorchaxModel(original)))
        yield


def wrapped_components(get_dummy_components):
    """`get_dummy_components` whose served VAEs come wrapped (`wrap_served_vaes`)."""
    import functools

    @functools.wraps(get_dummy_components)
    def wrapped(self, *args, **kwargs):
        return wrap_served_vaes(get_dummy_components(self, *args, **kwargs))

    return wrapped


@pytest.fixture(scope="class", autouse=True)
def _torchax_pipeline_vae(request):
    """diffusers' pipeline tests: the test class's `get_dummy_components()` (and its variants, such as
    test_pipeline_utils.py's `get_dummy_components_image_generation()`) gives TorchaxVAEs (`wrap_served_vaes`); a
    class that builds its components inline from a `dummy_vae` property (SD 2's upscaler, test_pipelines.py's
    `PipelineFastTests`) gets that VAE wrapped."""
    cls = request.cls
    if PLAIN or cls is None or "tests/pipelines/" not in request.node.nodeid:
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        for name in dir(cls):
            if name.startswith("get_dummy_components") and callable(getattr(cls, name)):
                patch.setattr(cls, name, wrapped_components(getattr(cls, name)))
        if isinstance(getattr(cls, "dummy_vae", None), property):
            patch.setattr(cls, "dummy_vae", property(wrapped_vae(cls.dummy_vae.fget)))
        yield


# model test files whose tests build their model from the class they imported, not `model_class` (RAE's
# `_make_model`): that class builds TorchaxVAEs too while their tests run
MODULE_CLASSES_WRAPPED = ("test_models_autoencoder_rae.py",)


@pytest.fixture(autouse=True)
def _torchax_module_vae_classes(request):
    """diffusers' pipeline tests written as plain functions (LTX-2's diffusion decode builds its pipeline in a module
    helper), and the model test files of MODULE_CLASSES_WRAPPED: the served VAE classes the test module imported
    build TorchaxVAEs while the test runs."""
    model_file = request.node.path.name in MODULE_CLASSES_WRAPPED
    if PLAIN or (request.cls is not None and not model_file) or ("tests/pipelines/" not in request.node.nodeid
                                                                 and not model_file):
        yield
        return
    served = served_vae_classes()
    module = request.module
    with pytest.MonkeyPatch.context() as patch:
        for name, value in list(vars(module).items()):
            if isinstance(value, type) and value in served:
                patch.setattr(module, name, TorchaxModel(value))
        yield


@pytest.fixture(scope="class", autouse=True)
def _torchax_modular_vae(request):
    """diffusers' modular pipeline tests: every served VAE a modular pipeline loads (`ComponentSpec.load`, which
    `load_components` calls) comes wrapped, keeping its loading spec, as a user's
    `pipe.update_components(vae=TorchaxVAE(pipe.vae))` does. Class-scoped, as the tests' `base_pipe_output`."""
    if PLAIN or "tests/modular_pipelines/" not in request.node.nodeid:
        yield
        return
    from diffusers.modular_pipelines import ComponentSpec

    load = ComponentSpec.load

    def wrapped_load(self, **kwargs):
        return wrap_served_vaes({"component": load(self, **kwargs)})["component"]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ComponentSpec, "load", wrapped_load)
        yield


def wrapped_vae(dummy_vae):
    """A `dummy_vae` property's getter whose VAE comes wrapped."""

    def wrapped(self):
        return wrap(dummy_vae(self))

    return wrapped


def pytest_configure(config):
    """Registers the marks diffusers' testing utilities put on tests (this project's warnings are errors)."""
    import re

    text = (HERE / "tests" / "testing_utils.py").read_text()
    for mark in sorted(set(re.findall(r"pytest\.mark\.(\w+)\(", text)) - {"skipif", "xfail", "parametrize"}):
        config.addinivalue_line("markers", f"{mark}: a mark of diffusers' own tests (tests/diffusers)")


# vendored files that import torchvision at their top for tests this environment skips anyway: collected with
# torchvision_standin.py's `to_tensor` where torchvision does not import (it does not beside the CPU torch 2.13)
TORCHVISION_AT_THE_TOP = ("test_models_autoencoder_rae.py",)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    if not (isinstance(collector, pytest.Module) and collector.path.name in TORCHVISION_AT_THE_TOP) \
            or imports("torchvision"):
        return (yield)
    import torchvision_standin

    with torchvision_standin.standin():
        return (yield)


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = pathlib.Path(str(item.fspath))
        if HERE not in path.parents:
            continue
        item.add_marker(pytest.mark.slow)
        # diffusers' tests run under their own warning rules, not this project's "error"
        item.add_marker(pytest.mark.filterwarnings("default"))
        node = _node(item)
        pipeline_file = node.split("::")[0].removeprefix("tests/pipelines/")
        if node.startswith("tests/pipelines/") and pipeline_file not in PIPELINE_FILES_IN_CI:
            item.add_marker(pytest.mark.heavy)
        if path.name in FILES_HEAVY:
            item.add_marker(pytest.mark.heavy)
        if node.startswith(modular_expectations.PREFIX):
            _modular_marks(item, node.removeprefix(modular_expectations.PREFIX))
        needs = SECOND_ENVIRONMENT.get(pipeline_file, ())
        if needs and not imports(*needs):
            item.add_marker(pytest.mark.skip(reason=f"its pipeline needs {', '.join(needs)}: run it in the second "
                                                    "environment of tests/diffusers/SOURCE.md"))


def _modular_marks(item, node: str) -> None:
    """A modular pipeline test: skipped where no stand-in can be built here, heavy outside CI's files."""
    file = node.split("::")[0]
    if file not in modular_expectations.FILES_IN_CI:
        item.add_marker(pytest.mark.heavy)
    if file in modular_expectations.WITHOUT_STANDIN:
        item.add_marker(pytest.mark.skip(reason=modular_expectations.WITHOUT_STANDIN[file]))
    needs = modular_expectations.SECOND_ENVIRONMENT_CLASSES.get("::".join(node.split("::")[:2]), ())
    if needs and not imports(*needs):
        item.add_marker(pytest.mark.skip(reason=f"its pipeline needs {', '.join(needs)}: run it in the second "
                                                "environment of tests/diffusers/SOURCE.md"))


def _node(item) -> str:
    return item.nodeid.split("tests/diffusers/", 1)[-1]


_PLAIN_FAILURE = pytest.StashKey()
_REFEREE = pytest.StashKey()  # the test's Failure with plain diffusers' VAE in float64


def _own_xfail(item) -> bool:
    """Whether one of diffusers' own xfail marks applies to the test here (its condition true; "Latest transformers
    changes the slices", ...). pytest would accept any failure under it: in the wrapped run the test must fail as
    it does on plain diffusers, in this process, or pass as it does there."""
    from _pytest.skipping import evaluate_xfail_marks

    return not _node(item).startswith("tests/remote/") and evaluate_xfail_marks(item) is not None


def _run_alone(item):
    """The test run once more here (its wrapping as the mode has it): its Failure, the other runs' records of it
    left as they were."""
    had = "_excinfo" in vars(item)
    recorded = list(getattr(item, "_excinfo", None) or [])
    excinfo = None
    try:
        item.runtest()
    except Exception as e:  # (a pytest outcome, such as a skip, is no expected failure: it propagates)
        excinfo = pytest.ExceptionInfo.from_exception(e)
    if getattr(item, "_excinfo", None) and len(item._excinfo) > len(recorded):  # a unittest.TestCase's failure is
        excinfo = item._excinfo[len(recorded)]  # recorded, not raised
    if had:
        item._excinfo = recorded
    else:
        vars(item).pop("_excinfo", None)
    return failures.failure_of(excinfo, str(item.path))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A test expected to fail in both runs (listed, or under diffusers' own xfail mark) runs on plain diffusers
    first, here, in the wrapped run; where the two then differ only in their arrays' values, it runs a third time
    with plain diffusers' VAE in float64, the referee (failures.py)."""
    if PLAIN or not (_node(item) in FAIL_IN_BOTH_RUNS or _own_xfail(item)):
        return (yield)
    with paused():
        item.stash[_PLAIN_FAILURE] = plain = _run_alone(item)
    try:
        result = yield
    except Exception as e:
        wrapped, error = failures.failure_of(pytest.ExceptionInfo.from_exception(e), str(item.path)), e
    else:
        wrapped, error = failures.failure_of(item._excinfo[0] if getattr(item, "_excinfo", None) else None,
                                             str(item.path)), None
    if failures.only_values_differ(plain, wrapped):
        with float64():
            item.stash[_REFEREE] = _run_alone(item)
    if error is not None:
        raise error
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """An expected failure of the wrapped run is reported as expected only when it is the listed one: the recorded
    exception and message (EXPECTED_FAILURES, RAISES), or plain diffusers' own failure in this process
    (FAIL_IN_BOTH_RUNS); anything else fails, saying what differed."""
    report = yield
    node = _node(item)
    if call.when != "call" or HERE not in pathlib.Path(str(item.path)).parents:
        return report
    if PLAIN and RECORD and node.startswith(modular_expectations.PREFIX) and report.failed:
        failure = failures.failure_of(call.excinfo, str(item.path))
        with open(RECORD, "a") as f:  # (one line per write: the workers of `-n 2` append to the same file)
            f.write(json.dumps({node: [failure.type, failure.message]}) + "\n")
        return report
    if PLAIN and node in modular_expectations.RECORDED:
        reason = FAIL_IN_BOTH_RUNS[node]
        failure = failures.failure_of(call.excinfo, str(item.path))
        recorded = modular_expectations.RECORDED[node]
        problems = [] if (failure.type, failure.message) == recorded else [
            f"recorded {recorded[0]}: {recorded[1][:200]!r}; now {failure.type or 'it passes'}: {failure.message[:200]!r}"]
    elif PLAIN and (node in FAIL_IN_BOTH_RUNS or node in FAIL_ON_PLAIN_DIFFUSERS):
        reason = FAIL_IN_BOTH_RUNS.get(node) or FAIL_ON_PLAIN_DIFFUSERS[node]
        problem = failures.matches_recorded(call.excinfo, *PLAIN_RAISES[reason])
        problems = [problem] if problem else []
    elif PLAIN:
        return report
    elif node in FAIL_IN_BOTH_RUNS and _PLAIN_FAILURE in item.stash:
        reason = FAIL_IN_BOTH_RUNS[node]
        problems = failures.differences(item.stash[_PLAIN_FAILURE], failures.failure_of(call.excinfo, str(item.path)),
                                        referee=item.stash.get(_REFEREE, None))
    elif _PLAIN_FAILURE in item.stash:  # under diffusers' own xfail mark
        plain, wrapped = item.stash[_PLAIN_FAILURE], failures.failure_of(call.excinfo, str(item.path))
        if not plain.type and not wrapped.type:
            return report  # it passes both ways (pytest's XPASS)
        reason = "diffusers' own xfail mark, failing as on plain diffusers"
        problems = failures.differences(plain, wrapped, evidence=False, referee=item.stash.get(_REFEREE, None)) \
            if plain.type else [
            f"it passes on plain diffusers and fails wrapped with {wrapped.type}: {wrapped.message[:300]!r}"]
    elif node in EXPECTED_FAILURES:
        reason = EXPECTED_FAILURES[node]
        problem = failures.matches_recorded(call.excinfo, *RAISES[reason])
        problems = [problem] if problem else []
    elif remote_harness.expected_failure(node):  # a released value slice, which random weights miss: only that
        reason = remote_harness.expected_failure(node)
        problem = failures.matches_recorded(call.excinfo, (AssertionError,), remote_harness.SLICE_MISSED)
        problems = [problem] if problem else []
    else:
        return report
    if problems:
        report.outcome = "failed"
        report.longrepr = f"not the expected failure ({reason[:120]}...): " + "; ".join(problems)
    else:
        report.outcome, report.wasxfail = "skipped", reason
        if _REFEREE in item.stash:
            report.wasxfail += (" (its output equals plain diffusers' with the VAE in float64, which plain "
                                "diffusers' float32 VAE misses beyond the tolerance)")
    return report