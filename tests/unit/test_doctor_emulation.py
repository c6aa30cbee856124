"""`cudaenv doctor` says whether this machine can build aarch64 images (Grace/Arm targets): natively
on an aarch64 machine, else through qemu-user-static registered with binfmt_misc, and how to set it
up when it cannot. Never a failure: only Arm targets need it. The entries are the kernel's format
(/proc/sys/fs/binfmt_misc/qemu-aarch64 as Debian's binfmt-support writes it)."""

from __future__ import annotations

import pytest

from cudaenv.run.doctor import emulation_check

ENTRY = ("{state}\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: {flags}\noffset 0\n"
         "magic 7f454c460201010000000000000000000200b700\nmask ffffffffffffff00fffffffffffffffffeffffff\n")


@pytest.mark.parametrize(("state", "flags", "says"), [
    ("enabled", "PF", "registered with binfmt_misc (F flag)"),
    ("enabled", "P", "without the F flag"),
    ("disabled", "PF", "sudo update-binfmts --enable qemu-aarch64"),
], ids=["ready", "no-f-flag", "disabled"])
def test_a_registered_interpreter_is_read_as_the_kernel_lists_it(tmp_path, state, flags, says):
    (tmp_path / "qemu-aarch64").write_text(ENTRY.format(state=state, flags=flags))
    check = emulation_check("x86_64", tmp_path)
    assert check.ok and says in check.detail


def test_without_emulation_it_says_how_to_set_it_up(tmp_path):
    check = emulation_check("x86_64", tmp_path)
    assert check.ok and "cannot be built here" in check.detail and "qemu-user-static binfmt-support" in check.detail


def test_an_aarch64_machine_needs_none(tmp_path):
    assert "native" in emulation_check("aarch64", tmp_path).detail
