"""One environment holds one copy of each nvidia-* package and one cuDNN: pin_conflicts finds
the pairs of framework builds that cannot share it, pair by pair."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet

from cudaenv.matrix.builds import Build
from cudaenv.resolver.resolve import pin_conflicts


def build(framework: str, *, pins=(), cudnn=None, cudnn_range=None, own=True) -> Build:
    return Build(framework=framework, version="1.0", variant="cu124", cuda=("12.4",), python=frozenset({"3.11"}),
                 sass=(), ptx=(), cudnn=cudnn, cudnn_range=SpecifierSet(cudnn_range) if cudnn_range else None,
                 requirements=(), companions=(), index_url=None, find_links=None, pins=tuple(pins),
                 brings_own_cuda=own)


def test_builds_that_agree_have_no_conflict():
    torch = build("torch", pins=[("nvidia-cudnn-cu12", "==9.1.0.70")])
    jax = build("jax", cudnn_range=">=9.1,<10")
    assert pin_conflicts([torch, jax]) == []


def test_the_same_package_pinned_apart_is_one_conflict_not_two():
    torch = build("torch", pins=[("nvidia-cudnn-cu12", "==9.1.0.70")])
    tf = build("tensorflow", pins=[("nvidia-cudnn-cu12", "==8.9.4.25")])
    assert [(c[0], c[1].framework, c[3].framework) for c in pin_conflicts([torch, tf])] == \
        [("nvidia-cudnn-cu12", "torch", "tensorflow")]


def test_a_bundled_cudnn_outside_anothers_range_conflicts():
    bundles = build("torch", cudnn="8.9.2")  # bundles cuDNN 8.9 without naming the wheel
    jax = build("jax", cudnn_range=">=9.1,<10")
    assert [(c[0], c[2], c[4]) for c in pin_conflicts([bundles, jax])] == [("cuDNN", "==8.9.2", "<10,>=9.1")]  # SpecifierSet spells it sorted


def test_every_pair_is_checked_even_after_an_earlier_pair_conflicted():
    torch = build("torch", pins=[("nvidia-cudnn-cu12", "==9.1.0.70")])
    tf = build("tensorflow", pins=[("nvidia-cudnn-cu12", "==8.9.4.25")])
    jax = build("jax", cudnn_range=">=8.9,<9")
    pairs = [(c[0], c[1].framework, c[3].framework) for c in pin_conflicts([torch, tf, jax])]
    assert pairs == [("nvidia-cudnn-cu12", "torch", "tensorflow"), ("cuDNN", "torch", "jax")]
