"""Does an already-resolved stack run on a host? The verdict behind ``cudaenv check``.

The same three axes as resolution, applied to one fixed stack: the driver runs its CUDA (natively,
through minor-version compatibility — with its caveat — or through forward compatibility when the
image carries cuda-compat), the driver branch still supports every GPU's architecture, and every
GPU is in the toolkit's range and in each framework build's SM list.
"""

from __future__ import annotations

from dataclasses import dataclass

from cudaenv.matrix import Matrix
from cudaenv.resolver import driver as drv
from cudaenv.resolver import gpu as gpu_rules
from cudaenv.resolver.model import Host, Stack
from cudaenv.resolver.resolve import host_problems, ptx_fails_text, ptx_jit_caveat


@dataclass(frozen=True)
class Verdict:
    compatible: bool
    mode: str | None  # native / minor-version / forward; None when incompatible or the driver is unknown
    reasons: tuple[str, ...]  # why it cannot run
    caveats: tuple[str, ...]  # why it runs with limits

    def as_dict(self) -> dict:
        return {"compatible": self.compatible, "mode": self.mode, "reasons": list(self.reasons),
                "caveats": list(self.caveats)}


WRONG_CPU = "the stack is built for"  # how a verdict's CPU-architecture reason starts


def _sm(cc: str) -> str:
    return "sm_" + cc.replace(".", "")


def _matrix_build(matrix: Matrix, framework: str, version: str | None, sass, ptx, platform: str = "x86_64"):
    """The matrix's build behind a stack's framework, for what the stack does not record (where its
    PTX is reported to fail); None for a build the matrix no longer has."""
    from cudaenv.matrix.builds import framework_builds

    return next((b for b in framework_builds(matrix, platform).get(framework, ())
                 if b.version == version and b.sass == tuple(sass) and b.ptx == tuple(ptx)), None)


def stack_build_runs_on(matrix: Matrix, stack: Stack, framework: str, sass, ptx, cc: str, *,
                        ptx_jit: bool) -> bool | None:
    """``build_runs_on`` for one of a stack's builds, with the matrix's reports of where its PTX
    fails: the one rule check_stack and the exports' placement both apply."""
    build = _matrix_build(matrix, framework, stack.framework(framework), sass, ptx, stack.arch)
    return gpu_rules.build_runs_on(sass, ptx, cc, ptx_jit=ptx_jit,
                                   ptx_unusable_on=build.ptx_unusable_on if build else ())


def check_stack(matrix: Matrix, stack: Stack, host: Host) -> Verdict:
    reasons: list[str] = [p.message for p in host_problems(matrix, host)]
    if host.platform != stack.arch:  # an image runs on the CPU it was built for, whatever the GPU
        reasons.append(f"{WRONG_CPU} {stack.arch} and the host's CPU is {host.platform}: its image and "
                       f"wheels do not run there (lock the project for that CPU: [target] arch = \"{host.platform}\" in "
                       f"cudaenv.toml, then `cudaenv lock`)")
    caveats: list[str] = []
    mode = None
    if stack.cuda not in matrix.cuda_minors:
        return Verdict(False, None, (f"the stack's CUDA {stack.cuda} is not a CUDA release in this matrix "
                                     "(written by a newer cudaenv or matrix? run `cudaenv matrix check`)",), ())
    if host.driver is None:
        # nothing to vouch for: on a machine without a driver (a CI runner) the honest answer is "no"
        reasons.append("no NVIDIA driver found or declared (pass --driver, or set CUDAENV_DRIVER_VERSION): "
                       f"the stack needs a driver {drv.requirement_text(stack.min_driver, stack.min_driver_compat)}")
    else:
        forward_ok = stack.driver_compatibility == drv.FORWARD  # only an image that carries cuda-compat
        mode = drv.driver_mode(matrix, host.driver, stack.cuda, all_datacenter=forward_ok and host.all_datacenter)
        if mode is None:
            support = drv.driver_support(matrix, host.driver)
            reasons.append(f"driver {host.driver} runs {support.cuda_text}; this stack is CUDA {stack.cuda}: the driver "
                           f"must be {drv.requirement_text(stack.min_driver, stack.min_driver_compat)}")
        elif mode == drv.MINOR_VERSION:
            caveats.append(f"runs through minor-version compatibility: {drv.MINOR_VERSION_LIMITS}")
        elif mode == drv.FORWARD:
            caveats.append("runs through forward compatibility (cuda-compat in the image; data-center GPUs only)")
    ptx_jit = mode != drv.MINOR_VERSION
    for gpu in host.gpus:
        if not gpu_rules.toolkit_runs_on(matrix, stack.cuda, gpu.compute_capability, ptx_jit=ptx_jit):
            bounds = gpu_rules.toolkit_range(matrix, stack.cuda)
            span = f" ({_sm(bounds[0])}–{_sm(bounds[1])})" if bounds else ""
            reasons.append(f"GPU {gpu.label} cannot run the libraries of CUDA {stack.cuda}{span}")
            continue
        if stack.flavor == "devel" and not gpu_rules.toolkit_supports(matrix, stack.cuda, gpu.compute_capability):
            caveats.append(_devel_caveat(matrix, stack.cuda, gpu))
        for framework, sass, ptx in stack.gpu_targets:
            build = _matrix_build(matrix, framework, stack.framework(framework), sass, ptx, stack.arch)
            unusable = build.ptx_unusable_on if build else ()
            runs = gpu_rules.build_runs_on(sass, ptx, gpu.compute_capability, ptx_jit=ptx_jit, ptx_unusable_on=unusable)
            if runs is False:
                built = ", ".join(_sm(c) for c in sass) + "".join(f", {_sm(c)} PTX" for c in ptx)
                fails = (f": {ptx_fails_text(build, gpu.compute_capability)}"
                         if build and gpu.compute_capability in unusable and ptx_jit else "")
                reasons.append(f"GPU {gpu.label} is not in the {framework} {stack.framework(framework)} build's "
                               f"SM list ({built}){fails}")
            elif runs is None:
                caveats.append(f"the {framework} build's SM list is not recorded: {gpu.label} not checked")
            elif gpu_rules.only_through_ptx(sass, ptx, gpu.compute_capability):
                caveat = ptx_jit_caveat(framework, stack.framework(framework), sass, ptx, gpu)
                if caveat not in caveats:  # eight of one board: one caveat
                    caveats.append(caveat)
                    if build is not None and build.gpu_route:  # what runs it natively there, as resolve says
                        caveats.append(build.gpu_route)
    return Verdict(compatible=not reasons, mode=mode if not reasons else None, reasons=tuple(reasons),
                   caveats=tuple(caveats))


def _devel_caveat(matrix, cuda: str, gpu) -> str:
    """What code compiled in a devel image does on a GPU its nvcc cannot target: binary
    compatibility covers a newer minor of a major nvcc knows; a newer major runs only PTX."""
    newest = gpu_rules.toolkit_range(matrix, cuda)[1]  # check_stack has refused a CUDA the matrix lacks
    head = f"nvcc of CUDA {cuda} cannot target {gpu.label} natively; "
    if newest.split(".")[0] == gpu.compute_capability.split(".")[0]:
        return head + f"code compiled in this image for {_sm(newest)} runs on it by binary compatibility"
    target = f"compute_{newest.replace('.', '')}"
    return head + (f"code compiled in this image runs on it only as PTX the driver JIT-compiles (build with "
                   f"{target} PTX, e.g. -gencode arch={target},code={target})")
