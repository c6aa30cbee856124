"""A project directory: its configuration, what `init` detects in it, and its lock file.

``ConfigError``, ``Project`` and ``load_project`` load ``config`` (and a TOML parser) on first use,
so asking ``cudaenv.project.locate`` whether a directory is a project stays cheap.
"""

__all__ = ["ConfigError", "Project", "load_project"]


def __getattr__(name: str):
    if name in __all__:
        from cudaenv.project import config

        return getattr(config, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
