"""cudaenv: containerized CUDA stacks for deep-learning projects.

The package is organised along the data flow of the design notes:
``matrix`` (facts) → ``resolver`` (choices) → ``render`` (Dockerfiles) → ``engine`` (images and
containers), with ``cli`` as a thin layer on top.
"""

__version__ = "0.1.0"
