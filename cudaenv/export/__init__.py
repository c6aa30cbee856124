"""The resolved stack rendered for the engines users already run (Slurm, Kubernetes, ...)."""
