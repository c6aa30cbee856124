"""Container IDs from /proc/PID/cgroup, on real outputs (tests/fixtures/cgroup/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.monitor.cgroups import ContainerRef, container_of, parse_cgroup

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "cgroup"


@pytest.mark.parametrize("fixture, container_id, runtime", [
    ("v1-hybrid-docker-cgroupfs.txt", "a26d607d1aff889c0307d662a9eac9677baac58757edbb100a0d61573d3a9b70", "docker"),
    ("v1-hybrid-containerd-ctr.txt", "f5968a3dd5e471c26e0cbee0e0d0be3130a2a70bed053ff341d7c7b599845a3a", "containerd"),
    ("v1-docker-systemd-driver.txt", "b33dda97580e721a69fa81742190341f858ea809ec4a9d74a8cfd411b0ee7c26", "docker"),
    ("v1-hybrid-docker-unified-line-elsewhere.txt", "a2ffe0e97ac22657a2a023ad628e9df837c38a03b1ebc904d3f6d644eb1a1a81", "docker"),
    ("v1-kubernetes-cgroupfs-partial.txt", "0a1b22ec1361a97c3511db37a4bae932d41b22264e5b97611748f8b662312574", "kubernetes"),
    ("v1-kubernetes-crio-partial.txt", "5eed917563583925ffdbd40a64efb2aaffe58638e57add8becaf460fe74f5b1c", "cri-o"),
    ("v2-docker-systemd-assembled.txt", "2a55517bd2c9f85d2e1911cb4cd0840a4aa299513af411fb437c0661dd88d11b", "docker"),
    ("v2-kubernetes-containerd-systemd-assembled.txt", "a09bc17f5aa29b0dbdec9ede5f46cf1396d2405917ab02e6f1eb1019f388396e", "containerd"),
    ("v2-podman-crun.txt", "cf21d19260ace8544fe8b769fc2638bf2c0873dfbfff0b6253f0569b26a1d5eb", "podman"),
    ("v2-nested-crio-in-docker-assembled.txt", "0ba8ac17e4e7a31fb82279503552fe94e64bab4745bf6fd2ff231e7c8ca8bed0", "cri-o"),
])
def test_each_recorded_cgroup_format_names_its_container(fixture, container_id, runtime):
    assert parse_cgroup((FIXTURES / fixture).read_text()) == ContainerRef(id=container_id, runtime=runtime)


def test_the_v2_line_alone_names_the_docker_container():
    """A cgroup v2 host prints only the ``0::`` line; the recorded hybrid one has that exact line."""
    v2_only = [line for line in (FIXTURES / "v1-hybrid-docker-cgroupfs.txt").read_text().splitlines()
               if line.startswith("0::")]
    assert len(v2_only) == 1
    assert parse_cgroup(v2_only[0]).id.startswith("a26d607d1aff")


def test_a_process_outside_any_container_runtime_is_on_the_host():
    # the recorded shell's memory cgroup is named after a 32-hex sandbox id: not a container ID
    assert parse_cgroup((FIXTURES / "v1-hybrid-host-process.txt").read_text()) is None
    assert parse_cgroup("0::/user.slice/user-1000.slice/session-3.scope\n") is None


def test_a_runtime_helper_cgroup_is_not_a_container():
    conmon = "0::/machine.slice/libpod-conmon-" + "a" * 64 + ".scope\n"
    assert parse_cgroup(conmon) is None


def test_a_process_that_has_gone_has_no_container(tmp_path: Path):
    assert container_of(424242, proc=tmp_path) is None


def test_container_of_reads_the_pid_file(tmp_path: Path):
    (tmp_path / "77").mkdir()
    (tmp_path / "77" / "cgroup").write_text((FIXTURES / "v2-podman-crun.txt").read_text())
    assert container_of(77, proc=tmp_path).runtime == "podman"
