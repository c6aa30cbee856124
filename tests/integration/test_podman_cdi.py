"""GPUs through CDI on a real Podman, rootful and rootless: a CDI spec written by the test (a fake
device node and an environment entry per device, as nvidia-ctk writes them for real GPUs) and
``--gpus``-style requests, which Podman must turn into exactly those devices inside the container."""

from __future__ import annotations

import pytest

from cudaenv.engine import ContainerSpec, GpuRequest
from cudaenv.hosts.cdi import CdiError
from tests.support.podman_env import fake_cdi_gpus

pytestmark = pytest.mark.podman


@pytest.fixture
def fake_gpus():
    with fake_cdi_gpus() as names:
        yield names


@pytest.fixture(params=[pytest.param("podman"), pytest.param("podman-rootless")])
def podman(request):
    return request.getfixturevalue("podman_standin")(request.param)


SHOW = ("sh", "-c", "env | grep ^CUDAENV_FAKE | sort; ls /dev | grep ^cudaenv-test-gpu | sort")


def test_one_gpu_by_index_is_that_devices_node_and_environment(podman, fake_gpus):
    engine, standin = podman
    result = engine.run(ContainerSpec(image=standin, command=SHOW, gpus=GpuRequest(device_ids=("1",))))
    assert result.exit_code == 0, result.output
    assert result.output.split() == ["CUDAENV_FAKE_GPU_1=present", fake_gpus[1]]


def test_all_gpus_is_the_specs_all_device(podman, fake_gpus):
    engine, standin = podman
    result = engine.run(ContainerSpec(image=standin, command=SHOW, gpus=GpuRequest(count=-1)))
    assert result.output.split() == ["CUDAENV_FAKE_GPU_ALL=present", *fake_gpus]


def test_a_count_is_the_first_gpus_by_index(podman, fake_gpus):
    engine, standin = podman
    result = engine.run(ContainerSpec(image=standin, command=SHOW, gpus=GpuRequest(count=2)))
    assert result.output.split() == ["CUDAENV_FAKE_GPU_0=present", "CUDAENV_FAKE_GPU_1=present", *fake_gpus]


def test_no_gpu_request_is_no_device(podman, fake_gpus):
    engine, standin = podman
    result = engine.run(ContainerSpec(image=standin, command=SHOW))
    assert result.output.split() == []


def test_a_gpu_the_spec_lacks_is_refused_before_any_container(podman, fake_gpus):
    engine, standin = podman
    with pytest.raises(CdiError, match=r"'5' is not a nvidia.com/gpu device .*it offers: 0, 1, all"):
        engine.run(ContainerSpec(image=standin, command=SHOW, gpus=GpuRequest(device_ids=("5",))))
