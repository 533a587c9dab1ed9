"""The GPU runtime of containers/: the lock file is pyproject.toml's base dependencies plus its
`gpu` extra resolved with hashes, the Apptainer definition installs exactly that lock on the
Python the lock was resolved for, and the driver floor of its CUDA 13 wheels is checked."""

import re
import tomllib

import pytest
from conftest import REPO

from structablate.driver import DRIVER_FLOOR, DriverError, check_driver, driver_version

CONTAINERS = REPO / "containers"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lines) -> dict[str, str]:
    out = {}
    for line in lines:
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==(\S+)", line.strip())
        assert m, f"not an exact pin: {line!r}"
        out[norm(m.group(1))] = m.group(2)
    return out


def lock() -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes) of containers/gpu.lock.txt."""
    out: dict[str, tuple[str, int]] = {}
    name = None
    for line in (CONTAINERS / "gpu.lock.txt").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==(\S+) \\$", line)
        if m:
            name = norm(m.group(1))
            out[name] = (m.group(2), 0)
        elif line.strip().startswith("--hash=sha256:") and name:
            version, n = out[name]
            out[name] = (version, n + 1)
    return out


DIRECT = pins(PYPROJECT["project"]["dependencies"]) | pins(
    PYPROJECT["project"]["optional-dependencies"]["gpu"]) | pins(
    PYPROJECT["project"]["optional-dependencies"]["slurm"])


def test_gpu_in_is_pyprojects_base_gpu_and_slurm_extras():
    lines = [x for x in (CONTAINERS / "gpu.in").read_text().splitlines()
             if x.strip() and not x.startswith("#")]
    assert pins(lines) == DIRECT


def test_the_lock_pins_every_direct_requirement_with_hashes():
    locked = lock()
    for name, version in DIRECT.items():
        assert name in locked, f"{name} missing from containers/gpu.lock.txt"
        assert locked[name][0] == version, (name, locked[name][0], version)
    assert all(n >= 1 for _, n in locked.values())  # installable with --require-hashes
    # the CUDA build of torch: its CUDA 13 runtime is locked beside it
    assert locked["torch"][0] == "2.13.0" and locked["nvidia-cuda-runtime"][0].startswith("13.")
    assert len(locked) > 100  # vllm's transitive requirements, all of them pinned
    # the SLURM plugin's jobstep (it runs every job on its node) is locked with it
    assert locked["snakemake-executor-plugin-slurm-jobstep"][0] == "0.6.1"


def test_the_apptainer_definition_installs_the_lock_on_its_python():
    text = (CONTAINERS / "gpu.def").read_text()
    header = (CONTAINERS / "gpu.lock.txt").read_text().split("\n", 8)[:8]
    py = re.search(r"CPython (3\.\d+)", "\n".join(header)).group(1)
    assert f"--python-version {py}" in "\n".join(header)
    assert re.search(rf"^From: python:{re.escape(py)}-slim", text, re.M), py
    image_lock = "/" + "opt/structablate/gpu.lock.txt"  # the image's own path
    assert f"containers/gpu.lock.txt {image_lock}" in text
    assert "--no-deps --require-hashes" in text and f"-r {image_lock}" in text
    assert "src/structablate/driver.py" in text and "driver.py" in text.split("%runscript")[1]
    # nothing installed besides the lock
    assert text.count("pip install") == 1


PROC = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {v}  Release Build  "
        "(dvs-builder@U22-I3-AF03-09-1)  Sun Jul 27 06:54:38 UTC 2025\nGCC version:  gcc 12\n")


def test_the_driver_floor_is_checked_with_a_clear_error():
    assert driver_version(PROC.format(v="580.65.06")) == (580, 65, 6)
    assert driver_version(PROC.format(v="550.127.05").replace("Open ", "")) == (550, 127, 5)
    assert driver_version("no driver here") is None
    assert check_driver((580, 65, 6)) == f"NVIDIA driver 580.65.6 (>= {DRIVER_FLOOR})"
    with pytest.raises(DriverError, match=r"NVIDIA driver 550\.127\.5 is older than 580: .*"
                                          r"CUDA 13\.0 builds"):
        check_driver((550, 127, 5))
    assert DRIVER_FLOOR == 580
