"""How an exported file asks for GPUs: CDI device names or the legacy NVIDIA hook.

``--gpu-access auto`` follows the engine on this machine (``Engine.gpu_access``): CDI where it
injects CDI devices (Podman; Docker 25+ with the ``cdi`` feature and NVIDIA specs), the legacy
``--gpus``/``driver: nvidia`` elsewhere, since a daemon without CDI refuses CDI names. ``cdi`` and
``legacy`` say it for a host this machine is not (a workstation, a server).
"""

from __future__ import annotations

CHOICES = ("auto", "cdi", "legacy")


def cdi_specs_for(choice: str, wants_gpus: bool) -> dict | None:
    """None for the legacy hook; else this host's NVIDIA CDI devices by name (empty when it has no
    spec: the export then writes nvidia-ctk's default names, ``all`` and one per index)."""
    if choice == "legacy" or not wants_gpus:
        return None
    from cudaenv.hosts import cdi

    if choice == "auto":
        from cudaenv.engine import get_engine
        from cudaenv.errors import EngineError

        try:
            if get_engine().gpu_access() != "cdi":
                return None
        except EngineError:
            return None  # no engine here to ask: the long-standing default
    return cdi.read_specs().of_kind()
