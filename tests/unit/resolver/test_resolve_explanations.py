"""The explanation of a "no", word for word: each filter ``explain_failure`` walks, in order, names
the first one that empties the field, and ``_fixes`` then names each single relaxation that makes a
stack exist (issue 25 §3). The messages are the user's whole answer, so they are a contract: the
cases below pin every one, and the facts inside them come from the shipped matrix (comments)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudaenv.resolver.model import PYPI, Host, TargetGpu
from cudaenv.resolver.resolve import resolve
from tests.unit.resolver.helpers import codes, constraints, host, matrix, resolve_case

# Matrix facts behind the cases: torch 2.6.0 is built for CUDA 11.8/12.4/12.6 and Python 3.9-3.13;
# R418 runs CUDA <= 10.1 natively and CUDA 12 needs >= 525.60.13; torch 2.0.1 is built for 11.7/11.8 and
# tensorflow 2.15.1 for 12.2; Kepler (K80, sm_37) lost CUDA 12; torch 2.8.0's cu128 build starts at
# sm_70; tensorflow's CUDA 12.2 build reaches sm_90 only through PTX; torch 2.3.1 (cu121) pins
# nvidia-cudnn-cu12==8.9.2.26, jax 0.4.30 needs cuDNN 9; torch 2.1.x wheels stop at Python 3.11 and
# jax 0.11 starts at 3.12; PyPI serves torch 2.10.0 only as its CUDA 12.8 build.
CASES = [
    pytest.param(dict(torch='2.6.0', python='3.6'), [
        ('python-unavailable', 'torch 2.6.0 publishes Linux wheels for Python 3.9–3.13, not Python 3.6', None),
        ('fix-python', 'use Python 3.9–3.13 instead of 3.6', 'set python to 3.13'),
        ('fix-relax-pin', 'relax the torch pin (2.6.0): torch 1.10.2 fits this host', 'allow torch 1.10.2'),
    ], id='python-unavailable'),
    pytest.param(dict(torch='2.6.0', cuda='==11.0'), [
        ('cuda-constraint', 'CUDA ==11.0 admits none of the CUDA versions the frameworks are built for (11.8, 12.4, 12.6)', None),
        ('fix-relax-pin', 'relax the torch pin (2.6.0): torch 1.7.1 fits this host', 'allow torch 1.7.1'),
        ('fix-cuda', 'relax the cuda constraint (==11.0): cuda 12.6 fits (torch 2.6.0 from https://download.pytorch.org/whl/cu126)', 'allow cuda 12.6'),
    ], id='cuda-constraint'),
    pytest.param(dict(torch='2.6.0', cuda='>=12', driver='418.87.01', gpus=['V100']), [
        ('driver-too-old', 'driver 418.87.01 supports CUDA <= 10.1 natively; torch 2.6.0 is built for CUDA 11.8, 12.4, 12.6; of those, CUDA >=12 (as configured) leaves 12.4, 12.6', None),
        ('fix-driver', 'upgrade the driver to >= 525.60.13', 'upgrade the NVIDIA driver to >= 525.60.13'),
    ], id='driver-too-old-with-cuda-pin'),
    pytest.param(dict(cuda='>=12', driver='418.87.01'), [
        ('driver-too-old', 'driver 418.87.01 supports CUDA <= 10.1 natively; the CUDA versions allowed need more (12.0, 12.1, 12.2, 12.3, 12.4, 12.5, 12.6, 12.8, 12.9, 13.0, 13.1, 13.2, 13.3); of those, CUDA >=12 (as configured) leaves 12.0, 12.1, 12.2, 12.3, 12.4, 12.5, 12.6, 12.8, 12.9, 13.0, 13.1, 13.2, 13.3', None),
        ('fix-driver', 'upgrade the driver to >= 525.60.13', 'upgrade the NVIDIA driver to >= 525.60.13'),
        ('fix-cuda', 'relax the cuda constraint (>=12): cuda 10.1 fits', 'allow cuda 10.1'),
    ], id='driver-too-old-no-framework'),
    pytest.param(dict(torch='2.6.0', cudnn='==7'), [
        ('cudnn-constraint', 'cuDNN ==7 is not what the matching builds use', None),
        # ==7 names the cuDNN 7 series: torch 1.12.1's CUDA 10.2 build bundles cuDNN 7.6.5
        ('fix-relax-pin', 'relax the torch pin (2.6.0): torch 1.12.1 fits this host', 'allow torch 1.12.1'),
        ('fix-cudnn', 'relax the cudnn constraint (==7): cudnn 9.5 fits', 'allow cudnn 9.5'),
    ], id='cudnn-constraint'),
    pytest.param(dict(cuda='==12.4', cudnn='==7.6', driver='550.54.15'), [
        ('cudnn-constraint', 'no nvidia/cuda image of the CUDA versions allowed here carries cuDNN ==7.6', None),
        ('fix-cuda', 'relax the cuda constraint (==12.4): cuda 10.2 fits', 'allow cuda 10.2'),
        ('fix-cudnn', 'drop the cudnn constraint (==7.6): CUDA 12.4 without cuDNN fits', 'remove cudnn'),
    ], id='cudnn-constraint-no-framework'),
    pytest.param(dict(cuda='==12.4', python='==3.7', driver='550.54.15'), [
        ('python-unavailable', 'without a framework, the image gets Python 3.8–3.15, not Python 3.7', None),
        ('fix-python', 'use Python 3.8–3.15 instead of 3.7', 'set python to 3.15'),
    ], id='python-unavailable-no-framework'),
    pytest.param(dict(mxnet='==1.5.1', python='==3.5', driver='535.104.05'), [
        ('python-uv', "Python 3.5 cannot be installed in an nvidia/cuda image: uv installs its Python, and uv's "
                      "downloads start at 3.8; below that only an Ubuntu archive can (ubuntu18.04's archive has "
                      "Python 3.6, 3.7)", None),
        ('fix-python', 'use Python 3.6 instead of 3.5', 'set python to 3.6'),
    ], id='python-uv'),
    pytest.param(dict(mxnet='==1.5.1', python='==3.5', flavor='runtime', driver='535.104.05'), [
        ('python-uv', "Python 3.5 cannot be installed in an nvidia/cuda image: uv installs its Python, and uv's "
                      "downloads start at 3.8; below that only an Ubuntu archive can (ubuntu18.04's archive has "
                      "Python 3.6, 3.7)", None),
        ('fix-python', 'use Python 3.6 instead of 3.5', 'set python to 3.6'),
    ], id='python-uv-when-the-flavor-asks-for-a-cuda-image'),
    pytest.param(dict(cuda='==13.5', driver='580.65.06'), [
        ('cuda-constraint', 'CUDA ==13.5 admits none of the CUDA versions with an nvidia/cuda image in the matrix '
                            '(8.0, 9.0, 9.1, 9.2, 10.0, 10.1, 10.2, 11.0, 11.1, 11.2, 11.3, 11.4, 11.5, 11.6, 11.7, 11.8, 12.0, 12.1, 12.2, '
                            '12.3, 12.4, 12.5, 12.6, 12.8, 12.9, 13.0, 13.1, 13.2, 13.3)', None),
        ('fix-cuda', 'relax the cuda constraint (==13.5): cuda 13.0 fits', 'allow cuda 13.0'),
    ], id='cuda-without-image-no-framework'),
    pytest.param(dict(tensorflow='2.10', flavor='wheels'), [
        ('flavor-unavailable', "tensorflow 2.10 has no build that brings its own CUDA libraries, which flavor 'wheels' needs", None),
        ('fix-relax-pin', 'relax the tensorflow pin (2.10): tensorflow 2.14.0 fits this host (newest that fits: 2.21.0)', 'allow tensorflow 2.14.0'),
        ('fix-flavor', "flavor 'wheels' cannot work here; flavor 'runtime' does", 'set flavor to runtime'),
    ], id='flavor-unavailable'),
    pytest.param(dict(tensorflow='2.15', keras='>=3'), [
        ('companion-clash', 'tensorflow 2.15 requires keras >=2.15.0,<2.16 (its published metadata); keras >=3 admits none of it', None),
        ('fix-relax-pin', 'relax the tensorflow pin (2.15): tensorflow 2.16.1 fits this host (newest that fits: 2.21.0)', 'allow tensorflow 2.16.1'),
        ('fix-relax-pin', 'relax the keras pin (>=3): tensorflow 2.15.0 fits this host, with the keras it pairs with', 'allow the keras that tensorflow 2.15.0 pairs with'),
    ], id='companion-clash'),
    pytest.param(dict(tensorflow='2.15.1', torch='2.0.1', driver='535.104.05', gpus=['A100']), [
        ('no-common-cuda', 'the frameworks share no CUDA version: torch 2.0.1 for CUDA 11.7, 11.8; tensorflow 2.15.1 for CUDA 12.2', None),
        ('fix-relax-pin', 'relax the tensorflow pin (2.15.1): tensorflow 2.14.1 fits this host', 'allow tensorflow 2.14.1'),
    ], id='no-common-cuda'),
    pytest.param(dict(torch='any', cuda='>=12', driver='470.82.01', gpus=['K80']), [
        ('gpu-unsupported-by-cuda', 'K80 (sm_37) cannot run the libraries of CUDA 12.1, 12.4, 12.6, 12.8, 12.9, 13.0, 13.2 (13.2 (sm_75–sm_121), 13.0 (sm_75–sm_121), 12.9 (sm_50–sm_121), 12.8 (sm_50–sm_120), 12.6 (sm_50–sm_90), 12.4 (sm_50–sm_90), 12.1 (sm_50–sm_90)); CUDA 8.0–11.8 run on it', None),
        ('fix-cuda', 'relax the cuda constraint (>=12): cuda 11.8 fits (torch 2.7.1 from https://download.pytorch.org/whl/cu118)', 'allow cuda 11.8'),
    ], id='gpu-unsupported-by-cuda'),
    pytest.param(dict(torch='2.8.0', cuda='12.8', driver='570.124.06', gpus=['GTX 1080']), [
        ('gpu-unsupported-by-build', 'GTX 1080 (sm_61) is not in the SM list of torch 2.8.0 for CUDA 12.8 (built for sm_70, sm_75, sm_80, sm_86, sm_90, sm_100, sm_120); the newest torch build that includes it is torch 2.14.1 (cu126)', None),
        ('fix-cuda', 'relax the cuda constraint (==12.8): cuda 12.6 fits (torch 2.8.0 from https://download.pytorch.org/whl/cu126)', 'allow cuda 12.6'),
    ], id='gpu-unsupported-by-build'),
    pytest.param(dict(tensorflow='any', cuda='==12.2', driver='525.60.13', gpus=['H100']), [
        ('gpu-unsupported-by-build', 'H100 (sm_90) is not in the SM list of tensorflow for CUDA 12.2 (built for sm_50, sm_60, sm_70, sm_75, sm_80) (only its PTX covers it, and PTX cannot be JIT-compiled under minor-version compatibility); the newest tensorflow build that includes it is tensorflow 2.21.0 (and-cuda)', None),
        ('fix-driver', 'upgrade the driver to >= 535.54.03', 'upgrade the NVIDIA driver to >= 535.54.03'),
        ('fix-cuda', 'relax the cuda constraint (==12.2): cuda 12.5 fits', 'allow cuda 12.5'),
    ], id='gpu-unsupported-by-build-ptx'),
    pytest.param(dict(torch='2.6.0', driver='570.124.06', gpus=['GTX 1080', 'RTX 5090']), [
        ('gpu-unsupported-by-build', 'RTX 5090 (sm_120) is not in the SM list of torch 2.6.0 for CUDA 11.8, 12.4, 12.6 (built for sm_37, sm_50, sm_60, sm_70, sm_75, sm_80, sm_86, sm_90); the newest torch build that includes it is torch 2.15.0 (cu132)', None),
        ('fix-relax-pin', 'relax the torch pin (2.6.0): torch 1.5.1 fits this host only through PTX JIT', 'allow torch 1.5.1'),
    ], id='gpu-unsupported-by-build-one-of-two'),
    # the nearest release reaches sm_120 by PTX alone, the newest has native code: the JIT caveat is the
    # nearest release's own (judged on a stack pinned to it), not the newest's
    pytest.param(dict(torch='1.9.1', driver='570.124.06', gpus=['RTX 5090']), [
        ('gpu-unsupported-by-build', 'RTX 5090 (sm_120) is not in the SM list of torch 1.9.1 for CUDA 10.2, 11.1 (built for sm_37, sm_50, sm_60, sm_70, sm_75, sm_80, sm_86); the newest torch build that includes it is torch 2.15.0 (cu132)', None),
        ('fix-relax-pin', 'relax the torch pin (1.9.1): torch 1.5.1 fits this host only through PTX JIT (newest that fits: 2.13.0)', 'allow torch 1.5.1'),
    ], id='relax-pin-nearest-by-ptx-newest-native'),
    pytest.param(dict(torch='2.3.1', jax='0.4.30', flavor='wheels', driver='550.54.15', gpus=['A100']), [
        ('conflicting-pins', 'torch 2.3.1 (cu121) requires nvidia-cudnn-cu12==8.9.2.26 but jax 0.4.30 (cuda12) requires nvidia-cudnn-cu12<10.0,>=9.0: they cannot share one environment', None),
        ('fix-relax-pin', 'relax the torch pin (2.3.1): torch 2.4.0 fits this host (newest that fits: 2.14.1)', 'allow torch 2.4.0'),
        ('fix-relax-pin', 'relax the jax pin (0.4.30): jax 0.4.28 fits this host', 'allow jax 0.4.28'),
    ], id='conflicting-pins'),
    pytest.param(dict(torch='2.1.2', jax='0.11.0', driver='535.104.05', gpus=['A100']), [
        ('no-common-python', 'the frameworks share no Python version: torch for Python 3.8–3.11; jax for Python 3.12–3.14', None),
        ('fix-relax-pin', 'relax the torch pin (2.1.2): torch 2.8.0 fits this host (newest that fits: 2.14.1)', 'allow torch 2.8.0'),
        ('fix-relax-pin', 'relax the jax pin (0.11.0): jax 0.4.28 fits this host', 'allow jax 0.4.28'),
    ], id='no-common-python'),
    pytest.param(dict(torch='==2.15.0', flavor='wheels', driver='535.104.05', gpus=['A100']), [
        ('flavor-constraint', "flavor 'wheels' needs every framework to install its own CUDA libraries (and no forward compatibility); these builds do not", None),
        ('fix-driver', 'upgrade the driver to branch R580 or newer', 'upgrade the NVIDIA driver to branch R580 or newer'),
        ('fix-relax-pin', 'relax the torch pin (2.15.0): torch 2.14.1 fits this host', 'allow torch 2.14.1'),
        ('fix-flavor', "flavor 'wheels' cannot work here; flavor 'runtime' does", 'set flavor to runtime'),
    ], id='flavor-constraint'),
    pytest.param(dict(torch='==2.10.0', cuda='==12.6', driver='580.65.06', gpus=['A100'], index=PYPI), [
        ('index-lacks-build', 'the framework index (PyPI) serves no build of torch 2.10.0 that the project allows (2.10.0 for CUDA 12.6 from https://download.pytorch.org/whl/cu126); it serves 2.10.0 for CUDA 12.8', None),
        ('fix-relax-pin', 'relax the torch pin (2.10.0): torch 2.7.1 fits this host', 'allow torch 2.7.1'),
        ('fix-framework-index', 'use a framework index that serves torch 2.10.0 for CUDA 12.6: https://download.pytorch.org/whl/cu126 (or a mirror of it, with [build] framework_index_mirrors = "https://download.pytorch.org/whl/cu126")', 'point [build] framework_index at https://download.pytorch.org/whl/cu126'),
        ('fix-cuda', 'relax the cuda constraint (==12.6): cuda 12.8 fits', 'allow cuda 12.8'),
    ], id='index-lacks-build'),
    # the fix for a companion pin names the framework release that fits, not that release's number as the
    # companion's (there is no torchvision 2.14.1): a bug found by mutation testing
    pytest.param(dict(torch='any', torchvision='==0.13.1', driver='560.35.03', gpus=['H100']), [
        ('gpu-unsupported-by-build', 'H100 (sm_90) is not in the SM list of torch for CUDA 10.2, 11.3, 11.6 (built for sm_37, sm_50, sm_60, sm_70, sm_75, sm_80, sm_86); the newest torch build that includes it is torch 2.15.0 (cu132)', None),
        ('fix-relax-pin', 'relax the torchvision pin (0.13.1): torch 2.14.1 fits this host, with the torchvision it pairs with', 'allow the torchvision that torch 2.14.1 pairs with'),
    ], id='companion-pin-relaxed'),
    # every TensorFlow release declares a keras range: more than three are cut short with an ellipsis
    # (TensorFlow 2.5 and older declare no keras, so keras 1.0 alone would resolve to 2.5.3, as pip backtracks)
    pytest.param(dict(tensorflow='>=2.6', keras='==1.0'), [
        ('companion-clash', 'tensorflow >=2.6 requires keras >=2.10.0,<2.11; >=2.11.0,<2.12; >=2.12.0,<2.13; … (its published metadata); keras 1.0 admits none of it', None),
        ('fix-relax-pin', 'relax the tensorflow pin (>=2.6): tensorflow 2.5.3 fits this host', 'allow tensorflow 2.5.3'),
        ('fix-relax-pin', 'relax the keras pin (1.0): tensorflow 2.21.0 fits this host, with the keras it pairs with', 'allow the keras that tensorflow 2.21.0 pairs with'),
    ], id='companion-clash-many-ranges'),
    # a Kepler sm_30 board (GTX 680) on R470: CUDA 10.2 runs on it, but torch's builds start at sm_37
    pytest.param(dict(torch='any', driver='470.82.01', gpus=['GTX 680']), [
        ('gpu-unsupported-by-build', 'GTX 680 (sm_30) is not in the SM list of torch for CUDA 8.0, 9.0, 9.2, 10.0, 10.1, 10.2 (built for sm_35, sm_37, sm_50, sm_60, sm_61, sm_70, sm_75); no torch build in the matrix includes it', None),
    ], id='no-build-includes-the-gpu'),
    # TensorFlow 2.15.0 loads the system cuDNN 8.9 of a CUDA 12.2 image; nvidia/cuda has none on ubuntu24.04
    pytest.param(dict(tensorflow='==2.15.0', os='ubuntu24.04', driver='550.54.15'), [
        ('no-base-image', 'no nvidia/cuda base image in the matrix fits CUDA 12.2 with the cuDNN these builds need', None),
        ('fix-relax-pin', 'relax the tensorflow pin (2.15.0): tensorflow 2.14.1 fits this host (newest that fits: 2.21.0)', 'allow tensorflow 2.14.1'),
    ], id='no-base-image'),
]


def _resolve(driver=None, gpus=(), index=None, **kw):
    return resolve(matrix(), replace(constraints(**kw), framework_index=index), host(driver, gpus))


@pytest.mark.parametrize("case,expected", CASES)
def test_a_failure_names_the_first_filter_that_empties_the_field_and_each_fix(case, expected):
    """The user reads only these lines: the first filter that rules everything out, then each single
    relaxation that was checked to produce a stack (never a fix that does not work)."""
    result = _resolve(**case)
    assert result.stack is None and result.valid_cuda == ()
    assert [(p.code, p.message, p.fix) for p in result.problems] == expected


@pytest.mark.parametrize("case,expected", CASES)
def test_without_explain_a_failure_is_one_plain_no(case, expected):
    """``explain=False`` is the search's inner loop (fixes, smallest driver): one cheap problem, no proof."""
    driver, gpus, index = case.get("driver"), case.get("gpus", ()), case.get("index")
    kw = {k: v for k, v in case.items() if k not in ("driver", "gpus", "index")}
    result = resolve(matrix(), replace(constraints(**kw), framework_index=index), host(driver, gpus), explain=False)
    assert result.stack is None
    assert [(p.code, p.message) for p in result.problems] == [("no-stack", "no valid stack")]


def test_a_gpu_only_the_oldest_cuda_supports_is_told_so():
    """A Fermi sm_20 board with CUDA 9 or newer asked for: only CUDA 8.0's libraries run on it (CUDA 9
    dropped Fermi), so the answer is about the CUDA libraries and names that one CUDA."""
    result = resolve(matrix(), constraints(torch="any", cuda=">=9"), Host(None, (TargetGpu("2.0", None, None, False),)))
    [problem] = result.problems
    assert problem.code == "gpu-unsupported-by-cuda"
    assert problem.message.startswith("sm_20 cannot run the libraries of CUDA 9.0, 9.2, 10.0, 10.1, 10.2, 11.0, 11.1, ")
    assert problem.message.endswith(", 9.0 (sm_30–sm_70)); only CUDA 8.0 runs on it")


def test_a_gpu_no_cuda_in_the_matrix_supports_is_told_so():
    """A Tesla-class sm_13 board: no CUDA release in the matrix targets it, so there is no CUDA to suggest."""
    result = resolve(matrix(), constraints(torch="any"), Host(None, (TargetGpu("1.3", None, None, False),)))
    [problem] = result.problems
    assert problem.code == "gpu-unsupported-by-cuda"
    assert problem.message.endswith("; no CUDA in the matrix runs on it")


def test_a_driver_too_old_for_two_frameworks_names_the_cuda_of_each():
    """R418 runs CUDA <= 10.1; torch 2.6.0 needs 11.8 or newer, TensorFlow is built for CUDA 8.0 to 12.5:
    both lists are shown, then each fix (torch 1.8.1's CUDA 10.1 build fits beside TensorFlow 2.3)."""
    result = _resolve(torch="2.6.0", tensorflow="any", driver="418.87.01")
    assert [(p.code, p.message) for p in result.problems] == [
        ("driver-too-old", "driver 418.87.01 supports CUDA <= 10.1 natively; torch 2.6.0 is built for CUDA 11.8, 12.4, "
                           "12.6; tensorflow is built for CUDA 8.0, 9.0, 10.0, 10.1, 11.0, 11.2, 11.8, 12.2, 12.3, 12.5"),
        ("fix-driver", "upgrade the driver to >= 450.80.02"),
        ("fix-relax-pin", "relax the torch pin (2.6.0): torch 1.8.1 fits this host")]


def test_later_filters_only_see_the_builds_with_the_python_asked_for():
    """Python 3.8 keeps torch up to 2.4, none of which carries sm_120 code; torch 2.7+ would run on the
    RTX 5090 natively but has no 3.8 wheels. The newest 3.8 build that runs there at all is torch
    1.5.1, through the compute_37 PTX its wheel carries (read from the wheel): chosen, with the
    warning that says so, rather than a build that only another Python has."""
    result = _resolve(torch="any", python="3.8", driver="570.124.06", gpus=["RTX 5090"])
    assert result.ok and result.stack.framework("torch") == "1.5.1" and result.stack.python == "3.8"
    assert [(p.code, p.message) for p in result.problems] == [(
        "ptx-jit-only", "RTX 5090 (sm_120) runs torch 1.5.1 only through its compute_37 PTX, JIT-compiled by the "
                        "driver at first use: the build has no native code for it (built for sm_37, sm_50, sm_60, "
                        "sm_61, sm_70, sm_75)")]


@pytest.mark.parametrize("tensorflow,message", [
    (">=2.13,<2.16", "tensorflow <2.16,>=2.13 requires keras >=2.13.1,<2.14; >=2.14.0,<2.15; >=2.15.0,<2.16 "
                     "(its published metadata); keras 1.0 admits none of it"),
    (">=2.12,<2.16", "tensorflow <2.16,>=2.12 requires keras >=2.12.0,<2.13; >=2.13.1,<2.14; >=2.14.0,<2.15; … "
                     "(its published metadata); keras 1.0 admits none of it"),
], ids=["three-ranges-in-full", "four-ranges-cut-after-three"])
def test_a_companion_clash_shows_at_most_three_ranges(tensorflow, message):
    """Three keras ranges (TensorFlow 2.13-2.15) are shown whole; from four on, the first three and an ellipsis."""
    [clash] = [p for p in _resolve(tensorflow=tensorflow, keras="==1.0").problems if p.code == "companion-clash"]
    assert clash.message == message


def test_relaxing_the_only_companion_pin_keeps_its_framework():
    """torchvision 0.25.0 alone on a K80 host: the fix names the torch release that fits (with the
    torchvision it pairs with), not "torch None" from a project left without a framework."""
    result = resolve_case(torchvision="==0.25.0", driver="470.57.02", gpus=["K80"])
    fixes = [p.message for p in result.problems if p.code == "fix-relax-pin"]
    assert len(fixes) == 1 and fixes[0].startswith("relax the torchvision pin (0.25.0): torch ")
    assert "None" not in fixes[0] and fixes[0].endswith("fits this host, with the torchvision it pairs with")


def test_a_framework_that_never_brings_its_own_cuda_gets_an_older_python_from_the_ubuntu_archive():
    """torch 1.12 could come as wheels, but MXNet always needs an nvidia/cuda image, and Python 3.7
    is below uv's downloads: the image is an ubuntu18.04 one, whose archive installs python3.7
    (matrix/images.toml [[os]]), and the stack names the packages the image installs for it."""
    result = resolve_case(torch="1.12", mxnet="any", python="==3.7", driver="535.104.05", gpus=["A100"])
    assert result.ok and result.stack.python == "3.7" and result.stack.flavor == "runtime"
    assert result.stack.base_image.endswith("-ubuntu18.04")
    assert result.stack.python_packages == ("python3.7", "python3-distutils")


def test_a_python_uv_installs_never_takes_the_archive_s():
    """Python 3.8 on an ubuntu18.04 image comes from uv (its archive has 3.8 too, but uv's is the
    one every other stack gets): no packages are added."""
    result = resolve_case(tensorflow="2.4", python="==3.8", os="ubuntu18.04", driver="535.104.05")
    assert result.ok and result.stack.python == "3.8" and result.stack.python_packages == ()


def test_an_old_python_on_an_os_whose_archive_lacks_it_is_refused():
    """ubuntu20.04's archive has no Python 3.6 (the matrix lists none for it): asked for that OS,
    Python 3.6 is refused rather than given an image without its Python."""
    result = resolve_case(tensorflow="2.4", python="==3.6", os="ubuntu20.04", driver="535.104.05")
    assert not result.ok

@pytest.mark.parametrize("torchaudio", ["any", ">=2.0"], ids=["any", "range"])
def test_a_companion_with_no_release_for_the_framework_says_so_and_to_leave_it_out(torchaudio):
    """torchaudio's last release is 2.11.0 (matrix/torch.toml notes): torch 2.12 with torchaudio is
    no stack because no torchaudio pairs with it, said as such (it read "cannot run the libraries
    of CUDA  ()" before), and the fix is to leave torchaudio out, not "the torchaudio it pairs with"."""
    result = resolve_case(torch="2.12", torchaudio=torchaudio, driver="580.65.06", gpus=["H100"])
    assert [(p.code, p.message) for p in result.problems if not p.code.startswith("fix-")] == [
        ("companion-missing", "torch 2.12 has no torchaudio release that pairs with it; "
                              "torchaudio pairs with torch 1.2.0 .. 2.11.0")]
    fixes = {p.message: p.fix for p in result.problems if p.code == "fix-relax-pin"}
    assert fixes == {
        "relax the torch pin (2.12): torch 2.11.0 fits this host": "allow torch 2.11.0",
        "leave torchaudio out: torch 2.12.0 fits this host without it (no torchaudio release pairs with it)":
            "remove torchaudio from the project",
    }
