#!/usr/bin/env bash
# Install cudaenv from this checkout into its own virtualenv, on a fresh Debian 12 / Ubuntu 24.04
# as they come: no pip, no venv module (python3-venv), PEP 668 in force. Root or not, no apt needed.
#
#   bash scripts/install.sh            # then: ~/.local/bin/cudaenv --help
#
# Where: $CUDAENV_HOME (default ~/.local/share/cudaenv) holds the virtualenv; the `cudaenv` command
# is linked into ~/.local/bin (and, as root, /usr/local/bin). Reaches only PyPI. Behind a
# TLS-intercepting proxy, point PIP_CERT / SSL_CERT_FILE at your CA bundle as usual.
# The usual alternatives work too: `pipx install .` or `uv tool install .`.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HOME_DIR=${CUDAENV_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/cudaenv}
VENV=$HOME_DIR/venv
BIN_DIR=$HOME/.local/bin

say() { printf 'install.sh: %s\n' "$*" >&2; }
die() { printf 'install.sh: error: %s\n' "$*" >&2; exit 1; }

PYTHON=$(command -v python3 || true)
[ -n "$PYTHON" ] || die "python3 is missing: install it (apt-get install python3) and run this again"
"$PYTHON" - <<'PY' || die "cudaenv needs Python >= 3.10"
import sys
sys.exit(0 if sys.version_info >= (3, 10) else 1)
PY

make_venv() {
    mkdir -p "$HOME_DIR"
    if "$PYTHON" -m venv --clear "$VENV" >/dev/null 2>&1; then
        return
    fi
    # Debian/Ubuntu ship ensurepip separately (python3-venv); a venv without pip still works, and
    # pip itself comes from PyPI as a wheel that can run its own installation.
    say "no ensurepip here (python3-venv is not installed): bootstrapping pip from PyPI"
    "$PYTHON" -m venv --clear --without-pip "$VENV" || die "python3 -m venv failed even without pip"
    "$VENV/bin/python" - <<'PY' || die "could not bootstrap pip from PyPI"
import json, os, ssl, subprocess, sys, tempfile, urllib.request

cafile = os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
context = ssl.create_default_context(cafile=cafile) if cafile else ssl.create_default_context()
index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
base = index[: -len("/simple")] if index.endswith("/simple") else "https://pypi.org"
import urllib.parse
api = f"{base}/pypi/pip/json"
with urllib.request.urlopen(api, timeout=60, context=context) as response:
    release = json.load(response)
wheel = next(f for f in release["urls"] if f["packagetype"] == "bdist_wheel")
wheel["url"] = urllib.parse.urljoin(api, wheel["url"])  # mirrors may answer with relative links
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, wheel["filename"])
    with urllib.request.urlopen(wheel["url"], timeout=120, context=context) as response, open(path, "wb") as out:
        out.write(response.read())
    import hashlib
    if hashlib.sha256(open(path, "rb").read()).hexdigest() != wheel["digests"]["sha256"]:
        sys.exit("the pip wheel's sha256 does not match PyPI's")
    subprocess.run([sys.executable, os.path.join(path, "pip"), "install", "--quiet", "--no-index", path], check=True)
PY
}

say "creating the virtualenv $VENV"
make_venv
say "installing cudaenv from $ROOT"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$ROOT" \
    || die "pip could not install cudaenv (see above)"

mkdir -p "$BIN_DIR"
ln -sf "$VENV/bin/cudaenv" "$BIN_DIR/cudaenv"
if [ "$(id -u)" = 0 ] && [ -d /usr/local/bin ]; then
    ln -sf "$VENV/bin/cudaenv" /usr/local/bin/cudaenv
fi
say "installed: $BIN_DIR/cudaenv ($("$VENV/bin/cudaenv" --version))"
case ":$PATH:" in
    *":$BIN_DIR:"*) ;;
    *) say "add $BIN_DIR to your PATH to type just 'cudaenv'" ;;
esac
