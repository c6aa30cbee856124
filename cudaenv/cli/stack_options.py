"""Stack constraints on the command line (``--torch 2.6``, ``--python 3.11``, ``--cuda '>=12.1'``).

A bare version means ``==`` that version; anything else must be a PEP 440 specifier.
"""

from __future__ import annotations

from cudaenv.errors import UserError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

FRAMEWORK_OPTIONS = ("torch", "torchvision", "torchaudio", "tensorflow", "keras", "jax", "mxnet")


ANY = ("", "*", "any")


def parse_constraint(value: str | None, where: str) -> SpecifierSet | None:
    """None when not given; ``any``/``*`` is any version (an empty specifier)."""
    if value is None:
        return None
    if value.strip().lower() in ANY:
        from packaging.specifiers import SpecifierSet

        return SpecifierSet()
    from cudaenv.versions import parse_specifier, specifier_example

    spec = parse_specifier(value)
    if spec is None:
        raise UserError(f"{where} {value!r}: expected {specifier_example(where)}")
    return spec


def stack_options(func):
    import click

    from cudaenv.resolver.model import FLAVORS

    for name in reversed(FRAMEWORK_OPTIONS):
        func = click.option(f"--{name}", f"fw_{name}", metavar="SPEC",
                            help=f"{name} version or specifier ('any' for any version).")(func)
    func = click.option("--os", "os_name", metavar="OS", help="nvidia/cuda image OS, e.g. ubuntu22.04.")(func)
    func = click.option("--flavor", type=click.Choice(FLAVORS), default=None,
                        help="Image flavor: wheels (frameworks bring CUDA), runtime, devel, or auto.")(func)
    func = click.option("--cudnn", metavar="SPEC", help="cuDNN version or specifier, e.g. '>=9'.")(func)
    func = click.option("--cuda", metavar="SPEC", help="CUDA version or specifier, e.g. 12.4 or '>=12.1'.")(func)
    func = click.option("--python", metavar="SPEC", help="Python version or specifier, e.g. 3.11.")(func)
    return func


def constraints_from_options(options: dict) -> Constraints | None:
    """The constraints the options state, or None when no stack option was given at all."""
    from cudaenv.resolver.model import Constraints
    from cudaenv.versions import split_local_build

    variant_cuda = None  # --torch ==2.0.1+cu118: the version, and the CUDA of that build variant
    variants = []  # (framework, "cu118"): that build must exist
    texts = {}
    for name in FRAMEWORK_OPTIONS:
        text = options.get(f"fw_{name}")
        if text is not None:
            text, cuda_of_build = split_local_build(text)
            if cuda_of_build:
                if variant_cuda and variant_cuda != cuda_of_build:
                    raise UserError(f"--{name} {options.get(f'fw_{name}')!r}: another pin names CUDA {variant_cuda}")
                variant_cuda = cuda_of_build
                variants.append((name, "cu" + cuda_of_build.replace(".", "")))
        texts[name] = text
    frameworks = tuple(
        (name, spec) for name in FRAMEWORK_OPTIONS
        if (spec := parse_constraint(texts.get(name), f"--{name}")) is not None
    )
    cuda_text = options.get("cuda")
    if variant_cuda and cuda_text is None:
        cuda_text = variant_cuda
    values = {
        "python": parse_constraint(options.get("python"), "--python"),
        "cuda": parse_constraint(cuda_text, "--cuda"),
        "cudnn": parse_constraint(options.get("cudnn"), "--cudnn"),
    }
    given = frameworks or any(v is not None for v in values.values()) or options.get("flavor") or options.get("os_name")
    if not given:
        return None
    return Constraints(frameworks=frameworks, flavor=options.get("flavor") or "auto", os=options.get("os_name"),
                       variants=tuple(variants), **values)
