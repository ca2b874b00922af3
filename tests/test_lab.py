"""`make lab`: JupyterLab starts on the chapter notebooks with this project's environment as the kernel."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from medibio.core.paths import REPO_ROOT

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_lab_starts_jupyterlab_on_the_notebooks(tmp_path: Path) -> None:
    port = _free_port()
    extra = f"--no-browser --port={port} --IdentityProvider.token= --ServerApp.ip=127.0.0.1"
    # the Makefile's own command (make -n prints it), with what a test needs: no browser, a free port, no token
    # run under `make test`, the inner make announces its directory ("make[1]: Leaving directory ..."): skip those
    env_make = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    shown = subprocess.run(["make", "--no-print-directory", "-n", "lab", f"LAB_ARGS={extra}",
                            f"VENV={Path(sys.executable).parent.parent}"],
                           cwd=REPO_ROOT, env=env_make, capture_output=True, text=True, check=True).stdout
    command = [line for line in shown.strip().splitlines() if not line.startswith("make")][-1]
    assert re.search(r"/bin/jupyter lab --notebook-dir=notebooks ", command), command
    # every place Jupyter writes goes to the test's folder (a CI home may be read-only or shared)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTER_CONFIG_DIR": str(tmp_path),
           "JUPYTER_DATA_DIR": str(tmp_path / "data"), "IPYTHONDIR": str(tmp_path / "ipython")}
    log_path = tmp_path / "lab.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(command, shell=True, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180  # a loaded CI machine can take a while to import the server
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/kernelspecs", timeout=2) as response:
                    specs = json.load(response)
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    tail = log_path.read_text(encoding="utf-8", errors="replace")[-4000:]
                    raise AssertionError(f"JupyterLab did not start (exit {proc.poll()}):\n{tail}") from None
                time.sleep(0.5)
        # the default kernel is the server's own interpreter ("python" is replaced by it at launch): the
        # project's virtual environment, since the Makefile starts the venv's jupyter
        python = specs["kernelspecs"][specs["default"]]["spec"]["argv"][0]
        assert python == "python" or Path(python).parent == Path(sys.executable).parent, python
        assert command.split()[0] == str(Path(sys.executable).with_name("jupyter"))
        with urllib.request.urlopen(f"{base}/api/contents", timeout=5) as response:
            listed = {item["name"] for item in json.load(response)["content"]}
        assert "tables_5_6_pretraining_configurations.ipynb" in listed and "intro.ipynb" in listed
        with urllib.request.urlopen(f"{base}/lab", timeout=5) as response:
            assert response.status == 200
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
        log.close()
