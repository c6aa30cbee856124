"""A failed BuildKit build is reported by its failing step and that step's last lines."""

from __future__ import annotations

from cudaenv.engine.builders import failing_step_from_buildkit_log

# Plain-progress output of DOCKER_BUILDKIT=1 docker build (20.10) for a RUN that exits 3.
LOG = """\
#1 [internal] load build definition from Dockerfile
#1 transferring dockerfile: 120B done
#1 DONE 0.0s
#4 [1/3] FROM docker.io/library/debian:bookworm
#4 DONE 0.0s
#5 [2/3] RUN echo preparing
#5 0.301 preparing
#5 DONE 0.4s
#6 [3/3] RUN echo about to fail && exit 3
#6 0.287 about to fail
#6 ERROR: executor failed running [/bin/sh -c echo about to fail && exit 3]: exit code: 3
------
 > [3/3] RUN echo about to fail && exit 3:
------
executor failed running [/bin/sh -c echo about to fail && exit 3]: exit code: 3
""".splitlines()


def test_failing_step_header_is_the_step_that_errored():
    step, _tail = failing_step_from_buildkit_log(LOG)
    assert step == "[3/3] RUN echo about to fail && exit 3"


def test_tail_holds_only_the_failing_steps_output():
    _step, tail = failing_step_from_buildkit_log(LOG)
    assert "about to fail" in tail
    assert "preparing" not in tail


def test_successful_log_has_no_failing_step():
    assert failing_step_from_buildkit_log(LOG[:8]) == (None, "")
