"""A real cluster's nodes, read from what the cluster itself publishes, judged by the resolver.

Why a package of its own: a Kubernetes node object or a Slurm node record is a third party's
format with its own grammar and its own gaps. Reading it (``read`` tells the two apart;
``kubernetes``, ``slurm``; ``facts`` is what was read), saying which nodes run a stack
(``verdicts``) and grouping projects by those nodes (``plan``) are separate from the resolver,
which only ever sees a ``Host``: the verdict is ``check_stack``'s, never a rule re-derived from
labels here.

What can be known differs by scheduler. GPU Feature Discovery labels a Kubernetes node with the
driver version, the CUDA version that driver supports, the GPU product, its compute capability and
the GPU count, read from NVML on the node. Slurm records GRES (``gpu:a100:4``) and node features,
never the driver: that comes only from the site's ``[cluster.slurm.features]`` mapping, and where
no mapping applies the report says the driver cannot be known instead of guessing.
"""
