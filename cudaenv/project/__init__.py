"""A project directory: its configuration, what `init` detects in it, and its lock file."""

from cudaenv.project.config import ConfigError, Project, load_project

__all__ = ["ConfigError", "Project", "load_project"]
