"""The machines a stack is for: this host as detected (``detect``, through NVML in ``nvml``
or nvidia-smi and /proc) and the declared target host built from flags, environment and a
project's [target] (``target``). Above the resolver, below projects and engines."""
