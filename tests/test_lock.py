"""requirements.lock (what `make install` installs) agrees with requirements.txt (the direct dependencies).

Editing requirements.txt without `make lock` fails here: the lock's header records the sha256 of the
requirements.txt it was compiled from, and every direct requirement must be pinned in the lock to a version
its specifier admits. Every lock entry is an exact pin with hashes, and no CUDA build sneaks in.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

REPO_ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = REPO_ROOT / "requirements.txt"
LOCK = REPO_ROOT / "requirements.lock"

HEADER_SHA = re.compile(r"^# compiled from requirements\.txt sha256=([0-9a-f]{64})\s*$")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)\s*(?:;[^-]*)?(?=\s--|\s*$)")
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}(?=\s|$)")
# a CUDA build of torch pulls these; the lock must hold the CPU build only
GPU_ONLY = re.compile(r"^(nvidia-|cuda-|cuda$|triton$)")


def parse_lock(text: str) -> tuple[str | None, list[str]]:
    """(sha256 from the header or None, the lock's entries as logical lines: continuations joined, comments gone)."""
    header_sha = None
    entries: list[str] = []
    current = ""
    for raw in text.splitlines():
        match = HEADER_SHA.match(raw)
        if match:
            header_sha = match.group(1)
        line = "" if raw.lstrip().startswith("#") else raw.split(" #", 1)[0].strip()
        if not line:
            continue
        if line.endswith("\\"):
            current += line[:-1].strip() + " "
        else:
            entries.append((current + line).strip())
            current = ""
    if current.strip():
        entries.append(current.strip())
    return header_sha, entries


def parse_requirements(text: str) -> list[Requirement]:
    reqs = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith(("#", "-")):
            reqs.append(Requirement(line))
    return reqs


def lock_problems(requirements_path: Path, lock_path: Path) -> list[str]:
    """Every way requirements_path and lock_path disagree, one sentence each; [] when they agree."""
    problems: list[str] = []
    req_bytes = requirements_path.read_bytes()
    header_sha, entries = parse_lock(lock_path.read_text(encoding="utf-8"))
    actual_sha = hashlib.sha256(req_bytes).hexdigest()
    if header_sha is None:
        problems.append("lock header has no '# compiled from requirements.txt sha256=...' line")
    elif header_sha != actual_sha:
        problems.append(f"lock was compiled from requirements.txt sha256={header_sha}, but requirements.txt "
                        f"is now sha256={actual_sha}: run `make lock`")

    pinned: dict[str, Version] = {}
    for entry in entries:
        match = PIN.match(entry)
        if not match:
            problems.append(f"lock entry is not an exact name==version pin: {entry[:80]!r}")
            continue
        name = canonicalize_name(match.group(1))
        try:
            version = Version(match.group(2))
        except InvalidVersion:
            problems.append(f"lock entry {name} has an invalid version {match.group(2)!r}")
            continue
        if not HASH.search(entry):
            problems.append(f"lock entry {name}=={version} has no --hash=sha256:")
        if GPU_ONLY.match(name):
            problems.append(f"lock holds a CUDA/GPU-only package: {name}=={version}")
        if name in pinned:
            problems.append(f"lock pins {name} twice")
        pinned[name] = version
    if "torch" in pinned and pinned["torch"].local != "cpu":
        problems.append(f"lock pins torch=={pinned['torch']}, not the CPU build (+cpu)")

    try:
        requirements = parse_requirements(req_bytes.decode("utf-8"))
    except InvalidRequirement as exc:
        return [*problems, f"requirements.txt does not parse: {exc}"]
    for req in requirements:
        name = canonicalize_name(req.name)
        if req.marker is not None and not req.marker.evaluate():
            continue
        if name not in pinned:
            problems.append(f"{req} (requirements.txt) is missing from the lock")
            continue
        version = pinned[name]
        public = Version(version.public)  # 2.13.0+cpu counts as 2.13.0 too
        if not (req.specifier.contains(version, prereleases=True)
                or req.specifier.contains(public, prereleases=True)):
            problems.append(f"lock pins {name}=={version}, which {req} (requirements.txt) does not admit")
    return problems


def test_lock_agrees_with_requirements() -> None:
    assert lock_problems(REQUIREMENTS, LOCK) == []


def test_lock_pins_the_cpu_torch_wheel() -> None:
    _, entries = parse_lock(LOCK.read_text(encoding="utf-8"))
    torch = [e for e in entries if e.startswith("torch==")]
    assert len(torch) == 1 and torch[0].startswith("torch==2.13.0+cpu "), torch
    assert re.search(r"^torch==2\.13\.0$", REQUIREMENTS.read_text(encoding="utf-8"), re.M)


def test_lock_leaves_out_what_only_slows_every_kernel() -> None:
    """rfc3987-syntax builds a grammar when jsonschema imports it (2.4 s in each chapter's kernel, through
    nbformat) to check a format nothing here validates: `make lock` leaves it and lark, its only user, out."""
    _, entries = parse_lock(LOCK.read_text(encoding="utf-8"))
    names = {canonicalize_name(PIN.match(e).group(1)) for e in entries if PIN.match(e)}
    assert names and not names & {"rfc3987-syntax", "lark"}
    assert "--no-emit-package rfc3987-syntax" in (REPO_ROOT / "Makefile").read_text(encoding="utf-8")


def _copies(tmp_path: Path) -> tuple[Path, Path]:
    reqs, lock = tmp_path / "requirements.txt", tmp_path / "requirements.lock"
    reqs.write_bytes(REQUIREMENTS.read_bytes())
    lock.write_bytes(LOCK.read_bytes())
    return reqs, lock


def _drop_entry(lock_text: str, name: str) -> str:
    """The lock without the entry for name (its pin line, hash lines and via comments)."""
    out, skipping = [], False
    for line in lock_text.splitlines(keepends=True):
        if re.match(r"^[A-Za-z0-9]", line):
            skipping = canonicalize_name(line.split("==", 1)[0]) == name
        if not skipping:
            out.append(line)
    return "".join(out)


@pytest.mark.parametrize(
    "case, expected",
    [
        ("requirements edited, not re-locked", ["run `make lock`", "lock pins numpy==", "does not admit"]),
        ("requirement missing from lock", ["scipy", "is missing from the lock"]),
        ("entry without hash", ["extra-pkg==1.0 has no --hash=sha256:"]),
        ("unpinned entry", ["not an exact name==version pin: 'extra-pkg>=1.0"]),
        ("cuda package", ["CUDA/GPU-only package: nvidia-cublas"]),
        ("CUDA torch", ["torch==2.13.0+cu130, not the CPU build"]),
        ("header without sha", ["no '# compiled from requirements.txt sha256=...' line"]),
    ],
)
def test_disagreement_is_reported(tmp_path: Path, case: str, expected: list[str]) -> None:
    """Each break of a copy of the real pair adds the problem it should (measured against the unbroken copy,
    so these tests show the check's power even while the real pair disagrees: the test above reports that)."""
    reqs, lock = _copies(tmp_path)
    before = set(lock_problems(reqs, lock))
    lock_text = lock.read_text(encoding="utf-8")
    fake_hash = "--hash=sha256:" + "0" * 64
    if case == "requirements edited, not re-locked":
        text, n = re.subn(r"(?m)^numpy\b.*$", "numpy>=99", reqs.read_text(encoding="utf-8"))
        assert n == 1
        reqs.write_text(text, encoding="utf-8")
    elif case == "requirement missing from lock":
        lock.write_text(_drop_entry(lock_text, "scipy"), encoding="utf-8")
    elif case == "entry without hash":
        lock.write_text(lock_text + "extra-pkg==1.0\n", encoding="utf-8")
    elif case == "unpinned entry":
        lock.write_text(lock_text + f"extra-pkg>=1.0 {fake_hash}\n", encoding="utf-8")
    elif case == "cuda package":
        lock.write_text(lock_text + f"nvidia-cublas==13.1.0.3 \\\n    {fake_hash}\n", encoding="utf-8")
    elif case == "CUDA torch":
        text, n = re.subn(r"(?m)^torch==\S+", "torch==2.13.0+cu130", lock_text)
        assert n == 1
        lock.write_text(text, encoding="utf-8")
    elif case == "header without sha":
        text, n = re.subn(r"(?m)^# compiled from requirements\.txt sha256=.*\n", "", lock_text)
        assert n == 1
        lock.write_text(text, encoding="utf-8")
    added = [p for p in lock_problems(reqs, lock) if p not in before]
    joined = "\n".join(added)
    assert all(part in joined for part in expected), added
    expected_count = 2 if case == "requirements edited, not re-locked" else 1
    assert len(added) == expected_count, added
