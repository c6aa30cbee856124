"""Artefacts that take a project's stack off this host: job scripts and manifests for a cluster's
own scheduler (one module per target), rendered from templates/export/<target>/."""
