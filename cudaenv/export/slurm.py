"""A project's stack as a Slurm batch script: GRES, passthrough options, node features, and the
container launch for the site's runtime (pyxis/enroot, Apptainer or Docker).

Every value is checked against its grammar here, before rendering, with the flag or file field
it came from in the message; the templates (templates/export/slurm/, StrictUndefined) then quote
every shell word. ``#SBATCH`` lines are read by sbatch, not a shell, so what goes there must
match a grammar without quotes or spaces in the first place.

Node features: where a site tags its nodes (``Feature=a100,...`` in slurm.conf), the project's
``[cluster.slurm.features]`` says what each tag means (a GPU and a driver), and the script asks
for ``--constraint`` with exactly the tags whose nodes pass ``check_stack`` — the resolver's own
verdict, never a rule re-derived here.

A CPU-only target (``gpus = "none"``) is a job that asks for no GPU: no ``--gres``, no node feature
(the features describe GPU nodes), Apptainer without ``--nv`` (which looks for the node's driver
libraries) and no GPU for ``docker run``. Slurm has no selector for a node's CPU architecture, so the
script says in a comment which CPU its image is built for.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from cudaenv import __version__
from cudaenv.errors import CudaenvError, UserError
from cudaenv.core.references import check_reference, names_registry

RUNTIMES = ("pyxis", "apptainer", "docker")
DOCKER_GPUS = ("allocated", "none")

# sbatch --time: minutes, minutes:seconds, hours:minutes:seconds, days-hours[:minutes[:seconds]]
SLURM_TIME = re.compile(r"[0-9]+(?::[0-9]{1,2}){0,2}|[0-9]+-[0-9]{1,2}(?::[0-9]{1,2}){0,2}|UNLIMITED|INFINITE")
# partition, account, job and feature names: no spaces, quotes, '|', '&', ',' or '#'
SLURM_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
SLURM_NAMES = re.compile(rf"{SLURM_NAME.pattern}(?:,{SLURM_NAME.pattern})*")
# --output: a path with Slurm's % patterns (%j job id, %x job name, ...); relative to the submit directory
OUTPUT_PATH = re.compile(r"[A-Za-z0-9_.%/+-]{1,255}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class NoNodeFeature(CudaenvError):
    """No configured node feature can run the stack (exit 1, the clean "no")."""


@dataclass(frozen=True)
class NodeFeature:
    """A site's node feature tag and what the nodes that carry it have."""

    name: str
    driver: str
    gpu: object  # cudaenv.resolver.model.TargetGpu


@dataclass(frozen=True)
class SlurmJob:
    """Everything the templates need, already validated (plain values: the render is pure)."""

    runtime: str
    image: str
    project: str
    summary: str
    driver_need: str
    gpus: int
    gpus_note: str
    job_name: str
    output: str
    time: str | None = None
    partition: str | None = None
    account: str | None = None
    constraint: tuple[str, ...] = ()
    constraint_note: str = ""
    refused_features: tuple[str, ...] = ()  # "name: why not", one per feature left out
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    passed: tuple[str, ...] = ()  # -e NAME: read from the environment sbatch was submitted from, at job time
    shm_size: str | None = "8g"
    ipc: str | None = None
    ulimits: tuple[tuple[str, int, int], ...] = ()  # what the project asked for: kept, or the job fails
    default_ulimits: tuple[tuple[str, int, int], ...] = ()  # NVIDIA's recommendation: only where the node grants it
    docker_gpus: str = "allocated"
    target: str | None = None  # the target the stack is locked for, where the project names several
    cpu: bool = False  # a CPU-only target's stack: no GPU is asked for anywhere in the script
    arch: str = "x86_64"  # the CPU the image is built for


def checked(value: str | None, grammar: re.Pattern, where: str, expected: str) -> str | None:
    """``value`` when it matches ``grammar`` in full (None passes through), else exit 2 naming ``where``."""
    if value is None:
        return None
    if not isinstance(value, str) or not grammar.fullmatch(value):
        raise UserError(f"{where}: expected {expected}, got {value!r}")
    return value


def check_time(value: str | None) -> str | None:
    return checked(value, SLURM_TIME, "--time", "a Slurm time limit like 90, 4:00:00 or 2-12:00:00")


def gres_count(cli_gpus: int | None, run_gpus: str, where: str, *, picker: str = "Slurm") -> tuple[int, str]:
    """The ``--gres=gpu:N`` count (or a pod's GPU limit) and a note on where it came from. A cluster
    allocates counts, so ``[run] gpus`` maps as: N / auto:N -> N; device ids -> how many, and
    ``picker`` (the scheduler) picks which; all/auto -> 1 (a shared node has no "all"); none -> 0."""
    if cli_gpus is not None:
        if cli_gpus < 0:
            raise UserError(f"--gpus: expected a GPU count (0 for none), got {cli_gpus}")
        return cli_gpus, "from --gpus"
    from cudaenv.project.runopts import parse_gpus

    try:
        kind, value = parse_gpus(run_gpus)
    except UserError as exc:
        raise UserError(f"{where}: run.gpus: {exc}") from exc
    if kind == "none":
        return 0, 'from [run] gpus = "none"'
    if kind == "count" or (kind == "auto" and isinstance(value, int)):
        return int(value), f"from [run] gpus = {run_gpus!r}"
    if kind == "ids":
        return len(value), f"[run] gpus = {run_gpus!r} names {len(value)} device(s); {picker} picks which"
    return 1, f"[run] gpus = {run_gpus!r} has no meaning on a shared node: 1 GPU (pass --gpus N for more)"


def site_features(matrix, table, where: str) -> tuple[NodeFeature, ...]:
    """``[cluster.slurm.features]``: ``NAME = { gpu = "A100", driver = "550.54.15" }`` (or
    ``compute_capability = "8.0"`` instead of ``gpu``) -> the features, each checked."""
    from cudaenv.hosts.target import check_driver_text, gpu_by_cc, gpu_by_name

    if table is None:
        return ()
    if not isinstance(table, dict):
        raise UserError(f"{where}: cluster.slurm.features: expected a table of NAME = {{ gpu, driver }}, got {table!r}")
    features = []
    for name, spec in table.items():
        key = f"{where}: cluster.slurm.features.{name}"
        checked(name, SLURM_NAME, f"{where}: cluster.slurm.features", "feature names of letters, digits and _ . -")
        if not isinstance(spec, dict) or set(spec) - {"gpu", "compute_capability", "driver"}:
            raise UserError(f"{key}: expected a table with driver and gpu (or compute_capability), got {spec!r}")
        if not isinstance(spec.get("driver"), str):
            raise UserError(f"{key}.driver: expected the nodes' driver version like \"550.54.15\", got {spec.get('driver')!r}")
        driver = check_driver_text(spec["driver"], f"{key}.driver")
        if ("gpu" in spec) == ("compute_capability" in spec):
            raise UserError(f"{key}: expected exactly one of gpu (a name like \"A100\") or compute_capability")
        if "gpu" in spec:
            if not isinstance(spec["gpu"], str):
                raise UserError(f"{key}.gpu: expected a GPU name like \"A100\", got {spec['gpu']!r}")
            gpu = gpu_by_name(matrix, spec["gpu"], where=f"{key}.gpu")
        else:
            if not isinstance(spec["compute_capability"], str):
                raise UserError(f"{key}.compute_capability: expected a string like \"8.0\", got "
                                f"{spec['compute_capability']!r}")
            gpu = gpu_by_cc(matrix, spec["compute_capability"], where=f"{key}.compute_capability")
        features.append(NodeFeature(name, driver, gpu))
    return tuple(features)


def constraint_for(matrix, stack, features: tuple[NodeFeature, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the features whose nodes run ``stack``, why each other one cannot) by ``check_stack``."""
    from cudaenv.resolver.check import check_stack
    from cudaenv.resolver.model import Host

    usable, refused = [], []
    for feature in features:
        verdict = check_stack(matrix, stack, Host(feature.driver, (feature.gpu,)))
        if verdict.compatible:
            usable.append(feature.name)
        else:
            refused.append(f"{feature.name}: {'; '.join(verdict.reasons)}")
    if features and not usable:
        raise NoNodeFeature("no node feature in [cluster.slurm.features] can run this stack: " + " | ".join(refused))
    return tuple(usable), tuple(refused)


def enroot_image(reference: str) -> str:
    """pyxis/enroot's image URI, ``[REGISTRY#]IMAGE[:TAG]``: enroot separates the registry host with
    ``#``, and its reference pattern (src/docker.sh, ``docker::import``) has no ``@``: a digest goes
    where the tag goes, since the tag is put into the registry's ``/manifests/<tag>`` URL, which
    takes a digest as well. ``ghcr.io/team/img:1@sha256:…`` -> ``ghcr.io#team/img:sha256:…``; a
    Docker Hub reference keeps no registry part."""
    name, at, digest = reference.partition("@")
    if at:
        last = name.rsplit("/", 1)
        if ":" in last[-1]:  # the digest pins the image; a tag beside it would only be ignored
            name = name[: name.rindex(":")]
        name = f"{name}:{digest}"
    first, _, rest = name.partition("/")
    return f"{first}#{rest}" if rest and names_registry(first) else name


def image_for(runtime: str, image: str | None, local_tag: str | None) -> str:
    """``--image`` checked against Docker's reference grammar, else the project's local tag, which
    only a Docker node that built it can run."""
    if image is not None:
        return check_reference(image, "--image")
    if runtime == "docker" and local_tag:
        return local_tag
    raise UserError(f"--runtime {runtime} pulls the image on the node: pass --image REGISTRY/PATH@sha256:... "
                    "(push the project's image to a registry the cluster reaches first)")


def shell_word(value, where: str = "value") -> str:
    """POSIX single-quoting for one shell word; control characters are refused (a newline would
    end a line of the script whatever the quoting looks like to a reader)."""
    text = str(value)
    if _CONTROL.search(text):
        raise UserError(f"{where}: refusing {text!r} in a batch script: it contains a control character")
    return shlex.quote(text)


def assignment(name: str, value: str) -> str:
    """``NAME='value'`` with the value always single-quoted: ``shlex.quote`` leaves ``=x`` bare,
    and ``NAME==x`` is what shellcheck flags (SC1097) and a reader misreads."""
    if _CONTROL.search(value):
        raise UserError(f"environment variable {name}: refusing {value!r} in a batch script: it contains a "
                        "control character")
    return f"{name}='" + value.replace("'", "'\\''") + "'"


def apptainer_literal(value: str) -> str:
    r"""The value Apptainer turns back into ``value``: it writes ``APPTAINERENV_``/``--env`` values
    into ``export NAME="..."`` with only ``"`` escaped and evaluates that in its embedded shell
    (apptainer internal/pkg/runtime/engine/apptainer/process_linux.go ``injectEnvHandler``;
    user docs "Environment and Metadata": ``\$PATH`` is evaluated in the container). In double
    quotes ``\``, ``$`` and a backquote are the characters a backslash must protect."""
    return value.replace("\\", "\\\\").replace("$", "\\$").replace("`", "\\`")


# Names a batch script cannot read from the submitting environment: bash sets them itself, or the
# script uses them for its own values.
SCRIPT_NAMES = frozenset({
    "project_dir", "container", "gpu_args", "ulimit_args", "limit", "pid", "status", "srun_bin",
    "PWD", "OLDPWD", "SHLVL", "_", "IFS", "PPID", "UID", "EUID", "RANDOM", "SECONDS", "LINENO", "SHELLOPTS",
    "BASHOPTS", "OPTIND", "OPTARG", "GROUPS", "HOSTNAME", "HOSTTYPE", "MACHTYPE", "OSTYPE", "PS4", "SRANDOM",
    "EPOCHSECONDS", "EPOCHREALTIME", "FUNCNAME", "PIPESTATUS", "HISTCMD", "COLUMNS", "LINES",
})


def check_passed(name: str) -> str:
    if name in SCRIPT_NAMES or name.startswith(("BASH", "cudaenv_")):
        raise UserError(f"-e {name}: the batch script cannot read {name} from the environment it was submitted "
                        f"from (bash or the script sets it); pass the value (-e {name}=VALUE) instead")
    return name


def comment_text(value) -> str:
    text = str(value)
    if _CONTROL.search(text):
        raise UserError(f"refusing {text!r} in a batch script comment: it contains a control character")
    return text


def literal_checks(job: SlurmJob) -> str:
    """The shellcheck notes a literal value draws by design: ``$`` or a backquote in single quotes
    (SC2016: "expressions don't expand"), a backslash before a closing quote (SC1003)."""
    texts = (*job.command, *(value for _, value in job.env))
    codes = []
    if any("$" in t or "`" in t for t in texts):
        codes.append("SC2016")
    if any("\\" in t for t in texts):
        codes.append("SC1003")
    return ",".join(codes)


def script_context(job: SlurmJob) -> dict:
    return {
        "cudaenv_version": __version__,
        "runtime": job.runtime,
        "image": job.image,
        "enroot_image": enroot_image(job.image),
        "project": job.project,
        "summary": job.summary,
        "driver_need": job.driver_need,
        "gpus": job.gpus,
        "gpus_note": job.gpus_note,
        "job_name": job.job_name,
        "output": job.output,
        "time": job.time,
        "partition": job.partition,
        "account": job.account,
        "constraint": "|".join(job.constraint),
        "constraint_note": job.constraint_note,
        "refused_features": list(job.refused_features),
        "command": list(job.command),
        "env": [assignment(name, value) for name, value in job.env],
        "env_names": sorted({name for name, _ in job.env} | set(job.passed)),
        "passed": list(job.passed),
        "shellcheck_disable": literal_checks(job),
        "apptainer_env": [assignment(f"APPTAINERENV_{name}", apptainer_literal(value)) for name, value in job.env],
        "shm_size": job.shm_size,
        "ipc": job.ipc,
        "ulimits": [f"{name}={soft}:{hard}" for name, soft, hard in job.ulimits],
        "default_ulimits": [f"{name}={soft}:{hard}" for name, soft, hard in job.default_ulimits],
        "docker_gpus": job.docker_gpus,
        "target": job.target,
        "cpu": job.cpu,
        "arch": job.arch,
    }


def _environment():
    import jinja2

    from cudaenv.core.resources import templates_dir

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir() / "export" / "slurm")),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # a shell script: quoting is explicit through the filters
    )
    env.filters["shq"] = shell_word
    env.filters["comment"] = comment_text
    return env


def render_script(job: SlurmJob) -> str:
    """The sbatch script for ``job`` (validated values only: see ``build_job``)."""
    if job.runtime not in RUNTIMES:
        raise UserError(f"--runtime: expected one of {', '.join(RUNTIMES)}, got {job.runtime!r}")
    text = _environment().get_template(f"{job.runtime}.sbatch.j2").render(**script_context(job))
    return re.sub(r"\n{3,}", "\n\n", text)


def build_job(project, matrix, stack, *, runtime: str, image: str, gpus: int | None = None, time: str | None = None,
              partition: str | None = None, account: str | None = None, job_name: str | None = None,
              output: str | None = None, command: tuple[str, ...] = (), env: dict[str, str] | None = None,
              passthrough: tuple[str, ...] = (), use_features: bool = True, docker_gpus: str = "allocated",
              target: str | None = None) -> SlurmJob:
    """A validated ``SlurmJob`` for ``project``'s locked ``stack``: the flags override the project's
    [run] table; node features come from its [cluster.slurm.features]. ``target``: the name of the
    target the stack is locked for, where the project names several (for the script's comments)."""
    from cudaenv.project.config import DEFAULT_ULIMITS
    from cudaenv.resolver import driver as drv

    where = str(project.config_path or project.root)
    if runtime not in RUNTIMES:
        raise UserError(f"--runtime: expected one of {', '.join(RUNTIMES)}, got {runtime!r}")
    if docker_gpus not in DOCKER_GPUS:
        raise UserError(f"--docker-gpus: expected one of {', '.join(DOCKER_GPUS)}, got {docker_gpus!r}")
    if docker_gpus != "allocated" and runtime != "docker":
        raise UserError(f"--docker-gpus applies to --runtime docker only (got --runtime {runtime})")
    if stack.cpu:
        count, note = cpu_gpus(gpus, target)
    else:
        count, note = gres_count(gpus, project.run.gpus, where)
    command = tuple(command) or tuple(project.run.command)
    if not command:
        raise UserError(f"nothing to run: give the command after `--`, or set [run] command in {where}")
    for index, word in enumerate(command):
        shell_word(word, f"command word {index + 1}")
    from cudaenv.export.environment import merge

    chosen = merge(project.run.env, env, passthrough)
    for name, value in chosen.values:
        assignment(name, value)
    for name in chosen.passed:
        check_passed(name)
    features = site_features(matrix, features_table(project), where) if use_features else ()
    usable, refused = constraint_for(matrix, stack, features) if not stack.cpu else ((), ())
    if stack.cpu:
        constraint_note = "node features: none asked for ([cluster.slurm.features] describe GPU nodes)"
    elif not use_features:
        constraint_note = "node features: not asked for (--no-constraint)"
    elif not features:
        constraint_note = "node features: none configured ([cluster.slurm.features] in cudaenv.toml)"
    else:
        constraint_note = "node features that run it: " + ", ".join(usable)
    frameworks = ", ".join(f"{n} {v}" for n, v in stack.frameworks) or ("Python" if stack.cpu else "CUDA runtime")
    device = "CPU only" if stack.cpu else f"CUDA {stack.cuda}"
    return SlurmJob(
        runtime=runtime, image=image, project=project.name, target=target,
        summary=f"{frameworks} | {device} | Python {stack.python}",
        driver_need="" if stack.cpu else f"a driver {drv.requirement_text(stack.min_driver, stack.min_driver_compat)}",
        gpus=count, gpus_note=note,
        job_name=checked(job_name, SLURM_NAME, "--job-name", "letters, digits and _ . -") or project.name,
        output=checked(output, OUTPUT_PATH, "--output", "a path of letters, digits, _ . / + - and % patterns")
        or "%x-%j.out",
        time=check_time(time),
        partition=checked(partition, SLURM_NAMES, "--partition", "partition names (letters, digits, _ . -), comma-separated"),
        account=checked(account, SLURM_NAME, "--account", "an account name of letters, digits and _ . -"),
        constraint=usable, constraint_note=constraint_note, refused_features=refused, command=command,
        env=chosen.values, passed=chosen.passed,
        shm_size=None if project.run.ipc == "host" else project.run.shm_size, ipc=project.run.ipc,
        ulimits=tuple(u for u in project.run.ulimits if u not in DEFAULT_ULIMITS),
        default_ulimits=tuple(u for u in project.run.ulimits if u in DEFAULT_ULIMITS), docker_gpus=docker_gpus,
        cpu=stack.cpu, arch=stack.arch,
    )


def cpu_gpus(cli_gpus: int | None, target: str | None) -> tuple[int, str]:
    """A CPU-only target's GPU count: none, whatever [run] gpus says (it is the GPU targets'
    setting); ``--gpus N`` above 0 asks a CPU stack for GPUs it cannot use: exit 2."""
    which = f"target {target}" if target else "the locked target"
    if cli_gpus:
        raise UserError(f"--gpus {cli_gpus}: {which} is CPU-only (gpus = \"none\"): its stack uses no GPU")
    return 0, f"{which} is CPU-only"


def features_table(project):
    """The project's raw [cluster.slurm.features] table (None when absent), for ``site_features``."""
    cluster = (project.raw or {}).get("cluster") or {}
    slurm = cluster.get("slurm") or {} if isinstance(cluster, dict) else {}
    return slurm.get("features") if isinstance(slurm, dict) else None
