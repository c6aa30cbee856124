"""Debian package names (Debian policy 5.6.1), shared by what reaches an image's ``apt-get install``:
the project's ``[build] system_packages`` and the Python packages of an Ubuntu base's archive."""

from __future__ import annotations

import re

# lower case letters, digits, + - . ; at least two characters; starts alphanumeric
DEBIAN_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")


def is_debian_package(name: object) -> bool:
    return isinstance(name, str) and DEBIAN_PACKAGE.fullmatch(name) is not None
