"""A project's stack as a Kubernetes Job or Deployment: a GPU limit, node affinity that picks the
nodes whose driver and GPU can run the stack, shared memory, and a non-root security context.

**Node affinity from the resolver's rules.** The nodes are chosen by NVIDIA GPU Feature Discovery
(GFD) labels, which describe a node's driver and its GPU's compute capability. The keys, as
GFD writes them (NVIDIA/k8s-device-plugin, ``internal/lm/nvml.go`` ``newVersionLabeler`` and
``internal/lm/resource.go`` ``newArchitectureLabels``; the table "Generated Labels" in
``docs/gpu-feature-discovery/README.md``):

* driver, since GFD v0.15.0 (k8s-device-plugin commit eba41da, "align cuda driver and runtime
  labels with the NFD kernel version label format"): ``nvidia.com/cuda.driver-version.major``,
  ``.minor``, ``.revision`` (and ``.full``); the driver version string split at its dots, so the
  revision keeps its leading zero (``550.107.02`` -> ``02``) and is empty for a two-part version;
* driver, older GFD (NVIDIA/gpu-feature-discovery ``internal/lm/nvml.go``, still written today and
  marked deprecated): ``nvidia.com/cuda.driver.major``, ``.minor``, ``.rev``;
* compute capability, both versions: ``nvidia.com/gpu.compute.major``, ``.minor`` (``%d``-formatted
  integers of the node's first full GPU).

A node labelled by either GFD generation matches: the terms are generated once per driver key set
and ORed. ``nvidia.com/cuda.runtime(-version).*`` is not used: it is the highest CUDA the driver
reports, a consequence of the driver version, which is the fact ``check_stack`` decides on.

Kubernetes node-selection semantics (API reference, ``NodeSelector``/``NodeSelectorRequirement``;
``k8s.io/apimachinery`` ``labels.Requirement.Matches``): ``nodeSelectorTerms`` are ORed, the
``matchExpressions`` of one term are ANDed; ``In``/``Gt``/``Lt`` fail on a missing label, ``NotIn``
holds on one; ``Gt``/``Lt`` parse the label as one base-10 integer. So a version bound becomes
several terms (``placement.at_least_terms``), equality of driver parts is ``Gt v-1`` and ``Lt v+1``
(``In`` would compare ``02`` with ``2`` as text), and "driver >= X and GPU in the SM lists" is
their cross product. The selected set is exactly the label facts (driver, compute capability) that
``cudaenv.resolver.check.check_stack`` accepts for a host with that driver and one GPU of that
capability — tests evaluate both over generated label sets.

What labels cannot say (written into the manifest too): GFD labels one GPU per node, so a node
with mixed GPU models is judged by its first; whether a GPU is a data-center part is not labelled,
so forward compatibility (cuda-compat) is not offered; a node without GFD labels is never chosen.

**A CPU-only target** (``gpus = "none"``) asks for no GPU: no ``nvidia.com/gpu`` limit, no GFD terms,
no toleration of GPU nodes' taint and no RuntimeClass (the NVIDIA one is for GPU containers); its
nodes are chosen by CPU alone (``kubernetes.io/arch``).

The manifest is plain data serialized by a YAML library, never text pasted into a template, and
every value from a project or a flag is checked against its Kubernetes grammar first (exit 2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from cudaenv.resolver.model import DEFAULT_ARCH, OCI_ARCH
from cudaenv.errors import CudaenvError, UserError
from cudaenv.export.placement import Requirement, Term, and_terms, architecture_terms, at_least_terms

DRIVER_KEYS = ("nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver-version.minor",
               "nvidia.com/cuda.driver-version.revision")
DRIVER_KEYS_DEPRECATED = ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev")
DRIVER_KEY_SETS = (DRIVER_KEYS, DRIVER_KEYS_DEPRECATED)
COMPUTE_KEYS = ("nvidia.com/gpu.compute.major", "nvidia.com/gpu.compute.minor")
GPU_RESOURCE = "nvidia.com/gpu"

KINDS = ("job", "deployment")
# RFC 1123 label (metadata.name of a Job, container names, namespaces) and subdomain (RuntimeClass)
DNS_LABEL = re.compile(r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?", re.ASCII)
DNS_SUBDOMAIN = re.compile(r"(?=.{1,253}$)[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*",
                           re.ASCII)
LABEL_VALUE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?", re.ASCII)
# [run] shm_size / --shm-size: Docker's spelling (binary units, as `docker run --shm-size`)
SHM_SIZE = re.compile(r"([0-9]{1,12}(?:\.[0-9]{1,6})?)([bkmgBKMG]?)", re.ASCII)
USER = re.compile(r"([0-9]{1,10})(?::([0-9]{1,10}))?", re.ASCII)
MAX_ID = 2**31 - 1
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class NoNodeFits(CudaenvError):
    """No driver and GPU the labels can describe runs the stack (exit 1, the clean "no")."""


# --- placement ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Cells:
    """Compute capabilities grouped so every rule is constant inside a group: one capability
    ``major.minor``; every minor of ``major`` above ``minor - 1`` (a tail); or every capability
    whose major lies in ``major..last`` (a span of majors no rule names; ``last`` None: no end)."""

    kind: str  # exact | tail | span
    major: int
    minor: int = 0
    last: int | None = None

    @property
    def sample(self) -> str:
        return f"{self.major}.{self.minor}"


def _cells(points: set[tuple[int, int]]) -> list[_Cells]:
    """Every capability, partitioned at the points the rules compare against. A rule compares a
    capability with a named one (``<``, ``<=``, same major) or looks it up in a list, so between
    the named majors only the major matters, and above a major's highest named minor nothing changes."""
    cells: list[_Cells] = []
    previous = -1
    for major in sorted({p[0] for p in points}):
        if major - previous > 1:
            cells.append(_Cells("span", previous + 1, 0, major - 1))
        highest = max(m for M, m in points if M == major)
        cells.extend(_Cells("exact", major, minor) for minor in range(highest + 1))
        cells.append(_Cells("tail", major, highest + 1))
        previous = major
    cells.append(_Cells("span", previous + 1, 0, None))
    return cells


def capability_runs(matrix, stack, cc: str, *, ptx_jit: bool) -> bool:
    """The GPU half of ``check_stack``: CUDA's own libraries and every framework build with a
    recorded SM list run on ``cc`` (an unrecorded list is only a caveat there, so it passes)."""
    from cudaenv.resolver.check import stack_build_runs_on
    from cudaenv.resolver.gpu import toolkit_runs_on

    if not toolkit_runs_on(matrix, stack.cuda, cc, ptx_jit=ptx_jit):
        return False
    if stack.arch != DEFAULT_ARCH and matrix.jetson_only(cc) is not None:
        return False  # an arm64 node with sm_87 is a Jetson Orin: Jetson Linux's CUDA, not the server image's
    return all(stack_build_runs_on(matrix, stack, name, sass, ptx, cc, ptx_jit=ptx_jit) is not False
               for name, sass, ptx in stack.gpu_targets)


def _capability_points(matrix, stack) -> set[tuple[int, int]]:
    from cudaenv.resolver.gpu import toolkit_range
    from cudaenv.versions import numeric_key

    named = [c for _, sass, ptx in stack.gpu_targets for c in (*sass, *ptx)]
    named += [c for arch in matrix.architectures for c in arch.compute_capabilities]
    named += list(toolkit_range(matrix, stack.cuda) or ())
    return {numeric_key(c)[:2] for c in named}


def _driver_thresholds(matrix, stack) -> tuple[str | None, str | None]:
    """(the lowest driver for a GPU that needs PTX JIT — native only —, the lowest driver for the
    rest — native or minor-version compatibility), as ``driver_mode`` decides; None: no driver."""
    from cudaenv.resolver import driver as drv
    from cudaenv.versions import numeric_key

    native = drv.native_requirement(matrix, stack.cuda)
    floor = drv.minor_version_floor(matrix, stack.cuda)
    either = min((v for v in (native, floor) if v), key=numeric_key, default=None)
    return native, either


def _refused_branches(matrix, architecture: str | None, threshold: str) -> tuple[str, ...]:
    """Driver branches from the threshold's up that the matrix says do not support ``architecture``
    (``host_problems``: R495+ dropped Kepler); lower branches are below the threshold anyway."""
    from cudaenv.versions import numeric_key

    if architecture is None:
        return ()
    low = numeric_key(threshold)[0]
    return tuple(str(b.branch) for b in sorted(matrix.driver_branches, key=lambda b: b.branch)
                 if b.branch >= low and architecture not in b.architectures)


def _in(key: str, values) -> Requirement:
    return Requirement(key, "In", tuple(str(v) for v in values))


def _capability_terms(cells: list[_Cells]) -> tuple[Term, ...]:
    """ORed terms over the compute-capability labels selecting exactly ``cells``: majors with
    every minor chosen go into one ``In`` list (or ``Gt`` for the open-ended span), the others get
    their minors listed, and a chosen tail of minors is one ``Gt``."""
    major_key, minor_key = COMPUTE_KEYS
    every_major: list[tuple[int, int | None]] = []  # (first, last) majors with every minor; last None: no end
    exact: dict[int, list[int]] = {}
    tails: dict[int, int] = {}
    for cell in cells:
        if cell.kind == "span":
            every_major.append((cell.major, cell.last))
        elif cell.kind == "exact":
            exact.setdefault(cell.major, []).append(cell.minor)
        else:
            tails[cell.major] = cell.minor
    partial: dict[int, tuple[list[int], int | None]] = {}
    for major in sorted(set(exact) | set(tails)):
        minors, tail = sorted(exact.get(major, [])), tails.get(major)
        if tail is not None and minors == list(range(tail)):
            every_major.append((major, major))
        else:
            partial[major] = (minors, tail)
    merged: list[list] = []
    for first, last in sorted(every_major):
        if merged and merged[-1][1] is not None and merged[-1][1] + 1 == first:
            merged[-1][1] = last
        else:
            merged.append([first, last])
    terms: list[Term] = []
    listed = [m for first, last in merged if last is not None and last - first < 16 for m in range(first, last + 1)]
    if listed:
        terms.append((_in(major_key, listed),))
    for first, last in merged:
        if last is None:
            terms.append((Requirement(major_key, "Gt", (str(first - 1),)),))
        elif last - first >= 16:
            terms.append((Requirement(major_key, "Gt", (str(first - 1),)), Requirement(major_key, "Lt", (str(last + 1),))))
    for major, (minors, tail) in partial.items():
        if tail is not None:
            while tail - 1 in minors:  # the open range reaches down through the consecutive minors below it
                tail -= 1
            minors = [m for m in minors if m < tail]
        if minors:
            terms.append((_in(major_key, [major]), _in(minor_key, minors)))
        if tail is not None:
            terms.append((_in(major_key, [major]), Requirement(minor_key, "Gt", (str(tail - 1),))))
    return tuple(terms)


def affinity_terms(matrix, stack) -> tuple[Term, ...]:
    """The ORed node-selector terms for the nodes ``check_stack`` accepts, on GFD labels.

    A node runs the stack when (1) its driver runs the stack's CUDA — natively, or through
    minor-version compatibility, which cannot JIT-compile PTX —, (2) its GPU runs CUDA's libraries
    and every framework build under that mode, and (3) its driver branch still supports the GPU's
    architecture. A capability that runs without PTX JIT needs the lower of the two driver
    minimums; one that needs JIT needs the native minimum. Raises ``NoNodeFits`` when none can.
    """
    from cudaenv.versions import numeric_key

    if stack.cuda not in matrix.cuda_minors:
        raise NoNodeFits(f"the stack's CUDA {stack.cuda} is not a CUDA release in this matrix: no node can be "
                         "chosen for it (written by a newer cudaenv or matrix? run `cudaenv matrix check`)")
    native, either = _driver_thresholds(matrix, stack)
    groups: dict[tuple[str, tuple[str, ...]], list[_Cells]] = {}
    for cell in _cells(_capability_points(matrix, stack)):
        arch = matrix.architecture_of(cell.sample) if cell.kind == "exact" else None
        arch_name = arch.name if arch else None
        if either and capability_runs(matrix, stack, cell.sample, ptx_jit=False):
            threshold = either
        elif native and capability_runs(matrix, stack, cell.sample, ptx_jit=True):
            threshold = native
        else:
            continue
        groups.setdefault((threshold, _refused_branches(matrix, arch_name, threshold)), []).append(cell)
    if not groups:
        raise NoNodeFits(f"no driver and GPU that GPU Feature Discovery labels can describe runs CUDA {stack.cuda} "
                         "with these framework builds")
    # Each driver bound is ORed terms; a refused branch only matters to a term its major can meet,
    # so cells whose refusals differ only there share that term (and one list of capabilities).
    by_driver: dict[Term, list[_Cells]] = {}
    for (threshold, refused), cells in sorted(groups.items(), key=lambda g: (numeric_key(g[0][0]), g[0][1])):
        parts = numeric_key(threshold)
        for keys in DRIVER_KEY_SETS:
            first, *pinned = at_least_terms(threshold, keys, integers=True)
            above = [b for b in refused if int(b) > parts[0] or (len(parts) == 1 and int(b) == parts[0])]
            if above:
                first = (*first, Requirement(keys[0], "NotIn", tuple(above)))
            by_driver.setdefault(first, []).extend(cells)
            if str(parts[0]) not in refused:  # the other terms fix the major to the threshold's
                for term in pinned:
                    by_driver.setdefault(term, []).extend(cells)
    terms: list[Term] = []
    for driver, cells in by_driver.items():
        terms.extend(and_terms((driver,), _capability_terms(cells)))
    return tuple(terms)


class _Expression(dict):
    """A match expression: written on one line (``{key: ..., operator: Gt, values: ['524']}``)."""


def requirement_dict(requirement: Requirement) -> dict:
    data: dict = _Expression(key=requirement.key, operator=requirement.operator)
    if requirement.values:
        data["values"] = list(requirement.values)
    return data


def cpu_affinity(stack) -> dict:
    """``spec.affinity.nodeAffinity`` for a CPU-only target's pod: any node whose CPU the image
    is built for (without it an x86_64 image lands on an arm64 node and fails ``exec format error``)."""
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [requirement_dict(r) for r in term]} for term in architecture_terms((stack.arch,))
    ]}}


def node_affinity(matrix, stack) -> dict:
    """``spec.affinity.nodeAffinity`` (as plain data) choosing exactly the nodes whose GFD labels
    describe a driver and GPU that ``check_stack`` accepts for ``stack``, on a CPU the image is built for."""
    terms = and_terms(affinity_terms(matrix, stack), architecture_terms((stack.arch,)))
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [requirement_dict(r) for r in term]} for term in terms
    ]}}


# --- values ---------------------------------------------------------------------------------------


def dns_label(value: str, where: str) -> str:
    if not isinstance(value, str) or not DNS_LABEL.fullmatch(value):
        raise UserError(f"{where}: expected a Kubernetes name (RFC 1123 label: at most 63 lower-case letters, digits "
                        f"and '-', starting and ending with a letter or digit), got {value!r}")
    return value


def dns_subdomain(value: str, where: str) -> str:
    if not isinstance(value, str) or not DNS_SUBDOMAIN.fullmatch(value):
        raise UserError(f"{where}: expected a Kubernetes name (RFC 1123 subdomain: lower-case letters, digits, '-' "
                        f"and '.', at most 253 characters), got {value!r}")
    return value


def label_value(value: str, where: str) -> str:
    if not isinstance(value, str) or not LABEL_VALUE.fullmatch(value):
        raise UserError(f"{where}: expected a Kubernetes label value (at most 63 letters, digits, '-', '_' and '.', "
                        f"starting and ending with a letter or digit), got {value!r}")
    return value


def default_name(project_name: str) -> str:
    """The project's name as an RFC 1123 label: lower-cased, other characters as '-'."""
    cleaned = re.sub(r"[^a-z0-9-]+", "-", project_name.lower()).strip("-")[:63].rstrip("-")
    return cleaned or "cudaenv"


def shm_quantity(text: str, where: str) -> str:
    """Docker's ``--shm-size`` spelling (``8g``: binary units, bytes without a unit) as a
    Kubernetes quantity for ``emptyDir.sizeLimit`` (``8Gi``), the same number of bytes."""
    match = SHM_SIZE.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise UserError(f"{where}: expected a size like 8g, 512m or 1.5g (Docker's --shm-size units), got {text!r}")
    unit = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[match.group(2).lower()]
    size = int(Decimal(match.group(1)) * unit)  # as Docker's RAMInBytes: the fraction of a byte is dropped
    if size <= 0:
        raise UserError(f"{where}: expected a size above zero for the shared-memory volume, got {text!r}")
    for suffix, step in (("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024)):
        if size % step == 0:
            return f"{size // step}{suffix}"
    return str(size)


def run_as(text: str | None) -> tuple[int, int]:
    """``--user UID[:GID]``, else the UID:GID ``cudaenv build`` gives the image's user (its
    numeric ``USER``: CUDAENV_UID/CUDAENV_GID, else yours, never root)."""
    if text is None:
        from cudaenv.images.plan import build_user_ids

        return build_user_ids()
    match = USER.fullmatch(text)
    if match is None:
        raise UserError(f"--user: expected a numeric UID or UID:GID like 1000:1000, got {text!r}")
    uid = int(match.group(1))
    gid = int(match.group(2)) if match.group(2) is not None else uid
    if uid == 0:
        raise UserError("--user: expected a non-root UID (the pod runs with runAsNonRoot), got 0")
    if uid > MAX_ID or gid > MAX_ID:
        raise UserError(f"--user: expected IDs up to {MAX_ID}, got {text!r}")
    return uid, gid


def comment(text: str) -> str:
    if _CONTROL.search(text):
        raise UserError(f"refusing {text!r} in a manifest comment: it contains a control character")
    return text


# --- the manifest ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """Everything the manifest says, already validated."""

    kind: str  # job | deployment
    name: str
    image: str
    project: str
    summary: str
    driver_need: str
    arch: str  # the CPU the image is built for (the stack's), as the kernel names it
    gpus: int
    gpus_note: str
    uid: int
    gid: int
    shm: str  # a Kubernetes quantity
    shm_note: str
    affinity: dict | None
    namespace: str | None = None
    runtime_class: str | None = None
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    passed: tuple[str, ...] = ()  # -e NAME: from the Secret ``secret``, key NAME; never a value in the file
    secret: str | None = None
    replicas: int = 1
    backoff_limit: int = 0
    forward: bool = False  # the lock chose forward compatibility, which labels cannot select
    target: str | None = None  # the target the stack is locked for, where the project names several
    cpu: bool = False  # a CPU-only target's stack


def build_workload(project, matrix, stack, *, kind: str = "job", image: str, name: str | None = None,
                   namespace: str | None = None, gpus: int | None = None, runtime_class: str | None = None,
                   user: str | None = None, shm_size: str | None = None, replicas: int | None = None,
                   backoff_limit: int | None = None, command: tuple[str, ...] = (),
                   env: dict[str, str] | None = None, passthrough: tuple[str, ...] = (),
                   secret: str | None = None, target: str | None = None) -> Workload:
    """A validated ``Workload`` for ``project``'s locked ``stack``; the flags override [run].
    ``target``: the name of the target the stack is locked for, where the project names several."""
    from cudaenv.export.slurm import gres_count
    from cudaenv.core.references import check_reference
    from cudaenv.resolver import driver as drv

    where = str(project.config_path or project.root)
    if kind not in KINDS:
        raise UserError(f"--kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    if replicas is not None and kind != "deployment":
        raise UserError("--replicas applies to --kind deployment only")
    if backoff_limit is not None and kind != "job":
        raise UserError("--backoff-limit applies to --kind job only")
    if replicas is not None and not 0 <= replicas <= MAX_ID:
        raise UserError(f"--replicas: expected a count from 0, got {replicas}")
    if backoff_limit is not None and not 0 <= backoff_limit <= MAX_ID:
        raise UserError(f"--backoff-limit: expected a count from 0, got {backoff_limit}")
    if stack.cpu:
        from cudaenv.export.slurm import cpu_gpus

        count, gpus_note = cpu_gpus(gpus, target)
        if runtime_class is not None:
            raise UserError(f"--runtime-class {runtime_class}: {'target ' + target if target else 'the locked target'} "
                            "is CPU-only: its pod asks for no GPU and needs no GPU runtime")
    else:
        count, gpus_note = gres_count(gpus, project.run.gpus, where, picker="the NVIDIA device plugin")
    command = tuple(command) or tuple(project.run.command)
    if not command:
        raise UserError(f"nothing to run: give the command after `--`, or set [run] command in {where}")
    from cudaenv.export.environment import merge

    chosen = merge(project.run.env, env, passthrough)
    merged_env, passed = dict(chosen.values), chosen.passed
    if count == 0:
        merged_env["NVIDIA_VISIBLE_DEVICES"] = "void"  # CUDA images set "all": the runtime hook would hand over every GPU
        passed = tuple(n for n in passed if n != "NVIDIA_VISIBLE_DEVICES")
    workload_name = dns_label(name, "--name") if name is not None else default_name(project.name)
    if secret is not None and not passed:
        raise UserError("--secret names the Secret that -e NAME (without a value) reads from: give such a -e too")
    secret_name = None
    if passed:
        secret_name = dns_subdomain(secret, "--secret") if secret is not None else secret_for(workload_name)
    if shm_size is not None:
        shm, shm_note = shm_quantity(shm_size, "--shm-size"), f"from --shm-size {shm_size}"
    else:
        shm, shm_note = shm_quantity(project.run.shm_size, f"{where}: run.shm_size"), \
            f"from [run] shm_size = {project.run.shm_size!r}"
    if project.run.ipc == "host":
        shm_note += " ([run] ipc = \"host\" is not carried over: hostIPC shares the node's IPC namespace)"
    uid, gid = run_as(user)
    frameworks = ", ".join(f"{n} {v}" for n, v in stack.frameworks) or ("Python" if stack.cpu else "CUDA runtime")
    device = "CPU only" if stack.cpu else f"CUDA {stack.cuda}"
    return Workload(
        kind=kind,
        name=workload_name,
        image=check_reference(image, "--image"),
        project=comment(project.name),
        summary=comment(f"{frameworks} | {device} | Python {stack.python}"),
        driver_need=("no NVIDIA driver (a CPU-only stack)" if stack.cpu
                     else f"a driver {drv.requirement_text(stack.min_driver, stack.min_driver_compat)}"),
        arch=stack.arch,
        gpus=count, gpus_note=comment(gpus_note), uid=uid, gid=gid, shm=shm, shm_note=comment(shm_note),
        affinity=node_affinity(matrix, stack) if count > 0 else cpu_affinity(stack) if stack.cpu else None,
        namespace=dns_label(namespace, "--namespace") if namespace is not None else None,
        runtime_class=dns_subdomain(runtime_class, "--runtime-class") if runtime_class is not None else None,
        command=command, env=tuple(sorted(merged_env.items())), passed=passed, secret=secret_name,
        replicas=1 if replicas is None else replicas, backoff_limit=0 if backoff_limit is None else backoff_limit,
        forward=stack.driver_compatibility == drv.FORWARD, target=target, cpu=stack.cpu,
    )


def literal(text: str) -> str:
    """Kubernetes expands ``$(NAME)`` in ``command``, ``args`` and ``env[].value`` and reads ``$$``
    as ``$`` (kubernetes.io, "Define Dependent Environment Variables" and "Define a Command and
    Arguments for a Container"; k8s.io/kubernetes third_party/forked/golang/expansion). Doubling
    every ``$`` leaves nothing to expand: the container sees exactly ``text``, as under ``cudaenv run``."""
    return text.replace("$", "$$")


def secret_for(workload_name: str) -> str:
    """The Secret that pass-through variables (``-e NAME``) are read from, unless --secret names one."""
    return f"{workload_name[:59].rstrip('-')}-env"


def env_entries(workload: Workload) -> list[dict]:
    """``env``: values escaped for Kubernetes' expansion; a pass-through name as a reference to
    the Secret's key of the same name, so the value never sits in the manifest."""
    entries = {name: {"name": name, "value": literal(value)} for name, value in workload.env}
    for name in workload.passed:
        entries[name] = {"name": name, "valueFrom": {"secretKeyRef": {"name": workload.secret, "key": name}}}
    return [entries[name] for name in sorted(entries)]


def manifest(workload: Workload) -> dict:
    """The Job or Deployment as plain data (serialize with ``render``)."""
    labels = {"app.kubernetes.io/name": label_value(workload.name, "--name"),
              "app.kubernetes.io/managed-by": "cudaenv"}
    container: dict = {
        "name": workload.name,
        "image": workload.image,
        # args, not command: the image's entrypoint (tini, cuda-compat) stays
        "args": [literal(word) for word in workload.command],
        "workingDir": "/workspace",
    }
    if workload.env or workload.passed:
        container["env"] = env_entries(workload)
    if workload.gpus:
        container["resources"] = {"limits": {GPU_RESOURCE: workload.gpus}}
    container["securityContext"] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    container["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    pod: dict = {}
    if workload.kind == "job":
        pod["restartPolicy"] = "Never"
    if workload.runtime_class:
        pod["runtimeClassName"] = workload.runtime_class
    pod["securityContext"] = {"runAsNonRoot": True, "runAsUser": workload.uid, "runAsGroup": workload.gid,
                              "seccompProfile": {"type": "RuntimeDefault"}}
    if workload.affinity:
        pod["affinity"] = {"nodeAffinity": workload.affinity}
    if workload.gpus:
        pod["tolerations"] = [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
    pod["containers"] = [container]
    pod["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": workload.shm}}]
    template = {"metadata": {"labels": dict(labels)}, "spec": pod}
    metadata: dict = {"name": workload.name}
    if workload.namespace:
        metadata["namespace"] = workload.namespace
    metadata["labels"] = labels
    metadata["annotations"] = {"cudaenv.io/project": workload.project, "cudaenv.io/stack": workload.summary,
                               "cudaenv.io/driver": workload.driver_need}
    if workload.target:
        metadata["annotations"]["cudaenv.io/target"] = workload.target
    if workload.kind == "job":
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
                "spec": {"backoffLimit": workload.backoff_limit, "template": template}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata,
            "spec": {"replicas": workload.replicas,
                     "selector": {"matchLabels": {"app.kubernetes.io/name": workload.name}},
                     "template": template}}


def header(workload: Workload) -> str:
    from cudaenv import __version__

    kind = "Job" if workload.kind == "job" else "Deployment"
    target = f" --target {workload.target}" if workload.target else ""
    lines = [
        f"{kind} for {workload.project}{f' (target {workload.target})' if workload.target else ''}: {workload.summary}",
        f"Generated by cudaenv {__version__} (`cudaenv export kubernetes --kind {workload.kind}{target}`); "
        "`kubectl apply -f` it.",
        f"The image needs {workload.driver_need}.",
        f"GPUs: {workload.gpus} ({workload.gpus_note}); /dev/shm: {workload.shm} in memory ({workload.shm_note};",
        "  it counts against the container's memory limit).",
    ]
    if workload.gpus:
        lines += [
            "Node affinity: generated from cudaenv's resolver rules (the same verdict as `cudaenv check`) over",
            "  GPU Feature Discovery labels: a node qualifies when its driver runs this CUDA (natively, or through",
            "  minor-version compatibility where no PTX JIT is needed) and its GPU's compute capability runs every",
            f"  build, on a node whose CPU the image is built for (kubernetes.io/arch: {OCI_ARCH[workload.arch]}; the image is",
            f"  {workload.arch} only). Gt/Lt compare one integer, so a driver bound is several ORed terms; each is written",
            "  for the current nvidia.com/cuda.driver-version.* labels and again for the older nvidia.com/cuda.driver.*",
            "  ones.",
            "  Labels cannot say: which GPUs of a mixed node (GFD labels its first GPU), whether a GPU is a",
            "  data-center part (forward compatibility through cuda-compat is not offered), anything on a node",
            "  without GFD labels (never chosen).",
        ]
        if workload.forward:
            lines.append("The lock relies on forward compatibility (cuda-compat in the image) for its target host: "
                         "such nodes are left out here.")
    else:
        lines.append("No GPU is requested" + (" (a CPU-only target)" if workload.cpu else "")
                     + ", so no GPU node affinity; NVIDIA_VISIBLE_DEVICES=void hides the node's GPUs.")
        if workload.affinity:
            lines.append(f"Node affinity: any node whose CPU the image is built for (kubernetes.io/arch: "
                         f"{OCI_ARCH[workload.arch]}; the image is {workload.arch} only).")
    lines.append(f"Runs as UID {workload.uid}, GID {workload.gid}: the numeric non-root user cudaenv built into the image.")
    if any("$" in text for text in (*workload.command, *(value for _, value in workload.env))):
        lines.append("Every $ in args and env values is written as $$: Kubernetes would otherwise expand $(NAME).")
    if workload.passed:
        lines += [
            f"{', '.join(workload.passed)}: passed through (-e NAME), so read from Secret {workload.secret}, never written "
            "here. Create it first:",
            f"  kubectl create secret generic {workload.secret} "
            + (f"--namespace {workload.namespace} " if workload.namespace else "")
            + " ".join(f'--from-literal={n}="${n}"' for n in workload.passed),
        ]
    return "".join(f"# {comment(line)}\n" for line in lines)


# Strings a Kubernetes reader (sigs.k8s.io/yaml: YAML 1.1 booleans such as y/n/on/off, and YAML 1.2
# numbers such as 0o17 or 3e-4) would take for something else. PyYAML quotes its own 1.1 set itself.
_AMBIGUOUS = re.compile(
    r"[-+]?(?:[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|\.inf|\.Inf|\.INF)"
    r"|\.nan|\.NaN|\.NAN|y|Y|n|N|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|true|True|TRUE|false|False|FALSE"
    r"|null|Null|NULL|~|", re.ASCII)


def render(document: dict, heading: str = "") -> str:
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def string(dumper, value: str):
        style = "'" if _AMBIGUOUS.fullmatch(value) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    def expression(dumper, value: _Expression):
        return dumper.represent_mapping("tag:yaml.org,2002:map", dict(value), flow_style=True)

    Dumper.add_representer(str, string)
    Dumper.add_representer(_Expression, expression)
    body = yaml.dump(document, Dumper=Dumper, sort_keys=False, default_flow_style=False, allow_unicode=False,
                     width=200)
    return heading + body


def file_name(workload: Workload) -> str:
    return f"{workload.name}-{workload.kind}.yaml"
