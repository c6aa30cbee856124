"""The rules of ``cudaenv.project.graph`` that need no index: how uv's compiled graph is read (which
line is which framework, through what, at which version), which carriers cap their framework, the
release series a capped framework is held to, how uv is asked (wheels only, the project's index,
the same platform as the image), and what init adds from the graph. The real uv against a loopback
index is in test_graph_frameworks.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import cudaenv.project.graph as graph
from cudaenv.project.detect import Detected
from cudaenv.project.graph import (_admits, _project_lines, add_graph_frameworks, capped_carriers,
                                   framework_versions_in_graph, frameworks_in_graph, graph_frameworks, graph_versions,
                                   series_range)

# `uv pip compile --annotation-style line` output, shaped as uv writes it
COMPILED = """\
-e file:///work/app       # via -r requirements.txt
torchvision==0.24.1       # via -r requirements.txt
icetk==0.0.7              # via -r requirements.txt
jaxlib==0.4.30+cuda12     # via jax, chex
jax==0.4.30               # via chex
numpy==1.26.4             # via icetk, jax
Tensorflow_GPU==2.15.0    # via tf-helper
tensorflow==2.16.1        # via keras
torch==2.4.1+cu121        # via icetk,  xformers
"""


# --- reading the compiled graph ------------------------------------------------------------------


def test_each_framework_in_the_graph_is_found_with_what_brings_it_and_its_public_version():
    assert graph_versions(COMPILED) == {"jax": ("jax", "0.4.30"), "tensorflow": ("tf-helper", "2.15.0"),
                                        "torch": ("icetk", "2.4.1")}


def test_graph_frameworks_are_what_brings_each():
    assert graph_frameworks(COMPILED) == {"jax": "jax", "tensorflow": "tf-helper", "torch": "icetk"}


@pytest.mark.parametrize("line, found", [
    ("torch==2.9.1 # via icetk", {"torch": ("icetk", "2.9.1")}),
    ("    torch==2.9.1    #   via   icetk  ", {"torch": ("icetk", "2.9.1")}),
    ("torch==2.9.1 # via , ", {"torch": ("the dependency graph", "2.9.1")}),
    ("tensorflow-gpu==2.15.0 # via x", {"tensorflow": ("x", "2.15.0")}),
    ("tensorflow.gpu==2.15.0 # via x", {"tensorflow": ("x", "2.15.0")}),
    ("JAXLIB==0.4.30 # via y", {"jax": ("y", "0.4.30")}),
    ("torch==2.9.1", {}),
    ("torch>=2.9.1 # via icetk", {}),
    ("# torch==2.9.1 # via icetk", {}),
    ("torchvision==0.24.1 # via z", {}),
    ("tensorflow-cpu==2.20.0 # via z", {}),
    ("torch==2.9.1 ; python_version < '3.13' # via z", {}),
], ids=["plain", "padded", "empty-via", "tf-gpu-dash", "tf-gpu-dot", "jaxlib-upper", "no-via", "not-a-pin",
        "comment", "companion", "cpu-build", "marker"])
def test_which_line_of_the_graph_is_a_framework(line, found):
    assert graph_versions(line + "\n") == found


def test_the_first_line_naming_a_framework_decides_it():
    assert graph_versions("jaxlib==0.4.31 # via a\njax==0.4.30 # via b\n") == {"jax": ("a", "0.4.31")}


# --- capped carriers and the series they hold a framework to --------------------------------------


@pytest.mark.parametrize("requirement, capping", [
    ("xformers==0.0.28.post1", True), ("tf_keras<2.17", True), ("tf_keras<=2.16", True), ("tf_keras~=2.16.0", True),
    ("xformers===0.0.28", True), ("xformers>=0.0.28", False), ("xformers>0.0.28", False), ("xformers!=0.0.27", False),
    ("xformers", False), ("xformers>=0.0.20,<0.0.29", True),
], ids=["eq", "lt", "le", "compatible", "arbitrary", "ge", "gt", "ne", "bare", "range"])
def test_a_carrier_caps_its_framework_when_it_caps_its_own_version(requirement, capping):
    detected = Detected(carriers={"torch": [(requirement, "requirements.txt:1")]})
    assert capped_carriers(detected) == ({"torch": [requirement]} if capping else {})


def test_capped_carriers_keep_their_order_and_skip_what_cannot_be_read():
    detected = Detected(carriers={"torch": [("xformers==0.0.28", "a"), ("not a requirement!", "b"),
                                            ("flash-attn>=2", "c"), ("torchmetrics<1.5", "d")],
                                  "tensorflow": [("tf_keras>=2", "e")]})
    assert capped_carriers(detected) == {"torch": ["xformers==0.0.28", "torchmetrics<1.5"]}


@pytest.mark.parametrize("version, series", [
    ("2.4.1", ">=2.4.0,<=2.4.1"), ("2.4.1+cu121", ">=2.4.0,<=2.4.1"), ("2.16.0", ">=2.16.0,<=2.16.0"),
    ("0.4.30", ">=0.4.0,<=0.4.30"), ("2", ">=2.0.0,<=2"), ("not-a-version", None),
], ids=["patch", "local", "first", "zero-major", "major-only", "invalid"])
def test_the_series_uv_resolved_runs_from_its_first_release_to_the_resolved_one(version, series):
    assert series_range(version) == series


@pytest.mark.parametrize("spec, version, admits", [
    ("", "2.4.1", True), (">=2.4", "2.4.1", True), (">=2.5", "2.4.1", False), ("==2.4.1", "2.4.1", True),
    ("not a spec", "2.4.1", False),
], ids=["any", "inside", "outside", "pinned", "unreadable"])
def test_a_framework_spec_admits_the_resolved_version(spec, version, admits):
    assert _admits(spec, version) is admits


# --- what init adds from the graph ---------------------------------------------------------------


@pytest.fixture
def graph_answer(monkeypatch):
    """The graph uv would resolve, and the calls made for it."""
    calls = []
    answer: dict = {}

    def versions(root, files, dependencies, *, exclude_newer=None, timeout=180):
        calls.append((root, files, dependencies, exclude_newer))
        return dict(answer)

    monkeypatch.setattr(graph, "framework_versions_in_graph", versions)
    monkeypatch.setattr(graph, "_project_lines", lambda root, detected: ["lines of " + root.name])
    return answer, calls


def test_a_project_naming_its_framework_without_a_capping_carrier_does_not_ask_uv(tmp_path, graph_answer):
    answer, calls = graph_answer
    answer["jax"] = ("chex", "0.4.30")
    detected = Detected(frameworks={"torch": ">=2.4"}, carriers={"torch": [("xformers>=0.0.28", "r:1")]})
    add_graph_frameworks(tmp_path, detected)
    assert calls == [] and detected.frameworks == {"torch": ">=2.4"} and detected.found == []


def test_a_project_naming_no_framework_takes_every_framework_of_its_graph_but_the_cpu_ones(tmp_path, graph_answer):
    answer, calls = graph_answer
    answer.update({"torch": ("icetk", "2.9.1"), "tensorflow": ("tf-helper", "2.20.0"), "jax": ("chex", "0.4.30")})
    detected = Detected(cpu_only={"tensorflow"})
    add_graph_frameworks(tmp_path, detected, exclude_newer="2026-01-01")
    assert calls == [(tmp_path, [], ["lines of " + tmp_path.name], "2026-01-01")]
    assert detected.frameworks == {"jax": "", "torch": ""}
    assert detected.found == ["jax through chex (dependency graph)", "torch through icetk (dependency graph)"]


def test_a_capping_carrier_holds_its_framework_to_the_series_uv_resolved(tmp_path, graph_answer):
    answer, _ = graph_answer
    answer.update({"torch": ("xformers", "2.4.1+cu121"), "jax": ("chex", "0.4.30")})
    detected = Detected(frameworks={"torch": "", "jax": ""},
                        carriers={"torch": [("xformers==0.0.28.post1", "r:1"), ("torchmetrics<1.5", "r:2")]})
    add_graph_frameworks(tmp_path, detected)
    assert detected.frameworks == {"torch": ">=2.4.0,<=2.4.1", "jax": ""}
    assert detected.found == ["torch >=2.4.0,<=2.4.1: what xformers==0.0.28.post1, torchmetrics<1.5 allows "
                              "(dependency graph)"]


def test_the_series_is_added_to_the_projects_own_spec_it_admits(tmp_path, graph_answer):
    answer, _ = graph_answer
    answer["jax"] = ("chex", "0.10.2")
    detected = Detected(frameworks={"jax": "==0.10.2"}, carriers={"jax": [("chex==0.1.89", "pyproject.toml")]})
    add_graph_frameworks(tmp_path, detected)
    assert detected.frameworks == {"jax": "==0.10.2,>=0.10.0,<=0.10.2"}


@pytest.mark.parametrize("frameworks, version", [
    ({"torch": ">=2.5"}, "2.4.1"), ({"torch": ""}, "not-a-version"), ({"jax": ""}, "2.4.1"),
], ids=["spec-excludes-it", "unreadable-version", "framework-not-named"])
def test_the_series_is_not_added_where_it_would_contradict_or_say_nothing(tmp_path, graph_answer, frameworks, version):
    answer, _ = graph_answer
    answer["torch"] = ("xformers", version)
    detected = Detected(frameworks=dict(frameworks), carriers={"torch": [("xformers==0.0.28", "r:1")]})
    add_graph_frameworks(tmp_path, detected)
    assert detected.frameworks == frameworks and detected.found == []


def test_a_capped_framework_the_project_wants_on_the_cpu_is_left_alone(tmp_path, graph_answer):
    answer, _ = graph_answer
    answer["torch"] = ("xformers", "2.4.1")
    detected = Detected(frameworks={"torch": ""}, cpu_only={"torch"}, carriers={"torch": [("xformers==0.0.28", "r")]})
    add_graph_frameworks(tmp_path, detected)
    assert detected.frameworks == {"torch": ""}


def test_the_graph_is_asked_with_every_requirement_the_projects_files_make(tmp_path):
    (tmp_path / "requirements.txt").write_text("icetk\n-c constraints.txt\n-e ./lib\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "pyproject.toml").write_text('[project]\nname = "lib"\nversion = "1"\n')
    lib = f"-e {tmp_path.resolve() / 'lib'}"  # the project's own code by its absolute path
    (tmp_path / "constraints.txt").write_text("numpy<2\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "1"\ndependencies = ["jax==0.4.30"]\n')
    (tmp_path / "environment.yml").write_text("dependencies:\n  - pip:\n    - chex==0.1.89\n")
    detected = Detected(requirement_files=["requirements.txt"], conda_file="environment.yml")
    assert _project_lines(tmp_path, detected) == ["icetk", lib, "jax==0.4.30", "chex==0.1.89"]
    assert _project_lines(tmp_path, Detected(requirement_files=["requirements.txt"])) == ["icetk", lib, "jax==0.4.30"]
    (tmp_path / "pyproject.toml").unlink()
    assert _project_lines(tmp_path, Detected(requirement_files=["requirements.txt"])) == ["icetk", lib]


# --- how uv is asked --------------------------------------------------------------------------------


class FakeUv:
    """Plays ``subprocess.run`` for the graph: records what uv was asked, answers ``stdout``."""

    def __init__(self, stdout: str = "", returncode: int = 0, raises: Exception | None = None) -> None:
        self.stdout, self.returncode, self.raises = stdout, returncode, raises
        self.calls: list[dict] = []

    def __call__(self, argv, **kwargs):
        inputs = [arg for arg in argv if arg.endswith((".txt", ".in"))]
        self.calls.append(dict(kwargs, argv=argv, texts={Path(p).name: Path(p).read_text() for p in inputs}))
        if self.raises is not None:
            raise self.raises
        return subprocess.CompletedProcess(argv, self.returncode, self.stdout, "")


@pytest.fixture
def fake_uv(monkeypatch):
    import cudaenv.project.lock

    fake = FakeUv("torch==2.9.1 # via icetk\n")
    monkeypatch.setattr(cudaenv.project.lock, "uv_binary", lambda: "/opt/uv")
    monkeypatch.setattr(graph.subprocess, "run", fake)
    for name in ("CUDAENV_PYTHON_INDEX", "UV_INDEX", "UV_PYTHON_DOWNLOADS"):
        monkeypatch.delenv(name, raising=False)
    return fake


def test_uv_resolves_the_files_and_the_pyproject_lines_wheels_only_for_the_images_platform(tmp_path, fake_uv,
                                                                                         monkeypatch):
    monkeypatch.setenv("UV_INDEX", "https://elsewhere.example/simple")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("icetk\n")
    found = framework_versions_in_graph(tmp_path, [requirements], ["jax==0.4.30", "chex"])
    assert found == {"torch": ("icetk", "2.9.1")}
    call, = fake_uv.calls
    assert call["argv"][:-2] == [
        "/opt/uv", "pip", "compile", "--quiet", "--no-header", "--no-progress", "--annotation-style", "line",
        "--only-binary", ":all:", "--python-version", "3.12", "--python-platform", "x86_64-manylinux_2_28"]
    assert call["argv"][-2] == str(requirements) and call["argv"][-1].endswith("pyproject.in")
    written = Path(call["argv"][-1])  # in a temporary directory of cudaenv's, gone afterwards
    assert written.parent.name.startswith("cudaenv-graph-") and not written.parent.exists()
    assert call["texts"] == {"requirements.txt": "icetk\n", "pyproject.in": "jax==0.4.30\nchex\n"}
    assert call["cwd"] == tmp_path and call["timeout"] == 180
    assert call["capture_output"] is True and call["text"] is True
    env = call["env"]
    assert env["UV_NO_CONFIG"] == "1" and env["NO_COLOR"] == "1"
    assert env["UV_DEFAULT_INDEX"] == "https://pypi.org/simple" and "UV_INDEX" not in env
    assert env["UV_PYTHON_DOWNLOADS"] == "never"


def test_uv_reads_the_projects_python_index_and_the_cutoff_date(tmp_path, fake_uv, monkeypatch):
    monkeypatch.setenv("CUDAENV_PYTHON_INDEX", "https://mirror.example/simple")
    monkeypatch.setenv("UV_PYTHON_DOWNLOADS", "automatic")
    assert frameworks_in_graph(tmp_path, [], ["icetk"], exclude_newer="2026-01-01T00:00:00Z", timeout=7) == {
        "torch": "icetk"}
    call, = fake_uv.calls
    assert call["argv"][:3] == ["/opt/uv", "pip", "compile"]
    assert call["argv"][-3:-1] == ["--exclude-newer", "2026-01-01T00:00:00Z"]
    assert call["texts"] == {"pyproject.in": "icetk\n"} and call["timeout"] == 7
    assert call["env"]["UV_DEFAULT_INDEX"] == "https://mirror.example/simple"
    assert call["env"]["UV_PYTHON_DOWNLOADS"] == "automatic"  # the user's setting stands


def test_the_frameworks_alone_are_asked_of_uv_in_the_project_with_the_same_time_limit(tmp_path, fake_uv):
    assert frameworks_in_graph(tmp_path, [], ["icetk"]) == {"torch": "icetk"}
    call, = fake_uv.calls
    assert call["cwd"] == tmp_path and call["timeout"] == 180


def test_nothing_to_resolve_asks_uv_nothing(tmp_path, fake_uv):
    assert framework_versions_in_graph(tmp_path, [], []) == {}
    assert fake_uv.calls == []


@pytest.mark.parametrize("fake", [
    FakeUv("torch==2.9.1 # via icetk\n", returncode=1), FakeUv(raises=OSError("no uv")),
    FakeUv(raises=subprocess.TimeoutExpired("uv", 180)),
], ids=["uv-fails", "no-uv", "timeout"])
def test_a_graph_uv_cannot_give_adds_nothing(tmp_path, fake_uv, monkeypatch, fake):
    monkeypatch.setattr(graph.subprocess, "run", fake)
    assert framework_versions_in_graph(tmp_path, [], ["icetk"]) == {}
    assert len(fake.calls) == 1
