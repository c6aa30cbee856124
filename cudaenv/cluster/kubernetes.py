"""Kubernetes nodes (``kubectl get nodes -o json``) -> node facts from GPU Feature Discovery labels.

Why these keys and formats (NVIDIA/k8s-device-plugin, where GFD lives since v0.15.0;
``internal/lm/nvml.go`` ``newVersionLabeler`` and ``internal/lm/resource.go``; the label table in
``docs/gpu-feature-discovery/README.md``):

* driver: ``nvidia.com/cuda.driver-version.{major,minor,revision,full}`` (added in v0.15.0,
  commit eba41da "align cuda driver and runtime labels with the NFD kernel version label
  format") and the older ``nvidia.com/cuda.driver.{major,minor,rev}`` (every GFD release since
  1.0.0-beta, NVIDIA/gpu-feature-discovery commit bcac5a5 "Change label format"), which GFD still
  writes, marked deprecated. Each value is the driver version's own dot-separated text split (so ``05``
  keeps its zero), and the revision is the empty string for a two-part version (GFD's README
  example: ``cuda.driver.minor: "06"``, ``cuda.driver.rev: ""``).
* ``nvidia.com/cuda.runtime-version.{major,minor,full}`` / ``nvidia.com/cuda.runtime.{major,minor}``:
  despite the name, NVML's CUDA *driver* version, the newest CUDA the driver supports.
* ``nvidia.com/gpu.compute.{major,minor}``: the compute capability NVML reports (left out when
  NVML reports major 0); ``nvidia.com/gpu.product``: NVML's name with spaces as ``-``, plus
  ``-MIG-<profile>`` under the single MIG strategy and ``-SHARED`` when time-sliced without a
  rename; ``nvidia.com/gpu.count``: the number of devices of the resource.
* ``status.capacity`` / ``status.allocatable`` ``["nvidia.com/gpu"]``: the device plugin's count.

GFD labels a node as one kind of GPU (one product, one capability), which is what a node pool is.
Every value is checked against its grammar; a value that is not one (``５３５``, a number of
hundreds of digits) is bad input, named with its file, node and label, never a guess.
"""

from __future__ import annotations

import re

from cudaenv.cluster.facts import KUBERNETES, NodeFacts, NodesInputError, cpu_arch

PREFIX = "nvidia.com/"
NEW_DRIVER = ("cuda.driver-version.major", "cuda.driver-version.minor", "cuda.driver-version.revision")
NEW_DRIVER_FULL = "cuda.driver-version.full"
OLD_DRIVER = ("cuda.driver.major", "cuda.driver.minor", "cuda.driver.rev")
NEW_CUDA = ("cuda.runtime-version.major", "cuda.runtime-version.minor")
NEW_CUDA_FULL = "cuda.runtime-version.full"
OLD_CUDA = ("cuda.runtime.major", "cuda.runtime.minor")
COMPUTE = ("gpu.compute.major", "gpu.compute.minor")
PRODUCT = "gpu.product"
COUNT = "gpu.count"
RESOURCE = "nvidia.com/gpu"
# the kubelet's own label (GOARCH of the node: amd64, arm64); the beta key is what kubelets before
# 1.14 wrote, and some still do beside the current one
ARCH_LABELS = ("kubernetes.io/arch", "beta.kubernetes.io/arch")
_ARCH = re.compile(r"[a-z0-9_]{1,32}")

_PART = re.compile(r"[0-9]{1,5}")  # a driver or CUDA component: 535, 104, 05, 12
_CC_PART = re.compile(r"[0-9]{1,2}")
_COUNT = re.compile(r"[0-9]{1,5}")
# a Kubernetes label value (apimachinery validation.IsValidLabelValue): 63 characters at most
_LABEL_VALUE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
# a node name is a DNS subdomain (RFC 1123, lower case, 253 characters at most)
_NODE_NAME = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*")


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:45]}… ({len(text)} chars)"


class _Node:
    """One node object being read, so every error names the file, the node and the field."""

    def __init__(self, file: str, where: str, obj) -> None:
        self.file, self.where = file, where
        if not isinstance(obj, dict):
            self.fail(where, f"{where}: expected a Node object, got {type(obj).__name__}")
        kind = obj.get("kind", "Node")
        if kind != "Node":
            self.fail(f"{where}.kind", f"{where}: expected kind Node, got {_shown(kind)}")
        metadata = obj.get("metadata")
        if not isinstance(metadata, dict):
            self.fail(f"{where}.metadata", f"{where}.metadata: expected an object with the node's name")
        name = metadata.get("name")
        if not isinstance(name, str) or len(name) > 253 or not _NODE_NAME.fullmatch(name):
            self.fail(f"{where}.metadata.name", f"{where}.metadata.name: expected a node name (DNS subdomain), "
                      f"got {_shown(name)}")
        self.name = name
        labels = metadata.get("labels")
        labels = {} if labels is None else labels
        if not isinstance(labels, dict):
            self.fail(f"{where}.metadata.labels", f"node {name}: metadata.labels: expected an object, got "
                      f"{type(labels).__name__}")
        self.labels = labels
        status = obj.get("status")
        status = {} if status is None else status
        if not isinstance(status, dict):
            self.fail(f"{where}.status", f"node {name}: status: expected an object, got {type(status).__name__}")
        self.status = status
        from cudaenv.cluster.facts import oversized_integer

        huge = oversized_integer(obj)
        if huge is not None:
            self.fail(f"{where}{huge}", f"node {name}: {huge.lstrip('.')}: a number of more digits than can be read")

    def fail(self, field: str, message: str):
        raise NodesInputError(self.file, field, message)

    def label(self, key: str, grammar: re.Pattern, expected: str, *, empty_ok: bool = False) -> str | None:
        full = PREFIX + key
        if full not in self.labels:
            return None
        value = self.labels[full]
        if isinstance(value, str) and value == "" and empty_ok:
            return ""
        if not isinstance(value, str) or not grammar.fullmatch(value) or not value.isascii():
            self.fail(f'{self.where}.metadata.labels["{full}"]',
                      f"node {self.name}: label {full}: expected {expected}, got {_shown(value)}")
        return value

    def arch(self) -> str | None:
        """The node's CPU architecture from the kubelet's label; two labels that differ are bad input."""
        found = {}
        for key in ARCH_LABELS:
            if key in self.labels:
                value = self.labels[key]
                if not isinstance(value, str) or not _ARCH.fullmatch(value):
                    self.fail(f'{self.where}.metadata.labels["{key}"]',
                              f"node {self.name}: label {key}: expected a CPU architecture like amd64 or arm64, "
                              f"got {_shown(value)}")
                found[key] = value
        if len(set(found.values())) > 1:
            self.fail(f'{self.where}.metadata.labels["{ARCH_LABELS[1]}"]',
                      f"node {self.name}: label {ARCH_LABELS[1]} says {found[ARCH_LABELS[1]]}, but {ARCH_LABELS[0]} "
                      f"says {found[ARCH_LABELS[0]]}")
        return cpu_arch(next(iter(found.values()))) if found else None

    def quantity(self, section: str) -> int | None:
        table = self.status.get(section)
        if table is None:
            return None
        if not isinstance(table, dict):
            self.fail(f"{self.where}.status.{section}", f"node {self.name}: status.{section}: expected an object")
        if RESOURCE not in table:
            return None
        value = table[RESOURCE]
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 100000:
            return value
        if not isinstance(value, str) or not _COUNT.fullmatch(value) or not value.isascii():
            self.fail(f'{self.where}.status.{section}["{RESOURCE}"]',
                      f"node {self.name}: status.{section}[{RESOURCE}]: expected a whole number of GPUs, "
                      f"got {_shown(value)}")
        return int(value)


def _version(node: _Node, keys: tuple[str, ...], what: str) -> str | None:
    """major.minor[.rev] from component labels, keeping each component's spelling."""
    parts = [node.label(k, _PART, f"the {what}'s digits like 535 or 05", empty_ok=(i == 2))
             for i, k in enumerate(keys)]
    if all(p is None for p in parts):
        return None
    major, minor = parts[0], parts[1]
    if not major or not minor:
        missing = PREFIX + (keys[0] if not major else keys[1])
        node.fail(f'{node.where}.metadata.labels["{missing}"]',
                  f"node {node.name}: label {missing}: missing or empty beside the other {what} labels")
    return ".".join(p for p in (major, minor, *parts[2:]) if p)


def _agree(node: _Node, values: list[tuple[str, str | None]], what: str) -> str | None:
    """The one value that every label set which carries it states; two that differ are bad input."""
    given = [(key, value) for key, value in values if value is not None]
    for key, value in given[1:]:
        if value != given[0][1]:
            node.fail(f'{node.where}.metadata.labels["{PREFIX + key}"]',
                      f"node {node.name}: label {PREFIX + key} says {what} {value}, but "
                      f"{PREFIX + given[0][0]} says {given[0][1]}")
    return given[0][1] if given else None


def node_facts(file: str, where: str, obj) -> NodeFacts:
    node = _Node(file, where, obj)
    full = node.label(NEW_DRIVER_FULL, re.compile(r"[0-9]{1,5}(?:\.[0-9]{1,5}){1,2}"),
                      "a driver version like 535.154.05")
    new = _version(node, NEW_DRIVER, "driver version")
    old = _version(node, OLD_DRIVER, "driver version")
    driver = _agree(node, [(NEW_DRIVER_FULL, full), (NEW_DRIVER[0], new), (OLD_DRIVER[0], old)], "driver")
    cuda_full = node.label(NEW_CUDA_FULL, re.compile(r"[0-9]{1,3}\.[0-9]{1,3}"), "a CUDA version like 12.2")
    cuda = _agree(node, [(NEW_CUDA_FULL, cuda_full), (NEW_CUDA[0], _version(node, NEW_CUDA, "CUDA version")),
                         (OLD_CUDA[0], _version(node, OLD_CUDA, "CUDA version"))], "CUDA")
    cc_parts = [node.label(k, _CC_PART, "a compute capability component like 8") for k in COMPUTE]
    if (cc_parts[0] is None) != (cc_parts[1] is None):
        missing = PREFIX + COMPUTE[0 if cc_parts[0] is None else 1]
        node.fail(f'{where}.metadata.labels["{missing}"]',
                  f"node {node.name}: label {missing}: missing beside the other compute capability label")
    cc = f"{int(cc_parts[0])}.{int(cc_parts[1])}" if cc_parts[0] is not None else None
    product = node.label(PRODUCT, _LABEL_VALUE, "a GPU product like NVIDIA-A100-SXM4-80GB")
    count_text = node.label(COUNT, _COUNT, "a whole number of GPUs")
    scheme = "+".join(s for s, present in (("new", full is not None or new is not None),
                                           ("old", old is not None)) if present) or None
    unknown = []
    capacity, allocatable = node.quantity("capacity"), node.quantity("allocatable")
    gfd = any(k.startswith(PREFIX + p) for k in node.labels if isinstance(k, str)
              for p in ("cuda.", "gpu.compute.", PRODUCT, COUNT))
    if not gfd and (capacity or allocatable):
        unknown.append("driver and GPU model: the node offers nvidia.com/gpu but carries no GPU Feature Discovery "
                       "labels (deploy GFD: the GPU Operator, or the device plugin's chart with gfd.enabled=true)")
    elif gfd and driver is None:
        unknown.append("driver: no nvidia.com/cuda.driver-version.* or nvidia.com/cuda.driver.* label")
    if gfd and cc is None and product is None:
        unknown.append("GPU model: no nvidia.com/gpu.product or nvidia.com/gpu.compute.* label")
    return NodeFacts(name=node.name, source=KUBERNETES, driver=driver, cuda_driver_api=cuda, product=product,
                     compute_capability=cc, gpu_count=int(count_text) if count_text is not None else None,
                     capacity=capacity, allocatable=allocatable, labels=scheme, unknown=tuple(unknown),
                     arch=node.arch())


def read_kubernetes(file: str, document: dict) -> tuple[NodeFacts, ...]:
    """A ``List``/``NodeList`` of nodes, or one ``Node``."""
    kind = document.get("kind")
    if kind == "Node":
        return (node_facts(file, "Node", document),)
    items = document.get("items")
    if not isinstance(items, list):
        raise NodesInputError(file, "items", f"items: expected the list of Node objects of a {kind}")
    nodes: list[NodeFacts] = []
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        facts = node_facts(file, f"items[{index}]", item)
        if facts.name in first:  # two answers for one node: which one to judge cannot be known
            raise NodesInputError(file, f"items[{index}].metadata.name",
                                  f"node {facts.name}: listed twice (items[{first[facts.name]}] and items[{index}]); "
                                  "expected each node once, as `kubectl get nodes -o json` prints them")
        first[facts.name] = index
        nodes.append(facts)
    return tuple(nodes)
