"""cudaenv: containerized CUDA stacks for deep-learning projects.

The packages follow the data flow of the design notes, one layer each, lowest first: ``core``
and ``secrets`` (what every layer may use), ``matrix`` (facts), ``resolver`` (choices), ``hosts``
and ``cluster`` (the machines a stack is for), ``project`` (configuration and lock), ``engine``
(Docker and registries, spoken to in plain values), ``images`` (from a stack to a built image),
``run``, ``export`` and ``monitor`` (containers, other schedulers, GPU use), and ``cli`` on top. A
module imports only from its own layer or lower ones (``tests/unit/test_layers.py``).
"""

__version__ = "0.1.0"
