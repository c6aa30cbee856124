"""What a chosen stack records, field by field, where a rule decides it: the cuDNN version (the
image's own when the image provides it), the cuDNN constraint, companions and their pins, and the
compute capabilities in version order (issue 25 §3)."""

from __future__ import annotations

from cudaenv.versions import major_minor, numeric_key
from tests.unit.resolver.helpers import matrix, resolve_case


def test_a_stack_on_a_cudnn_image_records_the_images_precise_cudnn():
    """TensorFlow 2.15.0 loads the system cuDNN 8.9: the report shows the version the image carries."""
    stack = resolve_case(tensorflow="==2.15.0", driver="550.54.15").stack
    image = next(i for i in matrix().images_for(stack.cuda) if i.cudnn and i.cuda in stack.base_image)
    assert stack.cudnn_version == image.cudnn[0].version and stack.cudnn == major_minor(image.cudnn[0].version)


def test_a_stack_that_brings_its_own_cudnn_records_the_builds():
    """torch's wheels bundle cuDNN (9.5.1.17 for 2.6.0's CUDA 12.6 build): the image has none to prefer."""
    stack = resolve_case(torch="2.6.0", driver="560.35.03").stack
    assert (stack.cudnn, stack.cudnn_version) == ("9.5", "9.5.1.17")


def test_a_cudnn_constraint_matches_the_major_minor_or_the_full_version():
    """``cudnn = "9.5"`` and ``cudnn = "9.5.1.17"`` both name the cuDNN torch 2.6.0's CUDA 12.6 build bundles;
    9.1 picks its CUDA 12.4 build (cuDNN 9.1.0.70); no torch 2.6.0 build bundles cuDNN 8.9."""
    assert resolve_case(torch="2.6.0", cudnn="9.5", driver="560.35.03").stack.cudnn_version == "9.5.1.17"
    assert resolve_case(torch="2.6.0", cudnn="9.5.1.17", driver="560.35.03").stack.cudnn_version == "9.5.1.17"
    assert resolve_case(torch="2.6.0", cudnn="9.1", driver="560.35.03").stack.cudnn_version == "9.1.0.70"
    assert not resolve_case(torch="2.6.0", cudnn="8.9", driver="560.35.03").ok


def test_a_companion_the_project_names_is_pinned_with_its_release():
    """torchvision 0.21.0 is torch 2.6.0's: installed at that version, and reported."""
    stack = resolve_case(torch="2.6.0", torchvision="any", driver="560.35.03").stack
    assert stack.requirements == ("torch==2.6.0", "torchvision==0.21.0")
    assert stack.frameworks == (("torch", "2.6.0"), ("torchvision", "0.21.0"))


def test_a_companion_known_only_as_a_range_installs_the_projects_own_pin():
    """keras for TensorFlow 2.15 is a range TensorFlow declares: the project's pin is what gets installed."""
    stack = resolve_case(tensorflow="==2.15.1", keras=">=2.15,<2.16", driver="550.54.15").stack
    assert stack.requirements == ("tensorflow[and-cuda]==2.15.1", "keras<2.16,>=2.15")
    assert stack.frameworks == (("tensorflow", "2.15.1"),)


def test_compute_capabilities_are_in_version_order():
    """torch 2.8.0's CUDA 12.8 build carries sm_70 ... sm_120: 10.0 and 12.0 come after 9.0."""
    stack = resolve_case(torch="2.8.0", cuda="12.8", driver="570.124.06").stack
    assert stack.compute_capabilities == tuple(sorted(stack.compute_capabilities, key=numeric_key))
    assert stack.compute_capabilities[-2:] == ("10.0", "12.0")


def test_a_cuda_without_an_nvidia_cuda_image_is_searched_for_wheels_that_bring_their_own():
    """jax's CUDA 13 plugin wheels cover 13.4 and 13.5, for which nvidia/cuda has no image: a wheels stack still runs."""
    result = resolve_case(jax="any")
    images = {major_minor(i.cuda) for i in matrix().images}
    without_image = [xy for xy in result.valid_cuda if xy not in images]
    assert without_image and result.stack.cuda in without_image and result.stack.flavor == "wheels"


def test_a_cudnn_constraint_without_frameworks_picks_the_newest_image_that_offers_it():
    """No framework to bring a cuDNN: the constraint picks the image, newest of the x.y first (11.0.3's cuDNN
    8.0.5.39 over 11.0.2's 8.0.2.39), matching by major.minor or by the full version."""
    assert resolve_case(cuda="==11.0", cudnn="8.0").stack.cudnn_version == "8.0.5.39"
    assert resolve_case(cuda="==12.2", cudnn="8.9").stack.cudnn_version == "8.9.6.50"
    assert resolve_case(cuda="==12.2", cudnn="8.9.6.50").stack.cudnn_version == "8.9.6.50"
    assert not resolve_case(cuda="==12.2", cudnn="9.1").ok


def test_a_full_cudnn_version_without_frameworks_is_the_images_exact_cudnn():
    """``cudnn = "8.9.6.50"`` on CUDA 12.2: the image carrying exactly that build. ``8.0.2.39`` was
    only in the '11.0' tags before NVIDIA rebuilt them in place with 11.0.3 and 8.0.5.39 (that row
    is superseded): no image carries it, and the fix offered is its series, 8.0, which one does."""
    stack = resolve_case(cuda="==12.2", cudnn="8.9.6.50", driver="535.104.05").stack
    assert stack.cudnn_version == "8.9.6.50"
    result = resolve_case(cudnn="8.0.2.39", driver="535.104.05", gpus=["A100"])
    assert not result.ok
    fixes = [(p.message, p.fix) for p in result.problems if p.code == "fix-cudnn"]
    assert fixes[0] == ("relax the cudnn constraint (8.0.2.39) to its series 8.0: cudnn 8.0.5.39 fits", "allow cudnn 8.0")
    assert resolve_case(cudnn="8.0", driver="535.104.05", gpus=["A100"]).stack.cudnn_version == "8.0.5.39"


def test_a_stack_records_the_nvidia_pins_of_its_builds():
    """tensorflow[and-cuda] 2.15.1 pins its nvidia-* wheels: the stack carries them, sorted, for the lock check."""
    from cudaenv.matrix.builds import framework_builds

    stack = resolve_case(tensorflow="==2.15.1", driver="550.54.15").stack
    build = next(b for b in framework_builds(matrix())["tensorflow"] if b.version == "2.15.1" and stack.cuda in b.cuda)
    assert build.pins and stack.nvidia_requires == tuple(sorted(build.pins))


def test_a_stack_mixing_a_bundled_and_a_system_cudnn_reports_the_bundled_one():
    """torch 1.12.1 (cu116) bundles its cuDNN; MXNet loads the image's. The stack's cuDNN is torch's, not the
    image's newer one: the image's version is preferred only when the stack loads the system cuDNN alone."""
    from cudaenv.matrix.builds import framework_builds

    stack = resolve_case(mxnet="any", torch="1.12.1", driver="535.104.05").stack
    torch = next(b for b in framework_builds(matrix())["torch"] if b.version == "1.12.1" and stack.cuda in b.cuda)
    image = next(i for i in matrix().images_for(stack.cuda) if i.cuda in stack.base_image)
    assert torch.brings_own_cuda and stack.cudnn_version == torch.cudnn
    assert torch.cudnn not in {c.version for c in image.cudnn}


import pytest  # noqa: E402

from cudaenv.versions import contains_at_clause_precision, parse_specifier  # noqa: E402


@pytest.mark.parametrize("spec, version, expected", [
    ("9.5", "9.5.1.17", True), ("==9.5", "9.5.1.17", True), ("9", "9.5.1.17", True), ("==9", "9.5.1.17", True),
    ("9.5.1.17", "9.5.1.17", True), ("8.9.6", "8.9.6.50", True), ("8.9.6", "8.9.7.29", False),
    ("!=8.9.6.50", "8.9.6.50", False), ("!=8.9.6.50", "8.9.0.131", True), ("<8.9.6.50", "8.9.6.50", False),
    ("<8.9.6.50", "8.9.0.131", True), ("<=8.9.0.131", "8.9.6.50", False), (">=8.9", "8.9.0.131", True),
    (">8.9", "8.9.6.50", False), (">8.9", "9.1.0.70", True), (">=8.9,<9", "9.1.0.70", False),
    (">=8.9,<9", "8.9.7.29", True), ("==8.*", "8.9.7.29", True), ("==8.*", "9.1.0.70", False),
], ids=lambda v: str(v).replace("=", "eq").replace("<", "lt").replace(">", "gt").replace("!", "not").replace("*", "any")
   .replace(",", "_"))
def test_each_cudnn_clause_compares_at_its_own_precision(spec, version, expected):
    """``9.5`` is a series, ``8.9.6`` a release of it, ``8.9.6.50`` one build: ``!=8.9.6.50`` or
    ``<8.9.6.50`` must not match 8.9.6.50 through its major.minor, nor ``8.9.6`` miss 8.9.6.50."""
    assert contains_at_clause_precision(parse_specifier(spec), version) is expected


def test_a_cudnn_below_one_build_without_frameworks_takes_an_image_below_it():
    """Before, 8.9.6.50's "8.9" satisfied ``<8.9.6.50``, and the image carrying 8.9.6.50 was chosen."""
    stack = resolve_case(cudnn="<8.9.6.50", driver="535.104.05", gpus=["A100"]).stack
    assert numeric_key(stack.cudnn_version) < numeric_key("8.9.6.50")
    assert resolve_case(cudnn="!=8.9.6.50", driver="535.104.05", gpus=["A100"]).stack.cudnn_version != "8.9.6.50"
    assert resolve_case(cudnn="8.9.6", cuda="==12.2", driver="535.104.05").stack.cudnn_version == "8.9.6.50"


def test_a_frameworks_system_cudnn_is_a_floor_within_its_major():
    """TensorFlow 2.12 was built with cuDNN 8.6: the CUDA 11.8 image's later cuDNN 8.9 serves it (one
    ABI per major), where only the exact cuDNN a project without a framework names must match."""
    from cudaenv.matrix.builds import framework_builds

    stack = resolve_case(tensorflow="==2.12.0", driver="535.104.05").stack
    build = next(b for b in framework_builds(matrix())["tensorflow"] if b.version == "2.12.0")
    need = build.cudnn or build.cudnn_range
    assert str(need).lstrip("=><~!").startswith("8.6")
    assert stack.cudnn_version.startswith("8.") and numeric_key(stack.cudnn_version) > numeric_key("8.6.99")


def test_a_cudnn_series_without_frameworks_takes_an_older_image_of_the_cuda_that_carries_it():
    """CUDA 12.6's images moved from cuDNN 9.3 (12.6.0, 12.6.1) to 9.5 (12.6.2, 12.6.3): ``cudnn = "9.3"``
    gets 12.6.1 with 9.3.0.75, not the newest 12.6.3 whose 9.5.1.17 is only 'at least 9.3'."""
    stack = resolve_case(cuda="==12.6", cudnn="9.3", driver="560.35.03").stack
    assert stack.cudnn_version == "9.3.0.75"
    assert stack.base_image.startswith("nvidia/cuda:12.6.1-cudnn-runtime-")
    # a whole major matches both: the newest image's wins
    newest = resolve_case(cuda="==12.6", cudnn="9", driver="560.35.03").stack
    assert (newest.cudnn_version, newest.base_image.split("-")[0]) == ("9.5.1.17", "nvidia/cuda:12.6.3")


def test_only_one_exact_build_is_widened_to_its_series():
    """``<8.0.2.39`` is a bound, not a build that went away: no series is offered for it."""
    result = resolve_case(cuda="==11.0", cudnn="<8.0.2.39", driver="535.104.05")
    assert not result.ok
    assert not [p for p in result.problems if "to its series" in p.message]


def test_a_series_is_offered_only_for_one_exact_build_alone():
    """``==8.0.2.39,>=8.0`` says more than one build, and ``==8.0.2.*`` is already a range: neither
    is widened (and a wildcard is never read as a version)."""
    for cudnn in ("==8.0.2.39,>=8.0", "==8.0.2.*"):
        result = resolve_case(cuda="==11.0", cudnn=cudnn, driver="535.104.05")
        assert not result.ok
        assert not [p for p in result.problems if "to its series" in p.message]
