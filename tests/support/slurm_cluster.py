"""A real one-node Slurm cluster for the tests: Debian's slurm-wlm and munge, started detached.

Everything lives in one private directory (config, state, spool, logs, the munge key and socket),
on loopback ports picked at start, so it never touches a system Slurm. GPUs are GRES backed by
stand-in character devices (``mknod``, NVIDIA's major 195): slurmd registers a GPU only for a
``File=`` that exists, and a node whose GRES count does not match is drained.

``nodes`` starts several nodes on this one machine instead: one real slurmd per node (``slurmd -N
NAME``, each on its own port), each with its own GRES and features, as a cluster of differing nodes.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scontrol")
NVIDIA_MAJOR = 195


def missing_tools() -> list[str]:
    return [tool for tool in DAEMONS if shutil.which(tool) is None]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _node_facts() -> tuple[str, int, int]:
    """(NodeName, CPUs, RealMemory) as slurmd itself reports this machine (``slurmd -C``)."""
    text = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout
    fields = dict(re.findall(r"(\w+)=(\S+)", text.splitlines()[0]))
    return fields["NodeName"], int(fields["CPUs"]), int(fields["RealMemory"])


def _detached(argv: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    """Own session, no stdin, output to a file: the test run never waits on a daemon."""
    with open(log, "ab") as out:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, env=env)


@dataclass(frozen=True)
class SlurmNode:
    """One node of a several-node cluster: its name, GRES GPU count (0: none) and features."""

    name: str
    gpus: int = 0
    features: tuple[str, ...] = ()


@dataclass
class SlurmCluster:
    root: Path
    logs: Path
    node: str
    gpus: int
    env: dict[str, str]
    processes: list[subprocess.Popen]
    names: tuple[str, ...] = ()  # every node's name (the one node's, for the default cluster)

    @classmethod
    def start(cls, root: Path, logs: Path, *, gpus: int = 2, timeout: float = 60.0,
              nodes: tuple[SlurmNode, ...] | None = None) -> "SlurmCluster":
        root, logs = root.resolve(), logs.resolve()
        for sub in ("state", "spool", "dev", "munge", "jobs"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        logs.mkdir(parents=True, exist_ok=True)
        os.chmod(root / "munge", 0o700)
        key = root / "munge" / "munge.key"
        key.write_bytes(os.urandom(128))
        os.chmod(key, 0o600)
        for index in range(gpus if nodes is None else sum(n.gpus for n in nodes)):
            device = root / "dev" / f"nvidia{index}"
            if not device.exists():
                os.mknod(device, 0o666 | 0o020000, os.makedev(NVIDIA_MAJOR, index))
        if nodes is not None:
            return cls._start_nodes(root, logs, nodes, key, timeout)
        node, cpus, memory = _node_facts()
        munge_socket = root / "munge" / "munge.socket"
        conf = root / "slurm.conf"
        conf.write_text("\n".join([
            "ClusterName=cudaenvtest",
            f"SlurmctldHost={node}(127.0.0.1)",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={munge_socket}",
            f"StateSaveLocation={root / 'state'}",
            f"SlurmdSpoolDir={root / 'spool'}",
            f"SlurmctldPidFile={root / 'slurmctld.pid'}",
            f"SlurmdPidFile={root / 'slurmd.pid'}",
            f"SlurmctldLogFile={logs / 'slurmctld.log'}",
            f"SlurmdLogFile={logs / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "GresTypes=gpu",
            "ReturnToService=2",
            "MpiDefault=none",
            "SchedulerType=sched/backfill",
            "JobCompType=jobcomp/none",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            f"NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory} Gres=gpu:{gpus} "
            "Feature=cuda-driver-550,sm_80,sm_90 State=UNKNOWN",
            f"PartitionName=cudaenv Nodes={node} Default=YES MaxTime=INFINITE State=UP",
            "",
        ]))
        (root / "gres.conf").write_text(
            f"NodeName={node} Name=gpu File={root / 'dev'}/nvidia[0-{gpus - 1}]\n" if gpus > 1
            else f"NodeName={node} Name=gpu File={root / 'dev'}/nvidia0\n")
        env = {**os.environ, "SLURM_CONF": str(conf)}
        cluster = cls(root=root, logs=logs, node=node, gpus=gpus, env=env, processes=[], names=(node,))
        cluster._run_daemons(key, timeout, [["slurmd", "-D"]])
        return cluster

    @classmethod
    def _start_nodes(cls, root: Path, logs: Path, nodes: tuple[SlurmNode, ...], key: Path,
                     timeout: float) -> "SlurmCluster":
        """Several nodes, each its own slurmd on this machine (NodeHostname this machine, a port each)."""
        host, cpus, memory = _node_facts()
        munge_socket = root / "munge" / "munge.socket"
        conf = root / "slurm.conf"
        lines = [
            "ClusterName=cudaenvtest", f"SlurmctldHost={host}(127.0.0.1)", "SlurmUser=root", "SlurmdUser=root",
            f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}", "AuthType=auth/munge",
            "CredType=cred/munge", f"AuthInfo=socket={munge_socket}", f"StateSaveLocation={root / 'state'}",
            f"SlurmdSpoolDir={root / 'spool'}/%n", f"SlurmctldPidFile={root / 'slurmctld.pid'}",
            f"SlurmdPidFile={root / 'slurmd'}-%n.pid", f"SlurmctldLogFile={logs / 'slurmctld.log'}",
            f"SlurmdLogFile={logs}/slurmd-%n.log", "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core", "GresTypes=gpu", "ReturnToService=2",
            "MpiDefault=none", "SchedulerType=sched/backfill", "JobCompType=jobcomp/none",
            "AccountingStorageType=accounting_storage/none", "JobAcctGatherType=jobacct_gather/none",
            "SlurmctldDebug=info", "SlurmdDebug=info",
        ]
        gres, first = [], 0
        for node in nodes:
            extra = (f" Gres=gpu:{node.gpus}" if node.gpus else "") + (
                f" Feature={','.join(node.features)}" if node.features else "")
            lines.append(f"NodeName={node.name} NodeHostname={host} NodeAddr=127.0.0.1 Port={_free_port()} "
                         f"CPUs={cpus} RealMemory={max(memory // (2 * len(nodes)), 1)}{extra} State=UNKNOWN")
            if node.gpus:
                files = (f"nvidia{first}" if node.gpus == 1 else f"nvidia[{first}-{first + node.gpus - 1}]")
                gres.append(f"NodeName={node.name} Name=gpu File={root / 'dev'}/{files}\n")
                first += node.gpus
            (root / "spool" / node.name).mkdir(exist_ok=True)
        lines += [f"PartitionName=cudaenv Nodes={','.join(n.name for n in nodes)} Default=YES MaxTime=INFINITE "
                  "State=UP", ""]
        conf.write_text("\n".join(lines))
        (root / "gres.conf").write_text("".join(gres))
        env = {**os.environ, "SLURM_CONF": str(conf)}
        cluster = cls(root=root, logs=logs, node=nodes[0].name, gpus=sum(n.gpus for n in nodes), env=env,
                      processes=[], names=tuple(n.name for n in nodes))
        cluster._run_daemons(key, timeout, [["slurmd", "-D", "-N", n.name] for n in nodes])
        return cluster

    def _run_daemons(self, key: Path, timeout: float, slurmds: list[list[str]]) -> None:
        """munged, slurmctld, then each slurmd, detached; stopped again if any does not come up."""
        root, logs, env = self.root, self.logs, self.env
        munge_socket = root / "munge" / "munge.socket"
        try:
            self.processes.append(_detached(
                ["munged", "-F", "--force", f"--socket={munge_socket}", f"--key-file={key}",
                 f"--pid-file={root / 'munge' / 'munged.pid'}", f"--seed-file={root / 'munge' / 'seed'}",
                 f"--log-file={logs / 'munged.log'}"], logs / "munged.out", env))
            self._wait(lambda: munge_socket.exists(), timeout, "munged did not create its socket")
            self.processes.append(_detached(["slurmctld", "-D", "-i"], logs / "slurmctld.out", env))
            self._wait(lambda: self._answers(["scontrol", "ping"], "UP"), timeout, "slurmctld did not answer")
            for argv in slurmds:
                out = "slurmd.out" if len(slurmds) == 1 else f"slurmd-{argv[-1]}.out"
                self.processes.append(_detached(argv, logs / out, env))
            self._wait(self.node_idle, timeout, "the node did not become idle" if len(slurmds) == 1
                       else "the nodes did not become idle")
        except BaseException:
            self.stop()
            raise

    def _answers(self, argv: list[str], needle: str) -> bool:
        result = subprocess.run(argv, capture_output=True, text=True, env=self.env)
        return result.returncode == 0 and needle in result.stdout

    def node_idle(self) -> bool:
        """Every node is idle (sinfo lists each node once)."""
        result = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, env=self.env)
        return result.returncode == 0 and result.stdout.split() == ["idle"] * max(len(self.names), 1)

    def node_record(self) -> str:
        return subprocess.run(["scontrol", "show", "node", self.node], capture_output=True, text=True,
                              env=self.env).stdout

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"{what}: {process.args[0]} exited with {process.returncode}; "
                                       f"logs in {self.logs}")
            time.sleep(0.5)
        raise RuntimeError(f"{what} within {timeout:g} s; logs in {self.logs}")

    def submit(self, script: Path, *, cwd: Path) -> str:
        result = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True, text=True,
                                env=self.env, cwd=cwd, check=True)
        return result.stdout.strip().split(";")[0]

    def wait_job(self, job_id: str, timeout: float = 300.0) -> str:
        """The job's final state (COMPLETED, FAILED, ...), read from scontrol while it is remembered."""
        deadline = time.monotonic() + timeout
        state = "UNKNOWN"
        while time.monotonic() < deadline:
            text = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True,
                                  env=self.env).stdout
            match = re.search(r"JobState=(\S+)", text)
            state = match.group(1) if match else state
            if state not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "UNKNOWN"):
                return state
            time.sleep(1)
        raise TimeoutError(f"job {job_id} still {state} after {timeout:g} s; logs in {self.logs}")

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self.processes.clear()
