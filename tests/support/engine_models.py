"""Models of what an engine that cannot run here does with an exported command and environment,
each written from the engine's own documents and source, so the tests can ask "what would the
process in the container see" of every export.

* **Kubernetes** ``$(VAR)`` expansion in ``command``, ``args`` and ``env[].value``:
  kubernetes.io "Define Dependent Environment Variables" (``$(VAR_NAME)`` expands to a variable
  defined earlier in ``env``; an undefined reference is left unchanged; ``$$`` is an escaped
  ``$``) and "Define a Command and Arguments for a Container" (``$(VAR)`` in ``command``/``args``
  expands from the container's environment); the code is kubernetes/kubernetes
  ``third_party/forked/golang/expansion/expand.go`` (``Expand``, ``tryReadVariableName``).
* **pyxis/enroot**: NVIDIA/pyxis README, ``--container-env``: "By default, all exported host
  environment variables are set in the container after the entrypoint is run, but their existing
  values in the image take precedence; the variables specified with this flag are preserved from
  the host". srun stops reading its own options at the first word that is not one (the command).
* **Apptainer**: ``APPTAINERENV_NAME`` / ``--env`` values are written into ``export NAME="value"``
  with only ``"`` escaped and evaluated by its embedded shell (apptainer
  internal/pkg/runtime/engine/apptainer/process_linux.go ``injectEnvHandler``,
  internal/pkg/util/shell/escape.go ``EscapeDoubleQuotes``; user docs "Environment and Metadata":
  "you can specify an escaped variable name, e.g. ``\\$PATH`` to evaluate the value of that variable
  in the container"); they override the image's environment ("Environment Variable Precedence").
  ``--env`` itself is a pflag ``StringToString`` (cmd/internal/cli/action_flags.go,
  ``actionEnvFlag``): one ``=`` keeps the text whole (quotes trimmed), several are read as one CSV
  record of ``KEY=VALUE`` fields.
* **Docker's ``--gpus``** (docker/cli opts/gpus.go): the value is one CSV record; a field without
  ``=`` is a count (or ``all``), ``device=`` takes a comma list only from one quoted field.
"""

from __future__ import annotations

import csv
import io


class Unmodelled(Exception):
    """The engine would do something the export did not mean (an expansion, a parse error)."""


# --- Kubernetes -----------------------------------------------------------------------------------


def kubernetes_expand(text: str, mapping: dict[str, str]) -> str:
    """Kubernetes' ``Expand`` with ``MappingFuncFor(mapping)``: an unknown name stays ``$(NAME)``."""
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            rest = text[cursor + 1:]
            if rest[0] == "$":  # escaped operator
                out.append("$")
                advance = 1
            elif rest[0] == "(":
                close = rest.find(")", 1)
                if close == -1:  # incomplete reference: kept as written
                    out.append("$(")
                    advance = 1
                else:
                    name = rest[1:close]
                    out.append(mapping[name] if name in mapping else f"$({name})")
                    advance = close + 1
            else:
                out.append("$" + rest[0])
                advance = 1
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]


def kubernetes_container(container: dict, secrets: dict[str, dict[str, str]]) -> tuple[list[str], dict[str, str]]:
    """(the args, the environment) a container of a pod spec starts with: ``env`` in order, each
    value expanded over the ones before it; a ``secretKeyRef`` read from ``secrets``."""
    env: dict[str, str] = {}
    for entry in container.get("env", []):
        if "valueFrom" in entry:
            ref = entry["valueFrom"]["secretKeyRef"]
            env[entry["name"]] = secrets[ref["name"]][ref["key"]]
        else:
            env[entry["name"]] = kubernetes_expand(entry.get("value", ""), dict(env))
    args = [kubernetes_expand(word, env) for word in container.get("args", [])]
    return args, env


# --- pyxis ----------------------------------------------------------------------------------------


def pyxis_container(srun_argv: list[str], srun_env: dict[str, str],
                    image_env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """(the command, the environment) of the task pyxis starts from ``srun ARGV`` run with
    ``srun_env``: srun's options end at the first word that is not one; with ``--export=ALL`` the
    task gets srun's environment; the image's values win except for the ``--container-env`` names."""
    options, index = [], 0
    while index < len(srun_argv) and srun_argv[index].startswith("-"):
        options.append(srun_argv[index])
        index += 1
    command = srun_argv[index:]
    exports = [o.split("=", 1)[1] for o in options if o.startswith("--export=")]
    if exports and exports[-1] != "ALL":
        raise Unmodelled(f"srun --export={exports[-1]}: only ALL is modelled")
    override = set()
    for option in options:
        if option.startswith("--container-env="):
            override |= set(option.split("=", 1)[1].split(","))
    env = dict(image_env)
    for name, value in srun_env.items():
        if name in override or name not in image_env:
            env[name] = value
    return command, env


# --- Apptainer ------------------------------------------------------------------------------------


def double_quoted(text: str) -> str:
    """What a POSIX shell makes of ``"text"``: a backslash protects ``$ ` " \\`` and a newline;
    an unprotected ``$`` or backquote would expand, which the export must never leave."""
    out, i = [], 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        if char in "$`":
            raise Unmodelled(f"an unescaped {char!r} in {text!r} would be expanded in the container")
        if char == '"':
            raise Unmodelled(f"an unescaped double quote in {text!r} ends the string")
        out.append(char)
        i += 1
    return "".join(out)


def apptainer_value(value: str) -> str:
    """An ``APPTAINERENV_``/``--env`` value as the container sees it: ``"`` escaped, then evaluated."""
    return double_quoted(value.replace('"', '\\"'))


def apptainer_container(argv: list[str], host_env: dict[str, str],
                        image_env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """(the command, the environment) of ``apptainer exec [OPTIONS] IMAGE COMMAND...``."""
    if argv[:1] != ["exec"]:
        raise Unmodelled(f"expected apptainer exec, got {argv[:1]}")
    with_value = {"--bind", "-B", "--pwd", "--env", "--env-file"}
    index, env_flags = 1, []
    while argv[index].startswith("-"):
        if argv[index] in with_value:
            if argv[index] == "--env":
                env_flags.append(argv[index + 1])
            index += 2
        else:
            index += 1
    command = argv[index + 1:]
    env = {n: v for n, v in host_env.items() if not n.startswith(("APPTAINER", "SINGULARITY")) and n not in image_env}
    env.update(image_env)
    for name, value in host_env.items():
        if name.startswith("APPTAINERENV_"):
            env[name.removeprefix("APPTAINERENV_")] = apptainer_value(value)
    for flag in env_flags:
        for name, value in pflag_string_to_string(flag).items():
            env[name] = apptainer_value(value)
    return command, env


def pflag_string_to_string(text: str) -> dict[str, str]:
    """pflag's ``StringToString`` ``Set`` (spf13/pflag string_to_string.go), as ``--env`` reads a value."""
    count = text.count("=")
    if count == 0:
        raise Unmodelled(f"{text!r} must be formatted as key=value")
    fields = [text.strip('"')] if count == 1 else next(csv.reader(io.StringIO(text)))
    out = {}
    for field in fields:
        key, sep, value = field.partition("=")
        if not sep:
            raise Unmodelled(f"{field!r} must be formatted as key=value (from {text!r})")
        out[key] = value
    return out


# --- Docker ---------------------------------------------------------------------------------------


def docker_gpus(value: str) -> tuple[int, tuple[str, ...]]:
    """(count, device ids) that ``docker run --gpus VALUE`` requests (docker/cli opts/gpus.go):
    one CSV record; ``all`` is count -1, a bare number a count, ``device=`` the ids of its field
    (unquoted, ``device=0,1`` is device 0 and a count of 1: what ``docker create`` records here)."""
    count, ids = 0, ()
    for field in next(csv.reader(io.StringIO(value))):
        key, sep, rest = field.partition("=")
        if not sep:
            count = -1 if field == "all" else int(field)
        elif key == "device":
            ids = tuple(rest.split(","))
        elif key not in ("driver", "capabilities", "options", "count"):
            raise Unmodelled(f"unexpected --gpus field {field!r}")
    return count, ids
