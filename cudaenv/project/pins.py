"""What a lock actually pins, judged against the stack it claims.

uv pins whatever the indexes serve. Pointed at the wrong index (PyPI instead of PyTorch's cu126
index, say), it pins a framework build for another CUDA, and its ``nvidia-*`` / ``cuda-toolkit``
wheels with it: a lock that says CUDA 12.6 while installing CUDA 13 libraries, which needs a driver
the stack never asked for. The pins say which CUDA and cuDNN they carry; this module reads that and
names every contradiction, so such a lock is never written and an existing one fails the checks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# nvidia-cuda-runtime-cu12==12.4.127, nvidia-cuda-runtime==13.0.96, cuda-toolkit==13.0.3.0
_CUDA_PIN = re.compile(r"^(?P<name>nvidia-cuda-runtime(?:-cu(?P<suffix>[0-9]+))?|cuda-toolkit|"
                       r"nvidia-cuda-nvrtc(?:-cu[0-9]+)?)(?:\[[^\]]*\])?==(?P<major>[0-9]+)\.(?P<minor>[0-9]+)",
                       re.ASCII | re.IGNORECASE)
# nvidia-cudnn-cu12==9.1.0.70 (the -cuNN suffix names the CUDA major it is built for)
_CUDNN_PIN = re.compile(r"^nvidia-cudnn-cu(?P<cuda>[0-9]+)==(?P<major>[0-9]+)\.(?P<minor>[0-9]+)", re.ASCII | re.IGNORECASE)
# torch==2.6.0+cu126 / +cpu: the build's own word for what it was compiled against
_LOCAL_BUILD = re.compile(r"^(?P<name>torch|torchvision|torchaudio)==[^+;\s]+\+(?P<local>[A-Za-z0-9.]+)",
                          re.ASCII | re.IGNORECASE)


@dataclass(frozen=True)
class PinClash:
    pin: str  # the pinned requirement, as the lock has it
    carries: str  # what it carries ("CUDA 13.0", "cuDNN 9.24", "a CPU-only build")
    expected: str  # what the stack says ("CUDA 12.6")

    def __str__(self) -> str:
        return f"{self.pin} carries {self.carries}, but the stack is {self.expected}"


def _local_cuda(local: str) -> str | None:
    """``cu126`` -> ``12.6``, ``cu118`` -> ``11.8``, ``cu130`` -> ``13.0``."""
    match = re.fullmatch(r"cu([0-9]{2})([0-9])", local, re.ASCII)
    return f"{int(match.group(1))}.{match.group(2)}" if match else None


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _build_accepts(stack, text: str) -> bool:
    """Whether the framework build itself declares a range that holds this pin (JAX's CUDA extras ask
    for nvidia-cudnn-cu12>=9.10.2.21,<10 and uv rightly takes the newest 9.x): there only the major
    is the stack's to fix."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    name, _, version = text.partition("==")
    spec = {_normalized(n): s for n, s in getattr(stack, "nvidia_requires", ())}.get(_normalized(name.split("[")[0]))
    if not spec or spec.startswith("=="):
        return False
    try:
        return SpecifierSet(spec).contains(version.split("+")[0].split(";")[0].strip(), prereleases=True)
    except InvalidSpecifier:
        return False


# any NVIDIA CUDA library wheel (cuBLAS, cuDNN, NCCL, the runtime, ...) or the toolkit metapackage
_NVIDIA_LIBRARY = re.compile(r"^(?P<name>nvidia-[a-z0-9-]*?(?:cu[0-9]+|cuda[a-z0-9-]*|cudnn[a-z0-9-]*|cublas[a-z0-9-]*|"
                             r"nccl[a-z0-9-]*|cufft[a-z0-9-]*|curand[a-z0-9-]*|cusolver[a-z0-9-]*|cusparse[a-z0-9-]*|"
                             r"nvjitlink[a-z0-9-]*|nvtx[a-z0-9-]*|cufile[a-z0-9-]*)|cuda-toolkit|cuda-bindings|"
                             r"jax-cuda[0-9]+-(?:plugin|pjrt)|tensorflow\[and-cuda\])\b", re.ASCII | re.IGNORECASE)


def cpu_clashes(pinned) -> list[PinClash]:
    """For a CPU stack: every pin that brings CUDA (a +cuXYZ or ROCm framework build, an NVIDIA CUDA
    library wheel). A target without a GPU gets no CUDA library in its image."""
    clashes = []
    for pin in pinned:
        text = pin.strip()
        if (match := _LOCAL_BUILD.match(text)) and match.group("local").lower() != "cpu":
            local = match.group("local").lower()
            clashes.append(PinClash(text, f"a {'ROCm' if local.startswith('rocm') else 'CUDA'} build ({local})",
                                    "a CPU-only stack"))
        elif (match := _NVIDIA_LIBRARY.match(text)):
            clashes.append(PinClash(text, "a CUDA library", "a CPU-only stack"))
    return clashes


def pin_clashes(stack, pinned) -> list[PinClash]:
    """Every pin that contradicts the stack's CUDA major.minor or cuDNN major.minor (a CPU stack:
    every pin that brings CUDA at all)."""
    if getattr(stack, "cpu", False):
        return cpu_clashes(pinned)
    clashes: list[PinClash] = []
    cuda = stack.cuda
    cuda_major = cuda.split(".")[0]
    for pin in pinned:
        text = pin.strip()
        if match := _LOCAL_BUILD.match(text):
            local = match.group("local").lower()
            built_for = _local_cuda(local)
            on_cpu = local == "cpu" and not stack.framework("torch")  # torch asked for on the CPU, beside
            if on_cpu:                                               # a GPU JAX (PyTorch's /whl/cpu index)
                continue
            if local == "cpu" or local.startswith("rocm"):
                clashes.append(PinClash(text, f"a {'CPU-only' if local == 'cpu' else 'ROCm'} build", f"CUDA {cuda}"))
            elif built_for is not None and built_for != cuda:
                clashes.append(PinClash(text, f"CUDA {built_for}", f"CUDA {cuda}"))
        ranged = _build_accepts(stack, text)
        if match := _CUDA_PIN.match(text):
            carried = f"{match.group('major')}.{match.group('minor')}"
            if match.group("name").lower().startswith("cuda-toolkit") or "runtime" in match.group("name").lower():
                if carried != cuda and not (ranged and match.group("major") == cuda_major):
                    clashes.append(PinClash(text, f"CUDA {carried}", f"CUDA {cuda}"))
            elif match.group("major") != cuda_major:  # nvrtc: the major is what matters
                clashes.append(PinClash(text, f"CUDA {carried}", f"CUDA {cuda}"))
        if match := _CUDNN_PIN.match(text):
            if match.group("cuda") != cuda_major:
                clashes.append(PinClash(text, f"a cuDNN built for CUDA {match.group('cuda')}", f"CUDA {cuda}"))
            carried = f"{match.group('major')}.{match.group('minor')}"
            if stack.cudnn and carried != stack.cudnn and not (ranged and match.group("major") == stack.cudnn.split(".")[0]):
                clashes.append(PinClash(text, f"cuDNN {carried}", f"cuDNN {stack.cudnn}"))
    return clashes


def carried_cuda(pinned) -> tuple[str, str] | None:
    """(CUDA x.y, the pin that says so) that the pinned wheels carry: the CUDA toolkit metapackage or
    runtime wheel they install, or a framework build's +cuXYZ label. None when they carry none, or
    disagree among themselves (then no one CUDA is the truth)."""
    found: dict[str, str] = {}
    for pin in pinned:
        text = pin.strip()
        if (match := _CUDA_PIN.match(text)) and ("runtime" in match.group("name").lower()
                                                 or match.group("name").lower() == "cuda-toolkit"):
            found.setdefault(f"{match.group('major')}.{match.group('minor')}", text)
        elif (match := _LOCAL_BUILD.match(text)) and (xy := _local_cuda(match.group("local").lower())):
            found.setdefault(xy, text)
    return next(iter(found.items())) if len(found) == 1 else None


def clash_message(clashes: list[PinClash], stack, index: str | None) -> str:
    """One paragraph: what contradicts what, which index served it, and where to point instead."""
    own = stack.index_urls[0] if stack.index_urls else None
    where = f" The framework wheels came from {index}." if index else ""
    fix = (f" Point [build] framework_index / CUDAENV_FRAMEWORK_INDEX at {own} (or a mirror of exactly that "
           f"index), then run `cudaenv lock` again." if own else
           " Pin the CUDA variant in the project's requirements or use an index that serves this stack's build.")
    shown = "; ".join(str(c) for c in clashes[:4]) + (f"; and {len(clashes) - 4} more" if len(clashes) > 4 else "")
    if getattr(stack, "cpu", False):
        return (f"the locked packages bring CUDA into a CPU-only stack: {shown}.{where} A target without a GPU gets "
                "CPU builds only: point the framework index at its CPU index "
                f"({own or 'the CPU build'}) and run `cudaenv lock` again.")
    return f"the locked packages contradict the stack (CUDA {stack.cuda}" + (
        f", cuDNN {stack.cudnn}" if stack.cudnn else "") + f"): {shown}.{where}{fix}"
