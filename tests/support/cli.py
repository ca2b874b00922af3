"""Running the ``medibio`` command line in-process, as the CLI tests do."""

from __future__ import annotations

from typing import Any


def run_main(argv: list[str], capsys: Any) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``medibio ARGV`` run through :func:`medibio.cli.main`; ``capsys`` is
    pytest's fixture. Every command ends in ``SystemExit``, so the code is always there to compare."""
    import pytest

    from medibio.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err
