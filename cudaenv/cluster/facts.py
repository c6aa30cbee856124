"""What was read about one node, before any verdict: the facts, where they came from, and what
the source cannot say. Frozen and JSON-ready, so the report shows exactly what was judged."""

from __future__ import annotations

from dataclasses import dataclass

from cudaenv.errors import UserError

KUBERNETES = "kubernetes"
SLURM = "slurm"

# CPU architecture names as the kernel (Slurm's Arch=, `uname -m`) spells them; Kubernetes'
# kubernetes.io/arch uses Go's GOARCH spelling (amd64, arm64) for the same machines.
_GOARCH = {"amd64": "x86_64", "arm64": "aarch64"}


def cpu_arch(value: str) -> str:
    """One spelling for a node's CPU architecture, so a GOARCH label and a kernel name compare."""
    return _GOARCH.get(value, value)


def goarch(arch: str) -> str:
    """The kubernetes.io/arch value for a kernel architecture name (``x86_64`` -> ``amd64``)."""
    return next((go for go, kernel in _GOARCH.items() if kernel == arch), arch)


class NodesInputError(UserError):
    """Bad input in a nodes file (exit 2): one line naming the file, the node and the field."""

    def __init__(self, file: str, field: str | None, message: str) -> None:
        super().__init__(f"{file}: {message}")
        self.file = file
        self.field = field


@dataclass(frozen=True)
class NodeFacts:
    name: str
    source: str  # kubernetes | slurm
    driver: str | None = None  # NVIDIA driver version, e.g. "535.154.05"
    cuda_driver_api: str | None = None  # the CUDA version the driver supports (GFD's cuda.runtime-version)
    product: str | None = None  # GPU product as the source spells it ("NVIDIA-A100-80GB-PCIe", GRES type "a100")
    compute_capability: str | None = None  # "8.0"
    gpu_count: int | None = None  # GFD's gpu.count, or Slurm's GRES gpu count
    capacity: int | None = None  # status.capacity["nvidia.com/gpu"] (Kubernetes)
    allocatable: int | None = None  # status.allocatable["nvidia.com/gpu"] (Kubernetes)
    labels: str | None = None  # which GFD label set was read: "new", "old", "new+old"; None when none
    features: tuple[str, ...] = ()  # Slurm node features (active ones where the record has them)
    gres: str | None = None  # Slurm GRES as recorded
    mapped_feature: str | None = None  # the [cluster.slurm.features] entry that gave driver and GPU
    unknown: tuple[str, ...] = ()  # what the source cannot tell, and why
    arch: str | None = None  # CPU architecture as the kernel names it (x86_64, aarch64); None: not stated

    @property
    def has_gpu(self) -> bool:
        """Whether anything says this node has an NVIDIA GPU."""
        counts = [c for c in (self.gpu_count, self.capacity) if c is not None]
        if counts:
            return any(c > 0 for c in counts)
        return bool(self.product or self.compute_capability or self.driver)

    def as_dict(self) -> dict:
        data = {"source": self.source, "driver": self.driver, "cuda_driver_api": self.cuda_driver_api,
                "gpu_product": self.product, "compute_capability": self.compute_capability,
                "gpu_count": self.gpu_count}
        if self.source == KUBERNETES:
            data.update({"capacity": self.capacity, "allocatable": self.allocatable, "gfd_labels": self.labels})
        else:
            data.update({"features": list(self.features), "gres": self.gres, "mapped_feature": self.mapped_feature})
        data["arch"] = self.arch
        data["unknown"] = list(self.unknown)
        return data


class Oversized(str):
    """A JSON integer longer than Python converts (``sys.get_int_max_str_digits``, 4300 digits by
    default): kept as its text, so the reader that meets it names its node instead of crashing."""


def oversized_integer(value) -> str | None:
    """Where in ``value`` (a JSON path suffix like ``.status.capacity.x``) an oversized integer sits.
    Iterative: a document nested as deep as the JSON parser allows must not exhaust the stack here."""
    pending = [("", value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, Oversized):
            return path or "."
        if isinstance(item, dict):
            pending.extend((f"{path}.{key}", child) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            pending.extend((f"{path}[{index}]", child) for index, child in reversed(list(enumerate(item))))
    return None
