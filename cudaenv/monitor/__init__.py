"""What the GPUs are doing right now, and which container each GPU process belongs to.

``cudaenv.hosts.nvml`` wraps the few NVML calls used (nvidia-ml-py, imported only when a sample is taken);
``cgroups`` reads a process's container from ``/proc/PID/cgroup``; ``sample`` puts the two together
with the engine's ``io.cudaenv.*`` labels; ``render`` draws the ``cudaenv top`` screen.
"""
