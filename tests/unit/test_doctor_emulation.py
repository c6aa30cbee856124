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


# Each answer in full (name, ok, detail): a check's words are what a user reads, and a changed word
# or flag rule must fail here (mutation testing, bench/mutation_score.py hosts).
_SETUP = "sudo apt-get install qemu-user-static binfmt-support && sudo update-binfmts --enable qemu-aarch64"


@pytest.mark.parametrize(("machine", "entry", "detail"), [
    ("aarch64", None, "native: this machine builds and runs them without emulation"),
    ("x86_64", None, "no emulation registered: aarch64 images (Grace/Arm targets) cannot be built here; to build "
                     f"them: {_SETUP} (binfmt_misc mounted at {{binfmt}})"),
    ("x86_64", ENTRY.format(state="disabled", flags="PF"),
     "qemu-aarch64 is registered but disabled: `sudo update-binfmts --enable qemu-aarch64` to build aarch64 images "
     "here"),
    ("x86_64", "", "qemu-aarch64 is registered but disabled: `sudo update-binfmts --enable qemu-aarch64` to build "
                   "aarch64 images here"),
    ("x86_64", "  enabled  \nflags:   OCF  \n", "qemu-aarch64 registered with binfmt_misc (F flag): aarch64 images "
                                                 "build and run here, emulated (slower than native)"),
    ("x86_64", "enabled\ninterpreter /usr/bin/qemu-aarch64-static\n",
     "qemu-aarch64 is registered without the F flag: builds inside containers cannot find the interpreter; Debian's "
     "qemu-user-static registers it with F"),
    ("x86_64", "enabled\nflags: P\nmagic F\n",
     "qemu-aarch64 is registered without the F flag: builds inside containers cannot find the interpreter; Debian's "
     "qemu-user-static registers it with F"),
    ("x86_64", "enabled\nflags: F:P\n", "qemu-aarch64 registered with binfmt_misc (F flag): aarch64 images "
                                        "build and run here, emulated (slower than native)"),
], ids=["native", "none", "disabled", "empty-entry", "padded", "no-flags-line", "f-outside-flags", "colon-in-flags"])
def test_each_answer_in_full(tmp_path, machine, entry, detail):
    if entry is not None:
        (tmp_path / "qemu-aarch64").write_text(entry)
    check = emulation_check(machine, tmp_path)
    assert (check.name, check.ok, check.detail, check.fix) == ("aarch64 images", True,
                                                               detail.format(binfmt=tmp_path), None)


def test_without_a_machine_named_it_asks_this_one(monkeypatch, tmp_path):
    import cudaenv.hosts.target

    monkeypatch.setattr(cudaenv.hosts.target, "machine_arch", lambda: "aarch64")
    assert emulation_check(binfmt=tmp_path).detail.startswith("native:")
    monkeypatch.setattr(cudaenv.hosts.target, "machine_arch", lambda: "x86_64")
    assert emulation_check(binfmt=tmp_path).detail.startswith("no emulation registered:")
