"""`cudaenv run --jupyter`: JupyterLab in the project's container, reachable from this machine only.

The server listens on all of the container's interfaces, but Docker publishes its port on
127.0.0.1 alone; the token comes from the environment (JUPYTER_TOKEN), not the command line, and
is printed once, in the URL the user opens.
"""

from __future__ import annotations

import secrets
import socket

CONTAINER_PORT = 8888


def free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def jupyter_launch(command: tuple, env: tuple, ports: tuple) -> tuple[tuple, tuple, tuple, str]:
    """(command, env, ports, URL) for a JupyterLab container; a COMMAND after -- is refused."""
    from cudaenv.errors import UserError

    if command:
        raise UserError("--jupyter runs JupyterLab itself: leave out the command after --")
    token = secrets.token_urlsafe(24)
    host_port = free_loopback_port()
    launch = ("jupyter", "lab", "--ip=0.0.0.0", f"--port={CONTAINER_PORT}", "--no-browser",
              "--ServerApp.root_dir=/workspace")
    from cudaenv.hosts.user import run_user

    if run_user()[0].startswith("0:"):  # you are root, so the container user is too: say so to Jupyter
        launch += ("--allow-root",)
    return (launch, tuple(env) + (f"JUPYTER_TOKEN={token}",),
            tuple(ports) + (f"127.0.0.1:{host_port}:{CONTAINER_PORT}",),
            f"http://127.0.0.1:{host_port}/lab?token={token}")
