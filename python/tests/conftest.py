"""Paths of the repository's example policies and workloads."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def examples() -> pathlib.Path:
    return ROOT / "examples"


@pytest.fixture(autouse=True)
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    yield
    os.chdir(ROOT)
