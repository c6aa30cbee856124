"""Start-up fast paths, asserted by what gets imported (never by time)."""

from __future__ import annotations

import subprocess
import sys

import cudaenv


def test_version_answers_without_importing_click():
    code = ("import sys\nfrom cudaenv.entry import main\nsys.argv = ['cudaenv', '--version']\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code == 0\n"
            "assert 'click' not in sys.modules, 'click imported for --version'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"cudaenv {cudaenv.__version__}"


def test_the_entry_point_hands_everything_else_to_click():
    proc = subprocess.run([sys.executable, "-m", "cudaenv", "--verbose"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "No such option '--verbose'" in proc.stderr
