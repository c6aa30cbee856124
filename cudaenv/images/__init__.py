"""From a resolved stack to an image: the Dockerfile rendered from templates (``render``), the
project image's plan and tags (``plan``), whether the image is current (``key``: a hash of every
input of its render, so ``run`` skips relocking and rendering while nothing changed), the build
that ``build``, ``run``, ``push`` and the exports call (``build``), the shared stack bases
(``stackbase``), publishing and pushing them (``publish``, ``push``), and what images hold on disk.

Disk: projects on one stack start FROM the same stack base image (``cudaenv.images.stackbase``), so its layers
are stored once however many projects use it. ``docker system df`` cannot show that: it calls
every layer of an image that another image also lists "shared", even when two images hold copies
of the same content under different layer IDs (a framework layer built twice). Here a layer is
identified by its chain ID (its own content and everything below it, as the OCI image spec
defines it), and disk use is the sum over distinct chain IDs — what the engine really stores.

``layers`` holds the pure arithmetic (chain IDs, per-layer sizes), ``accounting`` groups images
by stack base and prunes the bases no project image uses; the engine is reached only through
``cudaenv.engine``.
"""
