"""What a project means by the packages it names: which framework it runs on the GPU, and which
distributions must never share one environment.

Real projects often never name their framework: ``accelerate`` or ``peft`` bring torch, ``tf_keras``
or ``tensorflow-hub`` TensorFlow, ``flax`` or ``optax`` JAX. And some name one on purpose for the
CPU: ``tensorflow-cpu`` beside JAX keeps the GPU's memory for JAX (vision_transformer's
requirements say so in a comment), so it must never become ``tensorflow[and-cuda]``.
"""

from __future__ import annotations

import re

# Libraries that exist to run on one framework and bring it (or, like tensorflow-datasets, are only
# used with it): a project naming one uses that framework. From each package's PyPI metadata
# (Requires-Dist) or its own description, read 2026-11-26; trl brings torch through accelerate.
CARRIERS = {
    "accelerate": "torch", "peft": "torch", "trl": "torch", "pytorch-lightning": "torch", "lightning": "torch",
    "timm": "torch", "sentence-transformers": "torch", "open-clip-torch": "torch", "torchmetrics": "torch",
    "xformers": "torch", "deepspeed": "torch", "bitsandbytes": "torch", "torchsde": "torch", "kornia": "torch",
    # vllm 0.33.0 requires torch==2.13.0 (PyPI JSON, read 2026-11-27); torchao is PyTorch's own
    # quantization library (pytorch/ao) and declares no Requires-Dist on torch
    "vllm": "torch", "torchao": "torch",
    "tf-keras": "tensorflow", "tensorflow-hub": "tensorflow", "tensorflow-datasets": "tensorflow",
    "tfds-nightly": "tensorflow", "tensorflow-addons": "tensorflow", "tensorflow-text": "tensorflow",
    "keras-hub": "tensorflow", "keras-cv": "tensorflow", "keras-nlp": "tensorflow",
    "flax": "jax", "optax": "jax", "chex": "jax", "orbax": "jax", "orbax-checkpoint": "jax", "equinox": "jax",
    "dm-haiku": "jax",
}
# Extras that bring the framework themselves (transformers[torch], keras-hub[jax]).
CARRYING_EXTRAS = {"torch": "torch", "tf": "tensorflow", "tensorflow": "tensorflow", "jax": "jax", "flax": "jax"}
# Names that say "this framework, on the CPU": the project keeps the GPU for another one (or none).
CPU_ONLY = {"tensorflow-cpu": "tensorflow", "tf-nightly-cpu": "tensorflow"}
# PyTorch's CPU-only wheel index: a requirement file that points pip at it means torch on the CPU
# (e.g. beside a GPU JAX), not a CUDA torch (https://pytorch.org/get-started/locally/, "CPU").
TORCH_CPU_INDEX = re.compile(r"^https://download\.pytorch\.org/whl/cpu/?$")
TORCH_FAMILY = ("torch", "torchvision", "torchaudio")


def cpu_frameworks(index_urls) -> frozenset[str]:
    """The frameworks the project's index options ask for on the CPU."""
    return frozenset(TORCH_FAMILY) if any(TORCH_CPU_INDEX.match(url or "") for url in index_urls) else frozenset()


# Distributions that install the same files (the `tensorflow` package directory): two of them in one
# environment overwrite each other, whichever installs last wins.
SAME_FILES = (frozenset({"tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tf-nightly",
                         "tf-nightly-cpu", "tf-nightly-gpu"}),)


def canonical(name: str) -> str:
    """PEP 503 normalized name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def carried_framework(name: str, extras: set[str] | frozenset[str] = frozenset()) -> str | None:
    """The framework a requirement brings without naming it, or None."""
    return CARRIERS.get(canonical(name)) or next((CARRYING_EXTRAS[e] for e in sorted(extras) if e in CARRYING_EXTRAS),
                                                 None)


def clashing_distributions(pinned: list[str] | tuple[str, ...]) -> str | None:
    """Why a set of pins must not be locked: two distributions of one package (``tensorflow`` and
    ``tensorflow-cpu``, one of them often arriving through a dependency such as tensorflow-text)."""
    versions = {}
    for line in pinned:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*([^\s;]+)", line)
        if match:
            versions[canonical(match.group(1))] = match.group(2)
    for family in SAME_FILES:
        both = sorted(name for name in versions if name in family)
        if len(both) > 1:
            listed = " and ".join(f"{name}=={versions[name]}" for name in both)
            return (f"the lock would install {listed}, which install the same files and overwrite each other; "
                    f"require one of them (a dependency may bring the other: `uv pip tree` shows which)")
    return None


# packages that install a framework's GPU build under another name: the project that names one gets it
FRAMEWORK_PACKAGES = {"tensorflow-gpu": "tensorflow"}


def framework_packages(lines) -> tuple[tuple[str, str], ...]:
    """(framework, package) for each framework the project's lines install under another package
    name (``tensorflow-gpu==2.10.0``): the stack installs that package, the same GPU build, rather
    than adding ``tensorflow`` beside it (``Constraints.packages``)."""
    found = {}
    for line in lines:
        requirement = line.requirement
        if requirement is None or line.constraint:
            continue
        name = canonical(requirement.name)
        if name in FRAMEWORK_PACKAGES and line.applies():
            found.setdefault(FRAMEWORK_PACKAGES[name], name)
    return tuple(sorted(found.items()))


def cpu_package_lines(lines, stack_requirements, python: str | None) -> str | None:
    """Why the project cannot be locked as written: it requires plain ``tensorflow`` for a release
    whose PyPI ``tensorflow`` wheel is the CPU build (before 1.15, 1.15.2-1.15.5, 2.0), while the stack installs
    that release's GPU package (``tensorflow-gpu==1.14.0``). Both would install the same files, and
    the project's line asks for the CPU one: the answer names the line and the package to write."""
    gpu = next((r for r in stack_requirements if re.match(r"tensorflow-gpu==", r)), None)
    if gpu is None:
        return None
    version = gpu.split("==", 1)[1]
    for line in lines:
        requirement = line.requirement
        if (requirement is None or line.constraint or canonical(requirement.name) != "tensorflow"
                or not line.applies(python)):
            continue
        extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
        spec = str(requirement.specifier)
        return (f"{line.where}: {line.text!r} is TensorFlow's CPU-only package for tensorflow {version}: PyPI's "
                f"tensorflow wheel of that release has no GPU code (so for every release before 1.15, 1.15.2-1.15.5 and "
                f"2.0.x); its GPU build is the separate tensorflow-gpu package, which this stack installs ({gpu}); "
                f"write 'tensorflow-gpu{extras}{spec}' on that line to run on the GPU")
    return None

