"""The package layout: layers import downward only, no import circle, short files.

docs/design.md describes the layers. A module may import from its own package and
from the packages below it, at import time or lazily inside a function: both count,
since a lazy import that goes upward is a circle waiting for the first call.
"""
import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "shmrma")

# bottom up; the names on one line form one layer
LAYERS = [
    ["core"],
    ["types"],
    ["p2p"],
    ["coll"],
    ["comm"],
    ["rma"],
    ["io"],
    ["check"],
    ["observe"],        # --trace and --profile: they wrap the classes below
    ["onmpi"],          # the mpi backend, which the facade picks instead
    ["environment", "MPI"],
    ["run"],
    ["bench"],
    ["__init__"],       # the package itself, whose launch() runs a job
]
# the version string lives in the package itself, for packaging; any layer may read it
ROOT_NAMES = {"__version__"}
# the C extensions serve every layer and import nothing of ours
EXTENSIONS = {"_native", "_racecheck", "_pagewatch"}
LAYER_OF = {name: depth for depth, names in enumerate(LAYERS) for name in names}
LONGEST = 1000      # lines; a longer file holds a second concept


def modules():
    """{dotted name: path} of every Python module of the package."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                dotted = "shmrma." + os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                found[dotted[:-len(".__init__")] if dotted.endswith(".__init__")
                      else dotted] = path
    return found


MODULES = modules()


def imported(name, path):
    """The shmrma modules that ``name`` imports, anywhere in its text."""
    is_package = path.endswith("__init__.py")
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = name.split(".")[:None if is_package else -1]
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                if base + "." + alias.name in MODULES:
                    found.add(base + "." + alias.name)
                elif base in MODULES and not (base == "shmrma" and alias.name in
                                              ROOT_NAMES | EXTENSIONS):
                    found.add(base)
    found.discard(name)
    return found


GRAPH = {name: imported(name, path) for name, path in MODULES.items()}


def layer(name):
    part = name.split(".")[1] if "." in name else "__init__"
    return LAYER_OF.get(part)


def test_every_module_has_a_layer():
    assert [n for n in MODULES if layer(n) is None] == []


def test_imports_go_downward_only():
    upward = ["%s imports %s" % (name, target)
              for name, targets in GRAPH.items() for target in sorted(targets)
              if layer(target) > layer(name)]
    assert upward == []


def test_no_import_circle():
    circles, state = [], {}

    def visit(name, trail):
        state[name] = "open"
        for target in sorted(GRAPH[name]):
            if state.get(target) == "open":
                circles.append(trail[trail.index(target):] + [target])
            elif target not in state:
                visit(target, trail + [target])
        state[name] = "done"

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [name])
    assert circles == []


def test_few_modules_loose_in_the_package():
    loose = [name for name in os.listdir(ROOT) if name.endswith((".py", ".c"))]
    assert len(loose) <= 10, loose


@pytest.mark.parametrize("suffix", [".py", ".c", ".h"])
def test_no_file_over_a_thousand_lines(suffix):
    long = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        for name in filenames:
            if name.endswith(suffix):
                path = os.path.join(dirpath, name)
                with open(path) as source:
                    count = sum(1 for _ in source)
                if count > LONGEST:
                    long.append("%s: %d lines" % (os.path.relpath(path, ROOT), count))
    assert long == []
