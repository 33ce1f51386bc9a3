"""The package's types check: mypy on citewise/ finds no error (settings: pyproject.toml [tool.mypy])."""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_type_checks(tmp_path: Path) -> None:
    out, err, status = api.run(
        [str(ROOT / "citewise"), "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path)]
    )
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 0 and not errors, "\n".join(errors[:40]) or err
