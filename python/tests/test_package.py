"""The package ships its type information and documents every public name."""

import inspect
import pathlib

import timerwheel
import timerwheel.asyncio


def test_stubs_and_py_typed_ship_with_the_package():
    root = pathlib.Path(timerwheel.__file__).parent
    assert (root / "py.typed").exists()
    assert (root / "_timerwheel.pyi").exists()


def test_every_public_name_has_a_docstring():
    undocumented = []
    for module in (timerwheel, timerwheel.asyncio):
        undocumented += _undocumented(module)
    assert undocumented == []


def _undocumented(module):
    undocumented = []
    for name in module.__all__:
        obj = getattr(module, name)
        if name.startswith("__"):
            continue
        if not inspect.getdoc(obj):
            undocumented.append(name)
        if isinstance(obj, type) and not issubclass(obj, BaseException):
            for attr in dir(obj):
                if not attr.startswith("_") and not inspect.getdoc(getattr(obj, attr)):
                    undocumented.append(f"{name}.{attr}")
    return undocumented


def test_version():
    assert timerwheel.__version__.count(".") == 2
