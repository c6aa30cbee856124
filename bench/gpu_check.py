#!/usr/bin/env python3
"""Hold cudaenv against a real NVIDIA driver: detection, `top` and the matrix (issue #27).

Run on a machine with a GPU, a driver, PyTorch, JAX and nvidia-ml-py (no Docker, no network
needed), from the repository root:

    python bench/gpu_check.py --out DIR [--deps DIR]

``--deps`` names a directory of cudaenv's pure-Python dependencies (``pip install --target``),
appended to ``sys.path`` of every cudaenv call so a machine without them still runs cudaenv from
source. Every raw answer (nvidia-smi, /proc, NVML, the frameworks, cudaenv's own ``--json``) is
written to DIR before anything is compared, so a failed comparison never loses a recording.
``DIR/comparisons.json`` lists each check with what cudaenv said, what the driver or framework
said, and whether they agree; the script exits 1 when any check disagrees.

The recordings become fixtures (tests/fixtures/gpu-recorded/), read by the unit tests.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs cudaenv's CLI from this checkout, with the dependency directory appended to sys.path.
LAUNCH = """
import runpy, sys
deps = sys.argv.pop(1)
if deps:
    sys.path.append(deps)
sys.path.insert(0, sys.argv.pop(1))
sys.argv[0] = "cudaenv"
runpy.run_module("cudaenv", run_name="__main__")
"""

# A torch workload that keeps the GPU busy: prints "ready" once the first kernels finished.
WORKLOAD = """
import sys, time, torch
x = torch.randn(8192, 8192, device="cuda")
y = x @ x
torch.cuda.synchronize()
print("ready", flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    y = x @ x
    torch.cuda.synchronize()
print("done", flush=True)
"""

FRAMEWORKS_TORCH = """
import json, torch
info = {"version": torch.__version__, "cuda": torch.version.cuda, "arch_list": torch.cuda.get_arch_list(),
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "is_available": torch.cuda.is_available(), "device_count": torch.cuda.device_count(),
        "devices": []}
for i in range(torch.cuda.device_count()):
    p = torch.cuda.get_device_properties(i)
    info["devices"].append({"name": p.name, "capability": list(torch.cuda.get_device_capability(i)),
                            "total_memory": p.total_memory})
try:
    info["driver_api_version"] = torch.cuda.driver_version() if hasattr(torch.cuda, "driver_version") else None
except Exception as exc:
    info["driver_api_version"] = repr(exc)
print(json.dumps(info))
"""

FRAMEWORKS_JAX = """
import json, importlib.metadata as md
info = {"distributions": {}}
for dist in md.distributions():
    name = (dist.metadata["Name"] or "").lower()
    if name.startswith(("jax", "nvidia-", "cuda-", "torch", "triton", "nvidia_")):
        info["distributions"][name] = dist.version
import jax, jaxlib
info["version"] = jax.__version__
info["jaxlib"] = jaxlib.__version__
info["backend"] = jax.default_backend()
info["devices"] = [{"kind": d.device_kind, "platform": d.platform,
                    "compute_capability": getattr(d, "compute_capability", None)} for d in jax.devices()]
try:
    from jax._src.lib import cuda_versions
    info["cuda_versions"] = {k: (getattr(cuda_versions, k)() if callable(getattr(cuda_versions, k, None)) else None)
                             for k in ("cuda_runtime_get_version", "cuda_runtime_build_version",
                                       "cudnn_get_version", "cudnn_build_version", "cuda_driver_get_version",
                                       "cufft_get_version", "cublas_get_version", "cusparse_get_version",
                                       "cusolver_get_version")}
except Exception as exc:
    info["cuda_versions"] = repr(exc)
import jax.numpy as jnp
info["sum"] = float(jnp.ones((1024, 1024)).sum())
print(json.dumps(info))
"""


def run(argv: list[str], timeout: float = 120, env: dict | None = None) -> dict:
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=timeout,
                              env={**os.environ, **(env or {})})
        return {"argv": argv, "rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr,
                "seconds": round(time.monotonic() - started, 2)}
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"argv": argv, "rc": None, "stdout": "", "stderr": repr(exc), "seconds": round(time.monotonic() - started, 2)}


def cudaenv(deps: str, *args: str, timeout: float = 120) -> dict:
    result = run([sys.executable, "-c", LAUNCH, deps, str(ROOT), *args], timeout=timeout,
                 env={"CUDAENV_NO_CACHE": "1", "NO_COLOR": "1"})
    try:
        result["json"] = json.loads(result["stdout"])
    except ValueError:
        result["json"] = None
    return result


def nvml_recording() -> dict:
    """Every NVML answer cudaenv asks for, in the shape tests/support/fake_nvml.py replays."""
    if os.environ.get("CUDAENV_NVML_MODULE"):  # a dry run here, on tests/support/fake_nvml.py
        import importlib.util
        spec = importlib.util.spec_from_file_location("pynvml_standin", os.environ["CUDAENV_NVML_MODULE"])
        pynvml = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(pynvml)
    else:
        import pynvml

    def text(v):
        return v.decode() if isinstance(v, bytes) else v

    def maybe(call, *args):
        try:
            return call(*args)
        except Exception as exc:  # NVMLError (not supported on this board) or a call this release lacks
            return {"nvml_error": repr(exc)}

    pynvml.nvmlInit()
    try:
        rec = {"driver_version": text(pynvml.nvmlSystemGetDriverVersion()),
               "cuda_driver_version": pynvml.nvmlSystemGetCudaDriverVersion(),
               "nvml_version": text(maybe(lambda: pynvml.nvmlSystemGetNVMLVersion())), "gpus": []}
        for index in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(index)
            util = maybe(pynvml.nvmlDeviceGetUtilizationRates, h)
            mem = maybe(pynvml.nvmlDeviceGetMemoryInfo, h)
            gpu = {
                "name": text(pynvml.nvmlDeviceGetName(h)),
                "uuid": text(pynvml.nvmlDeviceGetUUID(h)),
                "utilization": None if isinstance(util, dict) else {"gpu": util.gpu, "memory": util.memory},
                "memory": None if isinstance(mem, dict) else {"total": mem.total, "free": mem.free, "used": mem.used},
                "power_usage_mw": maybe(pynvml.nvmlDeviceGetPowerUsage, h),
                "enforced_power_limit_mw": maybe(pynvml.nvmlDeviceGetEnforcedPowerLimit, h),
                "temperature_c": maybe(pynvml.nvmlDeviceGetTemperature, h, pynvml.NVML_TEMPERATURE_GPU),
                "compute_processes": [{"pid": p.pid, "usedGpuMemory": p.usedGpuMemory}
                                      for p in (maybe(pynvml.nvmlDeviceGetComputeRunningProcesses, h) or [])
                                      if not isinstance(p, str)],
                "graphics_processes": [{"pid": p.pid, "usedGpuMemory": p.usedGpuMemory}
                                       for p in (maybe(pynvml.nvmlDeviceGetGraphicsRunningProcesses, h) or [])
                                       if not isinstance(p, str)],
                "cuda_compute_capability": list(pynvml.nvmlDeviceGetCudaComputeCapability(h)),
                "mig_mode": maybe(lambda: pynvml.nvmlDeviceGetMigMode(h)),
                "brand": maybe(lambda: pynvml.nvmlDeviceGetBrand(h)),
                "pci_device_id": maybe(lambda: hex(pynvml.nvmlDeviceGetPciInfo(h).pciDeviceId)),
            }
            for key in ("power_usage_mw", "enforced_power_limit_mw", "temperature_c"):
                if isinstance(gpu[key], dict):  # not reported: the recording's null, as fake_nvml replays it
                    gpu[key] = None
            rec["gpus"].append(gpu)
        return rec
    finally:
        pynvml.nvmlShutdown()


class Checks:
    def __init__(self) -> None:
        self.rows: list[dict] = []

    def same(self, what: str, cudaenv_says, truth_says, truth_from: str) -> None:
        self.rows.append({"check": what, "cudaenv": cudaenv_says, "truth": truth_says, "truth_from": truth_from,
                          "agree": cudaenv_says == truth_says})

    def holds(self, what: str, condition: bool, detail) -> None:
        self.rows.append({"check": what, "detail": detail, "agree": bool(condition)})


def arch_to_cc(entry: str) -> tuple[str, str]:
    """``sm_90`` -> ("sass", "9.0"); ``compute_90`` -> ("ptx", "9.0"); ``sm_100a`` -> ("sass", "10.0a")."""
    kind, _, digits = entry.partition("_")
    suffix = ""
    while digits and not digits[-1].isdigit():
        suffix = digits[-1] + suffix
        digits = digits[:-1]
    return ("ptx" if kind == "compute" else "sass"), f"{digits[:-1]}.{digits[-1]}{suffix}"


def compare_matrix(checks: Checks, torch_info: dict | None, jax_info: dict | None, nvml: dict | None,
                   deps: str) -> dict:
    """Matrix rows for what is installed, next to what the frameworks and the driver report."""
    sys.path.insert(0, str(ROOT))
    from cudaenv.matrix import load_matrix

    matrix = load_matrix(use_cache=False)
    found: dict = {}
    if torch_info:
        public = torch_info["version"].split("+")[0]
        row = next((r for r in matrix.torch if r.version == public), None)
        cuda_xy = ".".join((torch_info.get("cuda") or "").split(".")[:2])
        variant = next((v for v in row.variants if v.cuda == cuda_xy), None) if row else None
        sass = sorted({arch_to_cc(a)[1] for a in torch_info["arch_list"] if arch_to_cc(a)[0] == "sass"},
                      key=lambda v: [int(p.rstrip("abf")) for p in v.split(".")])
        ptx = sorted({arch_to_cc(a)[1] for a in torch_info["arch_list"] if arch_to_cc(a)[0] == "ptx"})
        found["torch"] = {"row": public if row else None, "variant": cuda_xy if variant else None,
                          "pypi_cuda": row.pypi_cuda if row else None,
                          "matrix_compute_capabilities": list(variant.compute_capabilities) if variant else None,
                          "matrix_ptx": list(variant.ptx) if variant else None,
                          "matrix_cudnn": variant.cudnn if variant else None,
                          "wheel_sass": sass, "wheel_ptx": ptx}
        checks.holds(f"torch {public} is a matrix release", row is not None, public)
        checks.holds(f"torch {public} has a CUDA {cuda_xy} build in the matrix", variant is not None, cuda_xy)
        if variant is not None:
            checks.same(f"torch {public}+cu{cuda_xy} compute capabilities (SASS)", list(variant.compute_capabilities),
                        sass, "torch.cuda.get_arch_list()")
            checks.same(f"torch {public}+cu{cuda_xy} PTX entries", list(variant.ptx), ptx, "torch.cuda.get_arch_list()")
            if variant.cudnn and torch_info.get("cudnn"):
                got = int(torch_info["cudnn"])
                dotted = f"{got // 10000}.{(got % 10000) // 100}.{got % 100}" if got >= 90000 else f"{got // 1000}.{(got % 1000) // 100}.{got % 100}"
                checks.same(f"torch {public}+cu{cuda_xy} cuDNN major.minor", ".".join(variant.cudnn.split(".")[:2]),
                            ".".join(dotted.split(".")[:2]), "torch.backends.cudnn.version()")
    if jax_info and isinstance(jax_info, dict) and jax_info.get("version"):
        row = next((r for r in matrix.jax if r.version == jax_info["version"]), None)
        plugin = {k: v for k, v in jax_info.get("distributions", {}).items() if "plugin" in k or "pjrt" in k}
        found["jax"] = {"row": row.version if row else None, "jaxlib_matrix": row.jaxlib if row else None,
                        "jaxlib_installed": jax_info.get("jaxlib"), "plugins": plugin,
                        "variants": [{"extra": v.extra, "cuda": str(v.cuda), "cudnn": str(v.cudnn) if v.cudnn else None,
                                      "compute_capabilities": list(v.compute_capabilities), "requires": dict(v.requires)}
                                     for v in (row.variants if row else ())],
                        "cuda_versions": jax_info.get("cuda_versions")}
        checks.holds(f"jax {jax_info['version']} is a matrix release", row is not None, jax_info["version"])
        if row is not None:
            checks.same(f"jax {row.version} jaxlib", row.jaxlib, jax_info.get("jaxlib"), "jaxlib.__version__")
            built = (jax_info.get("cuda_versions") or {}).get("cudnn_build_version") if isinstance(
                jax_info.get("cuda_versions"), dict) else None
            majors = {name.split("cuda")[1].split("-")[0] for name in plugin if "cuda" in name}
            for variant in row.variants:
                if built and variant.cudnn is not None and variant.extra.startswith(tuple(f"cuda{m}" for m in majors)):
                    floor = f"{built // 10000}.{(built % 10000) // 100}"
                    below = f"{built // 10000}.{(built % 10000) // 100 - 1}.99"
                    # XLA refuses a runtime cuDNN of a lower minor than the plugin was built with
                    checks.holds(f"jax {row.version} [{variant.extra}] cuDNN range starts at the plugin's build {floor}",
                                 variant.cudnn.contains(floor) and not variant.cudnn.contains(below), str(variant.cudnn))
    if nvml:
        branch_no = int(nvml["driver_version"].split(".")[0])
        branch = matrix.driver_branch(branch_no)
        reported = nvml["cuda_driver_version"]
        xy = f"{reported // 1000}.{(reported % 1000) // 10}"
        found["driver"] = {"branch": branch_no, "matrix_max_cuda": branch.max_cuda if branch else None,
                           "driver_reports_cuda": xy,
                           "matrix_architectures": list(branch.architectures) if branch else None}
        checks.holds(f"driver branch R{branch_no} is in the matrix", branch is not None, branch_no)
        if branch is not None:
            checks.same(f"R{branch_no} highest native CUDA", branch.max_cuda, xy, "nvmlSystemGetCudaDriverVersion()")
        for gpu in nvml["gpus"]:
            row = matrix.find_gpu(gpu["name"])
            cc = "{}.{}".format(*gpu["cuda_compute_capability"])
            checks.holds(f"GPU name {gpu['name']!r} is known to the matrix", row is not None, gpu["name"])
            if row is not None:
                checks.same(f"{gpu['name']} compute capability", row.compute_capability, cc,
                            "nvmlDeviceGetCudaComputeCapability()")
                if branch is not None:
                    checks.holds(f"R{branch_no} supports {row.architecture}", row.architecture in branch.architectures,
                                 list(branch.architectures))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--deps", default="", help="directory of cudaenv's dependencies (pip install --target)")
    parser.add_argument("--workload-seconds", type=float, default=25.0)
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    deps = str(Path(args.deps).resolve()) if args.deps else ""
    if deps:
        sys.path.append(deps)  # nvidia-ml-py too, where the machine lacks it

    def save(name: str, value) -> None:
        path = out / name
        path.write_text(value if isinstance(value, str) else json.dumps(value, indent=2, default=str) + "\n")
        print(f"wrote {path}", flush=True)

    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    save("machine.json", {"recorded": now, "python": sys.version, "platform": platform.platform(),
                          "machine": platform.machine(), "cpu_count": os.cpu_count()})

    # 1. the driver's own tools, raw
    fields = "index,name,compute_cap,memory.total,uuid,driver_version"
    save("smi-query.csv", run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"])["stdout"])
    save("smi-query-issue.csv", run(["nvidia-smi", "--query-gpu=name,driver_version,compute_cap,memory.total",
                                     "--format=csv"])["stdout"])
    save("smi-header.txt", run(["nvidia-smi"])["stdout"])
    save("smi-q.txt", run(["nvidia-smi", "-q"])["stdout"])
    for source, name in ((Path("/proc/driver/nvidia/version"), "proc-version.txt"),
                         (Path("/sys/module/nvidia/version"), "sys-module-version.txt")):
        try:
            save(name, source.read_text())
        except OSError as exc:
            save(name + ".error", repr(exc))
    try:
        idle = nvml_recording()
        save("nvml-idle.json", idle)
    except Exception as exc:  # record why, keep going
        idle = None
        save("nvml-idle.error", repr(exc))

    # 2. cudaenv's detection
    doctor = cudaenv(deps, "doctor", "--json")
    save("cudaenv-doctor.json", doctor)
    resolve = cudaenv(deps, "resolve", "--json", "--torch", "2.9.0")
    save("cudaenv-resolve.json", resolve)
    resolve_any = cudaenv(deps, "resolve", "--json")
    save("cudaenv-resolve-any.json", resolve_any)

    # 3. the frameworks (JAX first, without preallocation, so it frees the GPU before torch runs)
    jax = run([sys.executable, "-c", FRAMEWORKS_JAX], timeout=180,
              env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
    save("jax-run.json", jax)
    jax_info = json.loads(jax["stdout"].strip().splitlines()[-1]) if jax["rc"] == 0 and jax["stdout"].strip() else None
    save("jax.json", jax_info)
    torch_run = run([sys.executable, "-c", FRAMEWORKS_TORCH], timeout=180)
    save("torch-run.json", torch_run)
    torch_info = json.loads(torch_run["stdout"].strip().splitlines()[-1]) if torch_run["rc"] == 0 and torch_run["stdout"].strip() else None
    save("torch.json", torch_info)

    # 4. a torch workload, and `top` while it runs
    workload = subprocess.Popen([sys.executable, "-c", WORKLOAD, str(args.workload_seconds)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = workload.stdout.readline().strip()
    time.sleep(3)  # a full NVML utilization sample period inside the workload
    top = cudaenv(deps, "top", "--once", "--json")
    save("cudaenv-top.json", top)
    try:
        busy = nvml_recording()
        save("nvml-busy.json", busy)
    except Exception as exc:
        busy = None
        save("nvml-busy.error", repr(exc))
    save("smi-busy.txt", run(["nvidia-smi"])["stdout"])
    try:
        workload_out, workload_err = workload.communicate(timeout=args.workload_seconds + 60)
    except subprocess.TimeoutExpired:
        workload.kill()
        workload_out, workload_err = workload.communicate()
    save("workload.json", {"pid": workload.pid, "ready": ready, "rc": workload.returncode,
                           "stdout": workload_out, "stderr": workload_err[-4000:]})

    # 5. comparisons
    checks = Checks()
    truth = idle or {}
    doc = doctor.get("json") or {}
    save("doctor-shape.txt", json.dumps(sorted(doc.keys()) if isinstance(doc, dict) else doc))
    host = doc.get("host") if isinstance(doc, dict) else None
    checks.holds("doctor --json printed one JSON object", isinstance(doctor.get("json"), dict), doctor["stdout"][:400])
    if isinstance(host, dict) and truth:
        checks.same("driver version", host.get("driver"), truth["driver_version"], "NVML")
        checks.same("detection source", host.get("source"), "nvml", "NVML loads here")
        rep = truth["cuda_driver_version"]
        checks.same("CUDA version the driver reports", host.get("cuda_driver_version"),
                    f"{rep // 1000}.{(rep % 1000) // 10}", "nvmlSystemGetCudaDriverVersion()")
        gpus = host.get("gpus") or []
        checks.same("GPU count", len(gpus), len(truth["gpus"]), "NVML")
        for mine, real in zip(gpus, truth["gpus"]):
            checks.same(f"GPU {mine.get('index')} name", mine.get("name"), real["name"], "NVML")
            checks.same(f"GPU {mine.get('index')} compute capability", mine.get("compute_capability"),
                        "{}.{}".format(*real["cuda_compute_capability"]), "NVML")
            checks.same(f"GPU {mine.get('index')} memory MiB", mine.get("memory_mib"),
                        real["memory"]["total"] // (1024 * 1024) if real.get("memory") else None, "NVML")
            checks.same(f"GPU {mine.get('index')} uuid", mine.get("uuid"), real["uuid"], "NVML")
    smi_lines = [line.split(", ") for line in (out / "smi-query.csv").read_text().splitlines() if line.strip()]
    if isinstance(host, dict):
        for line, mine in zip(smi_lines, host.get("gpus") or []):
            checks.same(f"GPU {line[0]} name vs nvidia-smi", mine.get("name"), line[1], "nvidia-smi --query-gpu")
            checks.same(f"GPU {line[0]} compute capability vs nvidia-smi", mine.get("compute_capability"), line[2],
                        "nvidia-smi --query-gpu")
            checks.same(f"GPU {line[0]} memory MiB vs nvidia-smi", mine.get("memory_mib"), int(line[3]),
                        "nvidia-smi --query-gpu")
    res = resolve.get("json") or {}
    checks.holds("resolve --json with detection: ok with a stack", bool(res.get("ok")) and bool(res.get("stack")),
                 {k: res.get(k) for k in ("ok", "problems", "valid_cuda")})
    sample = top.get("json") or {}
    checks.holds("top --once --json printed one JSON object", isinstance(top.get("json"), dict), top["stdout"][:400])
    for gpu in sample.get("gpus", []):
        pids = [p["pid"] for g in gpu.get("groups", []) for p in g.get("processes", [])]
        checks.holds(f"top: GPU {gpu['index']} utilization > 0 under load", (gpu.get("utilization_percent") or 0) > 0,
                     gpu.get("utilization_percent"))
        checks.holds(f"top: GPU {gpu['index']} memory used > 0 under load", (gpu.get("memory_used_mib") or 0) > 0,
                     gpu.get("memory_used_mib"))
        checks.holds(f"top: GPU {gpu['index']} lists the workload's PID", workload.pid in pids,
                     {"workload": workload.pid, "listed": pids})
        checks.holds(f"top: GPU {gpu['index']} power present", gpu.get("power_watts") is not None, gpu.get("power_watts"))
        checks.holds(f"top: GPU {gpu['index']} temperature present", gpu.get("temperature_c") is not None,
                     gpu.get("temperature_c"))
    try:
        save("matrix-rows.json", compare_matrix(checks, torch_info, jax_info, idle, deps))
    except Exception as exc:
        import traceback
        save("matrix-rows.error", traceback.format_exc())
        checks.holds("matrix comparison ran", False, repr(exc))
    save("comparisons.json", checks.rows)
    bad = [row for row in checks.rows if not row["agree"]]
    print(f"{len(checks.rows) - len(bad)} of {len(checks.rows)} checks agree")
    for row in bad:
        print("DIFFERS:", json.dumps(row, default=str)[:600])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
