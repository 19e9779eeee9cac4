import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
FAKE_BIN = Path(__file__).resolve().parent / "fake"


@pytest.fixture
def fake_ncu_path(monkeypatch):
    """PATH with the fake `ncu` (tests/fake/ncu) first; it runs the target, then writes a real
    H200 raw-page capture as its log."""
    monkeypatch.setenv("PATH", f"{FAKE_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_NCU_LOG", str(FIXTURES / "ncu-h200" / "raw_page.stdout"))
    return FAKE_BIN


def python_exe() -> str:
    return sys.executable
