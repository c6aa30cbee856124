"""cudaenv.lock as tests read it: through cudaenv's own reader (``read_lock_file``), so every lock a
test looks into is one the commands that consume it can read, whatever its format's layout.

``lock_view`` gives one target's part in the shape of a one-target lock (format 1's tables:
``stack``, ``requirements``, ``target``), which is what most tests ask about."""

from __future__ import annotations

from pathlib import Path


def lock_view(path: Path, target: str | None = None) -> dict:
    """One target's stack, requirements and host as tables (``target``: None for the only one)."""
    from cudaenv.project.lock import read_lock_file

    whole = read_lock_file(Path(path))
    assert whole is not None, f"no lock at {path}"
    if target is None:
        assert len(whole.targets) == 1, f"{path} holds targets {whole.names}: name one"
        view = whole.targets[0]
    else:
        view = whole.target(target)
        assert view is not None, f"{path} has no target {target!r} (targets: {whole.names})"
    entry = view.entry()
    return {"format": whole.format, "cudaenv": view.cudaenv, "matrix_revision": view.matrix_revision,
            "inputs_hash": view.inputs_hash, "inputs": dict(view.inputs), "target": dict(view.target),
            "stack": entry["stack"], "requirements": entry["requirements"], "name": view.name,
            "stack_id": view.entry_id()}


class OneTarget:
    """A parsed (tomlkit) lock of one target, edited as if it had format 1's tables: ``stack`` and
    ``requirements`` are its [stacks.ID] entry's, ``target`` its [targets.NAME] table; every other key
    is the file's own. Lets a test damage one field wherever the format keeps it."""

    def __init__(self, doc) -> None:
        self.doc = doc
        (self.name,) = list(doc["targets"])
        self.key = doc["targets"][self.name]["stack"]

    def _where(self, key: str):
        if key in ("stack", "requirements"):
            return self.doc["stacks"][self.key]
        if key == "target":
            return self.doc["targets"]
        return self.doc

    def _key(self, key: str) -> str:
        return self.name if key == "target" else key

    def __getitem__(self, key: str):
        return self._where(key)[self._key(key)]

    def __setitem__(self, key: str, value) -> None:
        self._where(key)[self._key(key)] = value

    def __delitem__(self, key: str) -> None:
        del self._where(key)[self._key(key)]

    def __contains__(self, key: str) -> bool:
        return self._key(key) in self._where(key)


def entry_prefix(text: str) -> str:
    """How a lock's error messages name its one entry's tables: "stacks.ID."."""
    import tomllib

    data = tomllib.loads(text)
    (name,) = list(data["targets"])
    return f"stacks.{data['targets'][name]['stack']}."
