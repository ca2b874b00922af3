"""``python -m medibio ...`` runs the same CLI as the ``medibio`` entry point."""

from medibio.cli.main import main

if __name__ == "__main__":
    main()
