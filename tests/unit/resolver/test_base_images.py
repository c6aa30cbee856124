"""Which base image a stack builds on (cudaenv.resolver.images), on a small images table whose rows
each test states: the newest image that exists, the newest fitting cuDNN, the preferred OS, and the
exact tag spelling (issue 25 §3).

Every test builds its own Matrix: ``cuda_base`` memoizes its answers on the matrix, so a matrix
shared with other tests would answer from an earlier test's memo instead of the rules under test."""

from __future__ import annotations

import pytest

from cudaenv.matrix import Matrix
from cudaenv.matrix.model import BaseImage, ImageCudnn, OsRelease
from cudaenv.resolver.images import BaseChoice, cuda_base, wheels_base

SRC = "test"


def _image(cuda: str, os: tuple[str, ...], cudnn: tuple[ImageCudnn, ...] = (), removed: bool = False) -> BaseImage:
    return BaseImage(cuda=cuda, repository="nvidia/cuda", tag_version=cuda, os=os, source=SRC, cudnn=cudnn,
                     removed=removed)


# every Ubuntu these tests name, as an archive with tini (the shipped [[os]] rows decide the real ones)
_ARCHIVES = tuple(OsRelease(name=f"ubuntu{v}", init="tini", source="test") for v in ("16.04", "18.04", "20.04", "22.04",
                                                                                     "24.04"))


def _matrix(*images: BaseImage, os_releases=_ARCHIVES) -> Matrix:
    return Matrix(images=images, os_releases=os_releases)


CUDNN9 = ImageCudnn(tag="cudnn", version="9.1.0.70", os=("ubuntu22.04", "ubuntu20.04"))
CUDNN8 = ImageCudnn(tag="cudnn8", version="8.9.7.29", os=("ubuntu22.04",))


def test_a_wheels_stack_builds_on_the_official_slim_python_image():
    """The framework wheels bring CUDA and cuDNN: the base is python:X.Y-slim with neither inside."""
    assert wheels_base("3.12") == BaseChoice(reference="python:3.12-slim", cuda_release=None, cudnn=None,
                                             removed=False)


def test_the_newest_release_of_the_cuda_is_the_base_in_its_exact_tag_spelling():
    """12.4.1 is newer than 12.4.0 (and 12.4.10 newer than 12.4.9, compared as numbers): the base is
    nvidia/cuda:{tag_version}-{flavor}-{os} of the newest one, recording the toolkit release inside."""
    matrix = _matrix(_image("12.4.0", ("ubuntu22.04",)), _image("12.4.1", ("ubuntu22.04",)))
    assert cuda_base(matrix, "runtime", "12.4", cudnn=None, os_name=None) == BaseChoice(
        "nvidia/cuda:12.4.1-runtime-ubuntu22.04", "12.4.1", None, False)
    numbers = _matrix(_image("12.4.10", ("ubuntu22.04",)), _image("12.4.9", ("ubuntu22.04",)))
    assert cuda_base(numbers, "devel", "12.4", cudnn=None, os_name=None).cuda_release == "12.4.10"


def test_a_cuda_without_images_has_no_base():
    """No nvidia/cuda image of that x.y: there is no runtime/devel base to offer."""
    matrix = _matrix(_image("12.4.1", ("ubuntu22.04",)))
    assert cuda_base(matrix, "runtime", "12.3", cudnn=None, os_name=None) is None


def test_an_image_deleted_from_docker_hub_is_only_a_last_resort():
    """NVIDIA deleted EOL tags: an older image that still exists beats a newer deleted one, and a
    deleted one is still offered, marked removed, when nothing else is there (a mirror may keep it)."""
    matrix = _matrix(_image("11.0.3", ("ubuntu20.04",), removed=True), _image("11.0.2", ("ubuntu20.04",)))
    assert cuda_base(matrix, "runtime", "11.0", cudnn=None, os_name=None) == BaseChoice(
        "nvidia/cuda:11.0.2-runtime-ubuntu20.04", "11.0.2", None, False)
    gone = _matrix(_image("10.2", ("ubuntu18.04",), removed=True))
    assert cuda_base(gone, "devel", "10.2", cudnn=None, os_name=None) == BaseChoice(
        "nvidia/cuda:10.2-devel-ubuntu18.04", "10.2", None, True)


@pytest.mark.parametrize(("available", "chosen"), [
    (("ubuntu24.04", "ubuntu22.04"), "ubuntu22.04"),
    (("ubuntu20.04", "ubuntu24.04"), "ubuntu24.04"),
    (("ubuntu18.04", "ubuntu20.04"), "ubuntu20.04"),
    (("rockylinux9", "ubi8", "ubuntu18.04"), "ubuntu18.04"),
    (("rockylinux9", "ubuntu16.04", "ubuntu14.04"), "ubuntu16.04"),
    (("rockylinux9", "ubi8"), None),
], ids=["22.04-over-24.04", "24.04-over-20.04", "20.04-over-18.04", "ubuntu-over-others", "first-listed-ubuntu",
        "no-ubuntu"])
def test_without_an_os_asked_for_the_preferred_ubuntu_wins_then_the_first_listed(available, chosen):
    """OS_PREFERENCE (ubuntu22.04, 24.04, 20.04, 18.04) orders the choice whatever order the table
    lists them in; then the first other Ubuntu listed. An image with no Ubuntu is no base: the layers
    install packages with apt-get, which CentOS, Rocky and UBI images lack."""
    matrix = _matrix(_image("12.4.1", available))
    choice = cuda_base(matrix, "runtime", "12.4", cudnn=None, os_name=None)
    assert (choice.reference if choice else None) == (chosen and f"nvidia/cuda:12.4.1-runtime-{chosen}")
    assert cuda_base(_matrix(_image("12.4.1", available)), "runtime", "12.4", cudnn=None, os_name="rockylinux9") is None


def test_an_os_asked_for_is_taken_from_the_newest_image_that_has_it():
    """`os = "ubuntu20.04"`: 12.4.1 has no such tag, 12.4.0 has; an OS no image has means no base
    (never a silent other OS)."""
    matrix = _matrix(_image("12.4.0", ("ubuntu22.04", "ubuntu20.04")), _image("12.4.1", ("ubuntu22.04",)))
    assert cuda_base(matrix, "runtime", "12.4", cudnn=None, os_name="ubuntu20.04") == BaseChoice(
        "nvidia/cuda:12.4.0-runtime-ubuntu20.04", "12.4.0", None, False)
    assert cuda_base(matrix, "runtime", "12.4", cudnn=None, os_name="ubuntu24.04") is None


# --- cuDNN-flavoured tags ----------------------------------------------------------------------


def test_a_system_cudnn_need_takes_the_newest_fitting_cudnn_tag():
    """A framework built with cuDNN 8.9 needs cuDNN 8 with minor >= 9: the cudnn8 tag (8.9.7.29)
    fits although cudnn (9.1) is newer; the tag reads {tag_version}-{cudnn tag}-{flavor}-{os}."""
    matrix = _matrix(_image("12.4.1", ("ubuntu22.04",), cudnn=(CUDNN9, CUDNN8)))
    assert cuda_base(matrix, "runtime", "12.4", cudnn="8.9", os_name=None) == BaseChoice(
        "nvidia/cuda:12.4.1-cudnn8-runtime-ubuntu22.04", "12.4.1", "8.9.7.29", False)
    assert cuda_base(matrix, "devel", "12.4", cudnn="9.1", os_name=None) == BaseChoice(
        "nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04", "12.4.1", "9.1.0.70", False)


@pytest.mark.parametrize(("need", "fits"), [
    ("9", True), ("9.1", True), ("9.1.0.70", True), ("9.0", True),
    ("9.2", False), ("9.1.0.71", False), ("8.9", False), ("10.0", False),
], ids=["major", "same-minor", "same-build", "older-minor", "newer-minor", "newer-build", "older-major",
        "newer-major"])
def test_an_images_cudnn_fits_when_the_major_matches_and_the_version_is_at_least_the_need(need, fits):
    """cuDNN keeps its ABI within a major only: 9.1.0.70 serves a framework built with 9.0 or 9.1,
    not one built with 9.2 or with cuDNN 8 or 10."""
    matrix = _matrix(_image("12.4.1", ("ubuntu22.04",), cudnn=(CUDNN9,)))
    choice = cuda_base(matrix, "runtime", "12.4", cudnn=need, os_name=None)
    assert (choice is not None) is fits
    if fits:
        assert choice.cudnn == "9.1.0.70"


def test_of_two_fitting_cudnn_tags_the_newer_is_chosen():
    """Both 9.0 and 9.1 serve a cuDNN-9.0 build: the newer one (bug fixes, newer GPUs) is the base,
    whatever order the table lists them in."""
    old = ImageCudnn(tag="cudnn9.0", version="9.0.0.312", os=("ubuntu22.04",))
    for offers in ((old, CUDNN9), (CUDNN9, old)):
        matrix = _matrix(_image("12.4.1", ("ubuntu22.04",), cudnn=offers))
        assert cuda_base(matrix, "runtime", "12.4", cudnn="9.0", os_name=None).cudnn == "9.1.0.70"


def test_the_cudnn_tags_own_os_list_decides_and_an_older_image_may_have_the_fit():
    """The cudnn8 tag exists for ubuntu22.04 only: asking for ubuntu20.04 with cuDNN 8.9 falls back
    to the older 12.4.0 image whose cudnn8 tag has it; the newest image without a fitting cuDNN at
    all is passed over the same way."""
    old8 = ImageCudnn(tag="cudnn8", version="8.9.7.29", os=("ubuntu20.04",))
    matrix = _matrix(_image("12.4.0", ("ubuntu20.04", "ubuntu22.04"), cudnn=(old8,)),
                     _image("12.4.1", ("ubuntu20.04", "ubuntu22.04"), cudnn=(CUDNN9, CUDNN8)))
    assert cuda_base(matrix, "runtime", "12.4", cudnn="8.9", os_name="ubuntu20.04") == BaseChoice(
        "nvidia/cuda:12.4.0-cudnn8-runtime-ubuntu20.04", "12.4.0", "8.9.7.29", False)
    assert cuda_base(matrix, "runtime", "12.4", cudnn="9.1", os_name="ubuntu20.04") == BaseChoice(
        "nvidia/cuda:12.4.1-cudnn-runtime-ubuntu20.04", "12.4.1", "9.1.0.70", False)
    assert cuda_base(matrix, "runtime", "12.4", cudnn="9.1", os_name="ubuntu24.04") is None
    no_cudnn8 = _matrix(_image("12.4.0", ("ubuntu22.04",), cudnn=(CUDNN8,)),
                        _image("12.4.1", ("ubuntu22.04",), cudnn=(CUDNN9,)))
    assert cuda_base(no_cudnn8, "runtime", "12.4", cudnn="8.9", os_name=None).reference == \
        "nvidia/cuda:12.4.0-cudnn8-runtime-ubuntu22.04"


def test_a_deleted_image_with_the_cudnn_is_marked_removed():
    """The removed flag travels with a cuDNN-flavoured choice too: the user is told a mirror must
    have kept the tag."""
    matrix = _matrix(_image("11.0.3", ("ubuntu18.04",), cudnn=(ImageCudnn("cudnn8", "8.0.5.39", ("ubuntu18.04",)),),
                            removed=True))
    assert cuda_base(matrix, "runtime", "11.0", cudnn="8.0", os_name=None) == BaseChoice(
        "nvidia/cuda:11.0.3-cudnn8-runtime-ubuntu18.04", "11.0.3", "8.0.5.39", True)


# --- the memo ----------------------------------------------------------------------------------


def test_each_question_gets_its_own_memoized_answer():
    """The resolver asks per candidate build: flavor, CUDA, cuDNN and OS each change the answer, and
    asking again returns the answer already computed."""
    matrix = _matrix(_image("12.4.1", ("ubuntu22.04", "ubuntu20.04"), cudnn=(CUDNN9, CUDNN8)),
                     _image("12.6.3", ("ubuntu24.04",)))
    questions = {
        ("runtime", "12.4", None, None): "nvidia/cuda:12.4.1-runtime-ubuntu22.04",
        ("devel", "12.4", None, None): "nvidia/cuda:12.4.1-devel-ubuntu22.04",
        ("runtime", "12.6", None, None): "nvidia/cuda:12.6.3-runtime-ubuntu24.04",
        ("runtime", "12.4", "8.9", None): "nvidia/cuda:12.4.1-cudnn8-runtime-ubuntu22.04",
        ("runtime", "12.4", None, "ubuntu20.04"): "nvidia/cuda:12.4.1-runtime-ubuntu20.04",
    }
    for (flavor, xy, cudnn, os_name), reference in questions.items():
        assert cuda_base(matrix, flavor, xy, cudnn=cudnn, os_name=os_name).reference == reference
    for (flavor, xy, cudnn, os_name), reference in questions.items():
        first = cuda_base(matrix, flavor, xy, cudnn=cudnn, os_name=os_name)
        assert first.reference == reference
        assert cuda_base(matrix, flavor, xy, cudnn=cudnn, os_name=os_name) is first


def test_an_exact_cudnn_is_that_version_even_when_a_newer_image_has_a_later_one():
    """A project without a framework that asks for cuDNN 8.0.2.39 gets the image carrying it (the
    older 11.0 tag), not the newer 11.0.3 with 8.0.5.39 that a framework's floor would take; the
    exact answer is memoized apart from the floor's."""
    early = ImageCudnn(tag="cudnn8", version="8.0.2.39", os=("ubuntu18.04",))
    late = ImageCudnn(tag="cudnn8", version="8.0.5.39", os=("ubuntu18.04",))
    matrix = _matrix(_image("11.0.2", ("ubuntu18.04",), cudnn=(early,)), _image("11.0.3", ("ubuntu18.04",), cudnn=(late,)))
    assert cuda_base(matrix, "runtime", "11.0", cudnn="8.0.2.39", os_name=None).cudnn == "8.0.5.39"
    exact = cuda_base(matrix, "runtime", "11.0", cudnn="8.0.2.39", os_name=None, exact_cudnn=True)
    assert (exact.reference, exact.cudnn) == ("nvidia/cuda:11.0.2-cudnn8-runtime-ubuntu18.04", "8.0.2.39")
    assert cuda_base(matrix, "runtime", "11.0", cudnn="8.0.9", os_name=None, exact_cudnn=True) is None
    assert cuda_base(matrix, "runtime", "11.0", cudnn="8.0", os_name=None, exact_cudnn=True).cudnn == "8.0.5.39"


def test_the_oldest_python_uv_installs_is_what_the_installed_uv_downloads():
    """UV_LOWEST_PYTHON is read from uv's own download list (offline: uv carries it), so a newer uv
    that drops or adds a Python is noticed here."""
    import re
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from cudaenv.resolver.images import UV_LOWEST_PYTHON, uv_installs
    from cudaenv.versions import numeric_key

    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert uv, "uv is a dependency of cudaenv"
    listed = subprocess.run([uv, "python", "list", "--all-versions", "--only-downloads", "--all-platforms"],
                            capture_output=True, text=True, timeout=60, env={"UV_NO_CONFIG": "1", "PATH": ""}).stdout
    minors = {m.group(1) for m in re.finditer(r"^cpython-(3\.[0-9]+)\.[0-9]+-linux-x86_64-gnu\b", listed, re.M)}
    assert minors and min(minors, key=numeric_key) == UV_LOWEST_PYTHON
    assert uv_installs("3.8") and uv_installs("3.15") and not uv_installs("3.7")


def test_a_wheels_stack_gets_its_python_from_the_python_image_so_uv_s_floor_does_not_apply():
    """torch 1.12.1 on Python 3.7: uv cannot install 3.7 in an nvidia/cuda image, but a wheels stack
    starts from python:3.7-slim, which has it."""
    from tests.unit.resolver.helpers import resolve_case

    for flavor in ("wheels", "auto"):
        stack = resolve_case(torch="==1.12.1", python="==3.7", flavor=flavor, driver="535.104.05").stack
        assert (stack.flavor, stack.base_image, stack.python) == ("wheels", "python:3.7-slim", "3.7")


def test_an_ubuntu_whose_archive_has_no_init_is_passed_over_for_one_that_has():
    """16.04 first in the image's list, but its archive gives no init: the 18.04 tag is the base, and
    the base says which init it runs."""
    archives = (OsRelease(name="ubuntu16.04", source="test"), OsRelease(name="ubuntu18.04", init="dumb-init", source="test"))
    matrix = _matrix(_image("10.0.130", ("ubuntu16.04", "ubuntu18.04")), os_releases=archives)
    chosen = cuda_base(matrix, "runtime", "10.0", cudnn=None, os_name=None)
    assert chosen.reference.endswith("-ubuntu18.04") and chosen.init == "dumb-init"
    assert cuda_base(matrix, "runtime", "10.0", cudnn=None, os_name="ubuntu16.04") is None


def test_an_ubuntu_the_matrix_has_no_archive_row_for_is_never_built_on():
    matrix = _matrix(_image("10.0.130", ("ubuntu14.04",)), os_releases=())
    assert cuda_base(matrix, "runtime", "10.0", cudnn=None, os_name=None) is None


def test_a_cudnn_tag_base_runs_the_init_of_its_os_archive():
    """A system-cuDNN base on 18.04 runs dumb-init, the init bionic's archive has, as a base without
    cuDNN does: the init follows the tag's OS, not a default."""
    archives = (OsRelease(name="ubuntu18.04", init="dumb-init", source="test"),)
    cudnn7 = ImageCudnn(tag="cudnn7", version="7.6.5.32", os=("ubuntu18.04",))
    matrix = _matrix(_image("10.0.130", ("ubuntu18.04",), cudnn=(cudnn7,)), os_releases=archives)
    chosen = cuda_base(matrix, "runtime", "10.0", cudnn="7.4", os_name=None)
    assert chosen.reference == "nvidia/cuda:10.0.130-cudnn7-runtime-ubuntu18.04"
    assert (chosen.cudnn, chosen.init) == ("7.6.5.32", "dumb-init")


def test_only_an_image_published_for_the_targets_platform_is_a_base():
    """A Grace (aarch64) target takes only tags published for arm64: an x86_64-only release is no base
    for it, and the x86_64 default still takes it."""
    x86_only = BaseImage(cuda="12.4.1", repository="nvidia/cuda", tag_version="12.4.1", os=("ubuntu22.04",),
                         source=SRC)
    matrix = _matrix(x86_only)
    assert cuda_base(matrix, "runtime", "12.4", cudnn=None, os_name=None, platform="aarch64") is None
    assert cuda_base(matrix, "runtime", "12.4", cudnn=None, os_name=None).reference == \
        "nvidia/cuda:12.4.1-runtime-ubuntu22.04"
    both = BaseImage(cuda="12.4.1", repository="nvidia/cuda", tag_version="12.4.1", os=("ubuntu22.04",), source=SRC,
                     aarch64_os=("ubuntu22.04",))
    assert cuda_base(_matrix(both), "runtime", "12.4", cudnn=None, os_name=None,
                     platform="aarch64").reference == "nvidia/cuda:12.4.1-runtime-ubuntu22.04"
