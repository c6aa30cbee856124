"""Which engine endpoint the socket reader uses: DOCKER_HOST as the docker SDK reads it, and
nothing where only the SDK can reach the engine (TLS, ssh)."""

import pytest

from cudaenv.engine.api import DEFAULT_SOCKET, Unavailable, endpoint, get, quote


@pytest.mark.parametrize("environ,expected", [
    ({}, ("unix", DEFAULT_SOCKET)),
    ({"DOCKER_HOST": ""}, ("unix", DEFAULT_SOCKET)),
    ({"DOCKER_HOST": "unix:///run/user/1000/docker.sock"}, ("unix", "/run/user/1000/docker.sock")),  # rootless
    ({"DOCKER_HOST": "tcp://127.0.0.1:2375"}, ("tcp", ("127.0.0.1", 2375))),
    ({"DOCKER_HOST": "tcp://docker.internal:2375/"}, ("tcp", ("docker.internal", 2375))),
])
def test_docker_host_names_the_socket(environ, expected):
    assert endpoint(environ) == expected


@pytest.mark.parametrize("environ", [
    {"DOCKER_HOST": "ssh://me@build-host"},
    {"DOCKER_HOST": "npipe:////./pipe/docker_engine"},
    {"DOCKER_HOST": "tcp://127.0.0.1:2376", "DOCKER_TLS_VERIFY": "1"},
    {"DOCKER_CERT_PATH": "/home/me/.docker"},
    {"DOCKER_HOST": "tcp://127.0.0.1"},  # no port: the SDK's defaults apply
    {"DOCKER_HOST": "tcp://[::1]:2375"},
])
def test_what_only_the_sdk_can_reach_is_left_to_it(environ):
    assert endpoint(environ) is None
    with pytest.raises(Unavailable):
        get("/_ping", environ)


def test_a_socket_nobody_listens_on_is_unavailable_not_an_error(tmp_path):
    with pytest.raises(Unavailable):
        get("/_ping", {"DOCKER_HOST": f"unix://{tmp_path / 'nothing.sock'}"})


def test_quote_encodes_like_urllib_with_nothing_safe():
    from urllib.parse import quote as urllib_quote

    for text in ('{"label": ["io.cudaenv.managed=true"]}', "registry:5000/a/b:tag", "ü ?&#%", "cudaenv/x:0f"):
        assert quote(text) == urllib_quote(text, safe="")
