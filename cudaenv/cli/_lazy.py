"""A click group that imports each command's module only when that command runs.

``cudaenv resolve`` must start fast, so ``cudaenv --help`` lists every command from a static
table of help lines instead of importing modules that pull in jinja2 or the docker SDK.
"""

from __future__ import annotations

import importlib

import click


class LazyGroup(click.Group):
    def __init__(self, *args, lazy_commands: dict[str, tuple[str, str]] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        # name -> ("module:attribute", short help shown by --help)
        self._lazy = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._lazy))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self._lazy:
            return self._load(name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self._lazy:
                rows.append((name, self._lazy[name][1]))
            else:
                cmd = super().get_command(ctx, name)
                if cmd is not None and not cmd.hidden:
                    rows.append((name, cmd.get_short_help_str(formatter.width)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def _load(self, name: str) -> click.Command:
        target, _help = self._lazy[name]
        module_name, attribute = target.split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):  # a programming error, not user input
            raise TypeError(f"{target} is not a click command")
        return command
