"""The Examples sections of the controller's and the agents' docstrings run and print what they show.

A docstring example that drifted from the code fails here, so the documentation of public functions
(networkx's form: docs/contributing.md) stays true.
"""

import doctest
import importlib
import pkgutil

import pytest
from conftest import REPO

PACKAGES = ("controller", "worker")
SKIP = {"controller.jobservice_pb2", "controller.jobservice_pb2_grpc", "controller.__main__", "controller.protogen"}


def _modules_with_examples() -> list[str]:
    names = []
    for package in PACKAGES:
        for info in pkgutil.walk_packages([str(REPO / package)], prefix=f"{package}."):
            relative = info.name.replace(".", "/")
            source = REPO / (f"{relative}/__init__.py" if info.ispkg else f"{relative}.py")
            if info.name not in SKIP and ">>>" in source.read_text():
                names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules_with_examples())
def test_examples_in_docstrings(name, monkeypatch):
    monkeypatch.chdir(REPO)  # examples name files relative to the repository (topologies/star.yaml)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed (output above)"
