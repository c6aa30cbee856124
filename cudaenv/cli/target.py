"""The target-host options of the command line; the logic lives in ``cudaenv.hosts.target``."""

from __future__ import annotations

from cudaenv.cli.params import not_blank
from cudaenv.hosts.target import Target, resolve_target  # noqa: F401 - re-exported for commands


def target_options(*, fleet: bool = False):
    """Decorator adding the target-host options (``fleet``: several --driver values allowed)."""

    def decorate(func):
        import click

        func = click.option("--arch", "arch", metavar="ARCH", callback=not_blank,
                            help="The target's CPU architecture: x86_64 or aarch64 (arm64). Default: what a "
                                 "Grace GPU implies (GH200, GB200, GB10), else x86_64; detected: this machine's.")(func)
        func = click.option("--compute-capability", "compute_capabilities", multiple=True, metavar="X.Y",
                            help="A target GPU by compute capability (repeatable), e.g. 8.0.")(func)
        func = click.option("--gpu", "gpus", multiple=True, metavar="NAME", callback=not_blank,
                            help="A target GPU by name (repeatable): A100, H100, T4, 'RTX 3090', 'NVIDIA A100-SXM4-80GB'.")(func)
        func = click.option("--driver", "drivers" if fleet else "driver", multiple=fleet, metavar="VERSION",
                            callback=not_blank,
                            help="Target NVIDIA driver version, e.g. 535.104.05"
                                 + (" (repeat to check a fleet)." if fleet else "."))(func)
        return func

    return decorate
