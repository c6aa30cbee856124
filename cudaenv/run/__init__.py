"""Running a project: a container's spec, GPUs and users (``containers``), starting it with a
current image, built first when needed (``session``), and what this host can run
(``doctor``). Above images and the engine; the CLI's run commands only parse and print."""
