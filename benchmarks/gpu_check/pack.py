"""Build the GPU check's folder (``make gpu-check``): everything a bare GPU machine lacks, in at most 58 MiB.

    python -m benchmarks.gpu_check.pack [--out .gpu-check] [--no-wheels]

The folder (git-ignored) holds:

* ``model/``: the packaged all-MiniLM-L6-v2 (config, tokenizer, weights stored in fp16: 45 MB instead of 90;
  ``run.py`` upcasts them to fp32 before training, since transformers 5 loads a checkpoint in its stored dtype);
* ``wheels/``: the distributions the GPU image lacks, for CPython 3.12 on manylinux x86_64, at the versions of
  this environment (``requirements.lock``): datasets, dill, multiprocess, seqeval, papermill and the Jupyter
  kernel stack without jedi, parso and debugpy (IPython, ipykernel and nbclient run without them);
* ``src.tar.gz``: medibio's source, the accelerate configurations and the chapter notebooks;
* ``data.tar.gz``: GAD, BC5CDR-chem, BIOSSES and STS-B from the data root, its layout unchanged;
* ``run.py`` (``benchmarks/gpu_check/run.py``) and ``MANIFEST.tsv`` (path, bytes, sha256 of every file, which
  ``run.py`` checks first).

Wheels already in ``<out>/wheels`` are kept, so only the first build asks PyPI (``pip download
--only-binary=:all: --python-version 3.12 --no-deps``; seqeval is published as a source archive only and is
built into a wheel here). ``--no-wheels`` leaves them out (the CPU dry run of the test suite, where every
distribution is installed already).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata as md
import io
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from medibio.core.errors import DataMissingError, MedibioError
from medibio.core.paths import REPO_ROOT, data_root
from medibio.core.settings import Settings
from medibio.models import zoo

LIMIT_BYTES = 58 * 2**20
# Distributions the GPU image lacks (closure of datasets, seqeval, papermill, ipykernel and nbclient over this
# environment's metadata, less what the image has and less jedi, parso and debugpy), two the chapters'
# kernels import besides: myst-nb (glue) and docutils, and attrs (jsonschema's), which an image with torch,
# transformers and the others named in docs/gpu-check.md need not have (setup installs only what is missing).
WHEELS = ("datasets", "dill", "multiprocess", "seqeval", "papermill", "nbclient", "nbformat", "entrypoints",
          "tenacity", "fastjsonschema", "jsonschema", "jsonschema-specifications", "referencing", "rpds-py",
          "jupyter-client", "jupyter-core", "platformdirs", "pyzmq", "tornado", "traitlets", "ipykernel",
          "comm", "matplotlib-inline", "nest-asyncio2", "ipython", "ipython-pygments-lexers", "prompt-toolkit",
          "wcwidth", "stack-data", "executing", "asttokens", "pure-eval", "pexpect", "ptyprocess", "myst-nb",
          "docutils", "attrs")
SOURCE_ONLY = {"seqeval"}  # no wheel on PyPI: built here (pure Python)
MODEL_FILES = ("config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
DATA = ("blurb/GAD", "blurb/BC5CDR-chem", "blurb/BIOSSES", "ift/stsb")
SOURCE = ("medibio", "configs/accelerate", "notebooks", "pyproject.toml")


def _pinned(name: str) -> str:
    return f"{name}=={md.version(name)}"


def wheels(folder: Path) -> list[Path]:
    """The wheels of :data:`WHEELS` in ``folder``, downloaded (or built) where missing."""
    folder.mkdir(parents=True, exist_ok=True)

    def have(name: str) -> bool:
        stem = name.replace("-", "_").lower() + "-" + md.version(name) + "-"
        return any(w.name.lower().startswith(stem) for w in folder.glob("*.whl"))

    binary = [_pinned(n) for n in WHEELS if n not in SOURCE_ONLY and not have(n)]
    pip = [sys.executable, "-m", "pip", "-q"]
    if binary:
        subprocess.run([*pip, "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
                        "--implementation", "cp", "--platform", "manylinux_2_28_x86_64", "--platform",
                        "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64", "-d", str(folder), *binary],
                       check=True)
    for name in SOURCE_ONLY:
        if not have(name):
            subprocess.run([*pip, "wheel", "--use-pep517", "--no-deps", "-w", str(folder), _pinned(name)], check=True)
    return sorted(folder.glob("*.whl"))


def fp16_model(folder: Path) -> None:
    """The packaged MiniLM's config, tokenizer and weights, the floating-point tensors stored in fp16."""
    import torch
    from safetensors.torch import load_file, save_file

    source = zoo.minilm_path()
    folder.mkdir(parents=True, exist_ok=True)
    for name in MODEL_FILES:
        shutil.copyfile(source / name, folder / name)
    tensors = {k: (v.to(torch.float16) if v.is_floating_point() else v)
               for k, v in load_file(source / "model.safetensors").items()}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})


def _deterministic(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if "__pycache__" in info.name or info.name.endswith((".pyc", ".ipynb_checkpoints")):
        return None
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    return info


def archive(path: Path, root: Path, members: tuple[str, ...]) -> None:
    """``members`` of ``root`` as a gzip tar (sorted, no timestamps: the same bytes from the same files)."""
    import gzip

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for member in members:
            base = root / member
            files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
            for file in files:
                tar.add(file, arcname=str(file.relative_to(root)), filter=_deterministic)
    path.write_bytes(gzip.compress(buffer.getvalue(), mtime=0))


def manifest(folder: Path) -> int:
    """Write ``MANIFEST.tsv`` (path, bytes, sha256 of every other file); return the folder's total bytes."""
    rows, total = [], 0
    for file in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "MANIFEST.tsv"):
        size = file.stat().st_size
        rows.append(f"{file.relative_to(folder)}\t{size}\t{hashlib.sha256(file.read_bytes()).hexdigest()}")
        total += size
    text = "path\tbytes\tsha256\n" + "\n".join(rows) + "\n"
    (folder / "MANIFEST.tsv").write_text(text, encoding="utf-8")
    return total + len(text.encode())


def build(out: Path, data: Path, with_wheels: bool = True) -> int:
    """Build the folder at ``out`` from the data root ``data`` (replacing what is there, except downloaded
    wheels); return its size."""
    absent = [member for member in DATA if not (data / member).is_dir()]
    if absent:  # an empty archive would pass here and fail on the GPU machine, with the device time spent
        raise DataMissingError(data / absent[0], f"the GPU check carries {', '.join(DATA)} of the data root; "
                               "point MEDIBIO_DATA (or --data-root) at a data root that holds them")
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("model", "src.tar.gz", "data.tar.gz", "run.py", "MANIFEST.tsv"):
        target = out / stale
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
    if with_wheels:
        wanted = wheels(out / "wheels")
        print(f"wheels: {len(wanted)} ({sum(w.stat().st_size for w in wanted) / 2**20:.1f} MiB)")
    else:
        shutil.rmtree(out / "wheels", ignore_errors=True)
    fp16_model(out / "model")
    archive(out / "src.tar.gz", REPO_ROOT, SOURCE)
    archive(out / "data.tar.gz", data, DATA)
    shutil.copyfile(Path(__file__).with_name("run.py"), out / "run.py")
    size = manifest(out)
    if size > LIMIT_BYTES:
        raise SystemExit(f"{out}: {size / 2**20:.1f} MiB, over the {LIMIT_BYTES / 2**20:.0f} MiB a call can carry")
    return size


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / ".gpu-check")
    parser.add_argument("--no-wheels", action="store_true", help="leave the wheels out (a CPU dry run)")
    parser.add_argument("--data-root", type=Path, default=None, help="default: $MEDIBIO_DATA or ../shared/data")
    args = parser.parse_args(argv)
    try:
        size = build(args.out, data_root(args.data_root or Settings.from_env().data_root), not args.no_wheels)
    except MedibioError as exc:  # a data root missing or incomplete, a damaged model file
        raise SystemExit("error: " + " ".join(str(exc).split())) from None
    except OSError as exc:
        from medibio.cli.main import os_error_message

        raise SystemExit(f"error: {os_error_message(exc)}") from None
    except subprocess.CalledProcessError as exc:
        raise SystemExit(f"error: `{' '.join(map(str, exc.cmd[2:5]))} ...` failed (exit {exc.returncode}; pip's "
                         "message is above): the wheels come from PyPI on the first build, which needs the "
                         "network; --no-wheels leaves them out (a CPU dry run)") from None
    print(f"{args.out}: {size / 2**20:.1f} MiB (limit {LIMIT_BYTES / 2**20:.0f}); files in {args.out / 'MANIFEST.tsv'}")
    print(f"on a GPU machine: python3 {args.out.name}/run.py --out $OUT   (CPU dry run: --limit 16)")


if __name__ == "__main__":
    main()
