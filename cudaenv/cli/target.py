"""The target-host options of the command line; the logic lives in ``cudaenv.hosts.target``."""

from __future__ import annotations

from cudaenv.hosts.target import Target, resolve_target  # noqa: F401 - re-exported for commands


def _not_blank(ctx, param, value):
    import click

    values = value if isinstance(value, tuple) else (value,)
    if any(v is not None and not v.strip() for v in values):
        raise click.BadParameter("must not be empty", ctx=ctx, param=param)
    return value


def target_options(*, fleet: bool = False):
    """Decorator adding the target-host options (``fleet``: several --driver values allowed)."""

    def decorate(func):
        import click

        func = click.option("--arch", "arch", metavar="ARCH", callback=_not_blank,
                            help="The target's CPU architecture: x86_64 or aarch64 (arm64). Default: what a "
                                 "Grace GPU implies (GH200, GB200, GB10), else x86_64; detected: this machine's.")(func)
        func = click.option("--compute-capability", "compute_capabilities", multiple=True, metavar="X.Y",
                            help="A target GPU by compute capability (repeatable), e.g. 8.0.")(func)
        func = click.option("--gpu", "gpus", multiple=True, metavar="NAME", callback=_not_blank,
                            help="A target GPU by name (repeatable): A100, H100, T4, 'RTX 3090', 'NVIDIA A100-SXM4-80GB'.")(func)
        func = click.option("--driver", "drivers" if fleet else "driver", multiple=fleet, metavar="VERSION",
                            callback=_not_blank,
                            help="Target NVIDIA driver version, e.g. 535.104.05"
                                 + (" (repeat to check a fleet)." if fleet else "."))(func)
        return func

    return decorate


def target_name_option(*, what: str = "this command", multiple: bool = False):
    """``--target NAME``: which of the project's named targets ([targets.NAME]) ``what`` serves.
    One spelling for every command, so the option reads the same in build, run, check and exports;
    ``multiple``: repeatable (``target_names``, a tuple), for a command that serves several at once."""
    import click

    if multiple:
        return click.option("--target", "target_names", metavar="NAME", multiple=True, callback=_not_blank,
                            help=f"The project's target ([targets.NAME]) {what} serves (repeatable: one each). "
                                 "Needed when the project names several targets.")
    return click.option("--target", "target_name", metavar="NAME", callback=_not_blank,
                        help=f"The project's target ([targets.NAME]) {what} serves. Needed when the project "
                             "names several targets and none is picked from this host.")
