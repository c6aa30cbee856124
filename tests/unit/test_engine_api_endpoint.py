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


def _one_answer_server(path, answer: bytes):
    """A unix socket that reads one request, writes ``answer`` and hangs up (a broken engine)."""
    import socket
    import threading

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)

    def serve():
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(answer)
        server.close()

    threading.Thread(target=serve, daemon=True).start()


def test_an_unreadable_answer_to_a_read_lets_the_sdk_ask_again(tmp_path):
    _one_answer_server(tmp_path / "e.sock", b"garbage")
    with pytest.raises(Unavailable):
        get("/containers/json", {"DOCKER_HOST": f"unix://{tmp_path / 'e.sock'}"})


def test_an_unreadable_answer_to_a_change_is_an_error_never_a_second_try(tmp_path):
    from cudaenv.engine.api import ApiError, request

    _one_answer_server(tmp_path / "e.sock", b"garbage")
    with pytest.raises(ApiError, match="no readable answer from the engine to POST /containers/create"):
        request("POST", "/containers/create?name=x", {"Image": "x"}, environ={"DOCKER_HOST": f"unix://{tmp_path / 'e.sock'}"})


def _info_server(path, answers: list[bytes]):
    """A unix socket that answers each request with the next of ``answers``; the paths it was asked."""
    import socket
    import threading

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)
    asked: list[str] = []

    def serve():
        for answer in answers:
            conn, _ = server.accept()
            with conn:
                asked.append(conn.recv(65536).split(b"\r\n", 1)[0].decode())
                conn.sendall(answer)
        server.close()

    threading.Thread(target=serve, daemon=True).start()
    return asked


def _http(status: str, body: bytes) -> bytes:
    return f"HTTP/1.0 {status}\r\nContent-Type: application/json\r\n\r\n".encode() + body


def test_the_daemon_id_asked_ahead_is_the_one_used_and_asked_once(tmp_path, monkeypatch):
    from cudaenv.engine.docker_engine import DockerEngine

    sock = tmp_path / "engine.sock"
    asked = _info_server(sock, [_http("200 OK", b'{"ID": "ABCD:1234"}'), _http("200 OK", b'{"ID": "OTHER"}')])
    monkeypatch.setenv("DOCKER_HOST", f"unix://{sock}")
    engine = DockerEngine()
    engine.warm_up()
    engine.warm_up()  # a second hint asks nothing more
    assert engine._daemon_id() == "ABCD:1234"
    assert asked == ["GET /info HTTP/1.0"]
    assert engine._daemon_id() == "OTHER"  # the head start is used once; later calls ask as before
    assert asked == ["GET /info HTTP/1.0", "GET /info HTTP/1.0"]


def test_a_failed_head_start_is_asked_again(tmp_path, monkeypatch):
    from cudaenv.engine.docker_engine import DockerEngine

    sock = tmp_path / "engine.sock"
    asked = _info_server(sock, [b"garbage", _http("200 OK", b'{"ID": "ABCD:1234"}')])
    monkeypatch.setenv("DOCKER_HOST", f"unix://{sock}")
    engine = DockerEngine()
    engine.warm_up()
    assert engine._daemon_id() == "ABCD:1234"
    assert len(asked) == 2
