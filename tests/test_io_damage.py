"""Damage that names itself: a vector file cut short and a full disk.

A truncated ``.npy`` used to fail with numpy's "Failed to read all data for array", naming no
file, on every rerun (Snakemake takes an existing file for done); a full disk was reported as
numpy's ``OSError: 20736 requested and 16352 written``. Both now name the file and what to do.
"""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from structablate.errors import StructablateError
from structablate.io import (
    DamagedFileError,
    NoSpaceError,
    read_npy,
    read_parquet,
    write_json,
    write_npy,
    write_parquet,
)


@pytest.mark.parametrize("keep", [0, 10, 100, 2000])
def test_a_truncated_npy_names_the_file_and_says_to_delete_it(tmp_path, keep):
    path = tmp_path / "G2.npy"
    write_npy(np.arange(1000, dtype=np.float32).reshape(100, 10), path)
    path.write_bytes(path.read_bytes()[:keep])
    with pytest.raises(DamagedFileError) as err:
        read_npy(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: not a readable .npy array")
    assert "Delete it and run again: the workflow rebuilds it" in msg
    assert isinstance(err.value, StructablateError)


def test_a_whole_npy_reads_back(tmp_path):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    write_npy(a, tmp_path / "v.npy")
    assert np.array_equal(read_npy(tmp_path / "v.npy"), a)


def test_a_truncated_parquet_says_to_delete_it(tmp_path):
    path = tmp_path / "runs.parquet"
    write_parquet(pl.DataFrame({"x": list(range(1000))}), path)
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(Exception) as err:
        read_parquet(path)
    assert str(err.value).startswith(f"{path}: ") and "delete it and run again" in str(err.value)


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KiB tmpfs (skipped where mounting is not permitted: not root, a container)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


@pytest.mark.parametrize("write, value", [
    (write_npy, np.zeros(100_000)),
    (write_parquet, pl.DataFrame({"x": np.random.default_rng(0).random(100_000)})),
    (write_json, list(range(100_000))),
])
def test_a_full_disk_says_no_space_left_and_names_the_folder(full_disk, write, value):
    out = full_disk / "corpus" / "minilm" / "embeddings" / "G2.out"
    with pytest.raises(NoSpaceError) as err:
        write(value, out)
    msg = str(err.value)
    assert msg.startswith(f"{out}: no space left on device in {out.parent}")
    assert err.value.errno == errno.ENOSPC and isinstance(err.value, OSError)
    assert os.listdir(out.parent) == []  # nothing partial, no temporary file


def test_a_short_write_is_reported_as_no_space(tmp_path, monkeypatch):
    # numpy reports a full device mid-array as a short write, with no errno
    def short_save(fh, array, allow_pickle=False):
        fh.write(b"\x93NUMPY")
        raise OSError("20736 requested and 16352 written")

    monkeypatch.setattr(np, "save", short_save)
    with pytest.raises(NoSpaceError, match=r"G3\.npy: no space left on device in .*embeddings"):
        write_npy(np.zeros(3), tmp_path / "embeddings" / "G3.npy")
    assert list(Path(tmp_path / "embeddings").iterdir()) == []


def test_other_write_errors_are_not_called_a_full_disk(tmp_path, monkeypatch):
    def broken(fh, array, allow_pickle=False):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(np, "save", broken)
    with pytest.raises(OSError) as err:
        write_npy(np.zeros(3), tmp_path / "v.npy")
    assert not isinstance(err.value, NoSpaceError)
