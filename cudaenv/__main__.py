"""``python -m cudaenv`` runs the same CLI as the ``cudaenv`` console script."""

from cudaenv.entry import main

if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess in tests
    main()
