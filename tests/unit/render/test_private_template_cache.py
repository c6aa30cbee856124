"""The compiled-template cache's rules, checked in-process (test_template_bytecode_cache.py checks them
through `cudaenv dockerfile` in a subprocess, where a mutation run cannot see the code it changed):
where compiled code is kept, that a private entry is what renders, and that CUDAENV_NO_CACHE turns it off."""

from __future__ import annotations

import os
import stat

import jinja2
import jinja2.bccache
import pytest

from cudaenv.core.resources import templates_dir

from tests.unit.render.test_template_bytecode_cache import forged_bytecode


# --- the same rules in-process (the CLI runs above cover the whole path; these reach the cache's code) --

def private_cache(monkeypatch, root):
    """cudaenv's bytecode cache under ``root``, the way a render without CUDAENV_NO_CACHE makes it."""
    from cudaenv.images import render

    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(root))
    monkeypatch.delenv("CUDAENV_NO_CACHE", raising=False)
    return render._bytecode_cache()


def environment_with(bytecode_cache) -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())), bytecode_cache=bytecode_cache,
                              keep_trailing_newline=True)


def cache_key(name: str) -> str:
    return jinja2.bccache.BytecodeCache().get_cache_key(name, str(templates_dir() / name))


@pytest.mark.parametrize("value", ["1", "true", "yes"])
def test_cudaenv_no_cache_turns_the_template_cache_off(monkeypatch, tmp_path, value):
    """CUDAENV_NO_CACHE=1 means nothing compiled is read or written (the mutation runs rely on it)."""
    from cudaenv.images import render

    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CUDAENV_NO_CACHE", value)
    assert render._bytecode_cache() is None


def test_a_compiled_template_is_kept_as_its_key_in_the_templates_directory_of_the_cache(monkeypatch, tmp_path):
    """Compiled code goes to <cache>/templates/<jinja's key>.jinja, private, and holds loadable code."""
    environment = environment_with(private_cache(monkeypatch, tmp_path))
    environment.get_template("Dockerfile.j2")
    directory = tmp_path / "templates"
    kept = directory / f"{cache_key('Dockerfile.j2')}.jinja"
    assert kept in set(directory.iterdir())
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700 and stat.S_IMODE(os.stat(kept).st_mode) == 0o600
    source, _, _ = environment.loader.get_source(environment, "Dockerfile.j2")
    bucket = jinja2.bccache.Bucket(environment, cache_key("Dockerfile.j2"),
                                   jinja2.bccache.BytecodeCache().get_source_checksum(source))
    with open(kept, "rb") as handle:
        bucket.load_bytecode(handle)
    assert bucket.code is not None  # jinja's magic and the source checksum matched: a usable cache entry


def test_compiled_code_in_the_private_cache_is_what_renders(monkeypatch, tmp_path):
    """A private cache entry is loaded instead of compiling (the forged entry shows it was used)."""
    bytecode_cache = private_cache(monkeypatch, tmp_path)
    directory = tmp_path / "templates"
    directory.mkdir(mode=0o700)
    forged_bytecode(directory, "Dockerfile.j2", "FROM CACHE\n")
    assert environment_with(bytecode_cache).get_template("Dockerfile.j2").render() == "FROM CACHE\n"


def test_an_empty_cache_compiles_the_template_itself(monkeypatch, tmp_path):
    """No entry yet: the template is compiled from its source (and rendering does not fail)."""
    environment = environment_with(private_cache(monkeypatch, tmp_path))
    assert environment.get_template("compat-entrypoint.sh").render() == (templates_dir() / "compat-entrypoint.sh").read_text()


def test_render_dockerfile_compiles_through_the_private_cache(monkeypatch, tmp_path):
    """The renderer's own environment uses the cache: a render leaves the compiled Dockerfile.j2."""
    from cudaenv.images import render
    from cudaenv.resolver.resolve import resolve
    from tests.unit.resolver.helpers import constraints, host, matrix

    stack = resolve(matrix(), constraints(torch="2.6"), host("550.54.15", ["A100"])).stack
    context = render.build_context(stack, render.BuildSettings(project="demo"))
    private_cache(monkeypatch, tmp_path)
    monkeypatch.setattr(render, "_ENVIRONMENT", [])  # a fresh process's renderer
    render.render_dockerfile(context)
    assert (tmp_path / "templates" / f"{cache_key('Dockerfile.j2')}.jinja").is_file()
