"""Imports point down: the package's layers, read from the source, must form no cycle.

Every ``import`` counts, function-local ones included (a late import that dodges a cycle still makes
one); only imports under ``if TYPE_CHECKING:`` are free. A unit is a top-level module or subpackage
(``utils`` counts per subpackage: ``utils.hooks`` sits at the bottom, ``utils.data`` near the top).
"""
import ast
import pathlib

import pytest

PKG = "minitorch_gpu"
ROOT = pathlib.Path(__file__).resolve().parents[1] / PKG

# bottom to top: a unit may import its own layer's units and those below, never one above
LAYERS = [
    {"_mode", "_shapes", "_dtype", "_device", "_layout", "_native", "_op_range", "utils.hooks", "jit", "compiler",
     "_utils", "torch_version", "_typeinfo", "_inductor", "onnx"},
    {"backends", "version"},
    {"tensor", "_tensor_str"},
    {"autograd"},
    {"ops", "linalg", "utils._grads"},
    {"cuda", "accelerator", "optim", "utils._foreach_utils", "sparse", "testing", "utils.checkpoint", "distributions"},
    {"distributed", "profiler", "amp"},
    {"nn", "utils.data"},
    {"models", "serialization", "_compile"},
    {"train"},
]


def _module_name(path):
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts), path.name == "__init__.py"


def _unit(module):
    parts = module.split(".")[1:]
    if not parts:
        return None  # the package namespace itself: it imports every layer to re-export them
    if parts[0] == "utils" and len(parts) > 1:
        return "utils." + parts[1]
    return parts[0]


def _is_type_checking(node):
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree, module, is_pkg):
    """Absolute names of the package's modules imported anywhere in ``tree``."""
    here = module.split(".") if is_pkg else module.split(".")[:-1]
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            stack.append(child)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = here[:len(here) - (child.level - 1)]
                    prefix = ".".join(base + ([child.module] if child.module else []))
                else:
                    prefix = child.module or ""
                for alias in child.names:
                    yield f"{prefix}.{alias.name}" if not child.module or child.level else prefix


def unit_graph():
    """{unit: {units it imports}} over every module of the package."""
    graph = {}
    for path in ROOT.rglob("*.py"):
        module, is_pkg = _module_name(path)
        src = _unit(module)
        if src is None:
            continue
        deps = graph.setdefault(src, set())
        for name in _imports(ast.parse(path.read_text(encoding="utf-8")), module, is_pkg):
            if name.split(".")[0] != PKG:
                continue
            dst = _unit(name)
            if dst is not None and dst != src:
                deps.add(dst)
    return graph


def _cycle(graph):
    """One cycle of units as a list, or None."""
    state = {}
    for start in graph:
        if start in state:
            continue
        path, it = [start], [iter(sorted(graph.get(start, ())))]
        state[start] = "open"
        while path:
            nxt = next(it[-1], None)
            if nxt is None:
                state[path.pop()] = "done"
                it.pop()
            elif state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = "open"
                path.append(nxt)
                it.append(iter(sorted(graph.get(nxt, ()))))
    return None


def test_no_import_cycle_between_units():
    cycle = _cycle(unit_graph())
    assert cycle is None, "import cycle between packages: " + " -> ".join(cycle)


@pytest.mark.parametrize("level", range(len(LAYERS)))
def test_lower_layers_never_import_upward(level):
    graph = unit_graph()
    allowed = set().union(*LAYERS[:level + 1])
    for unit in sorted(LAYERS[level]):
        upward = sorted(d for d in graph.get(unit, ()) if d not in allowed)
        assert not upward, f"{unit} (layer {level}) imports {upward}, which sit above it"


def test_every_layered_unit_exists():
    graph = unit_graph()
    missing = sorted(u for layer in LAYERS for u in layer if u not in graph)
    assert not missing, f"LAYERS names units that do not exist: {missing}"


def test_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
