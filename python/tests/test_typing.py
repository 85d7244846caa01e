"""The stubs under mypy --strict: well-typed calls pass, mismatched callback arguments,
delays and stats keys fail."""

import pathlib

import pytest

mypy_api = pytest.importorskip("mypy.api")

HERE = pathlib.Path(__file__).parent / "typing"


def _mypy(name):
    out, err, status = mypy_api.run(["--strict", "--no-incremental", str(HERE / name)])
    return out + err, status


def test_well_typed_calls_pass_mypy_strict():
    report, status = _mypy("good.py")
    assert status == 0, report


def test_each_mismatch_fails_mypy_strict():
    report, status = _mypy("bad.py")
    assert status == 1, report
    source = (HERE / "bad.py").read_text().splitlines()
    expected = {n for n, line in enumerate(source, 1) if "# error:" in line}
    reported = {int(line.split(":")[1]) for line in report.splitlines() if ": error:" in line}
    assert reported == expected, report
