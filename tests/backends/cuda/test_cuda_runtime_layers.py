"""The CUDA runtime's place in the layers: the dispatch layer never imports the public ``mt.cuda`` package above
it, and the runtime under ``backends/cuda`` imports nothing of the dispatch layer but its shared types."""
import ast
from pathlib import Path

import minitorch_gpu

PKG = Path(minitorch_gpu.__file__).parent


def _imports(path):
    """Absolute names of the modules a file imports (relative imports resolved), with line numbers."""
    module = ".".join(path.relative_to(PKG.parent).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    if path.name == "__init__.py":
        module = package
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module
            found.append((name, node.lineno))
            # ``from . import x`` may name a submodule
            found += [(f"{name}.{a.name}", node.lineno) for a in node.names]
    return found


def _violations(folder, forbidden, allowed=()):
    out = []
    for path in sorted((PKG / folder).rglob("*.py")):
        for name, line in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in forbidden) and \
                    not any(name == a or name.startswith(a + ".") for a in allowed):
                out.append(f"{path.relative_to(PKG.parent)}:{line} imports {name}")
    return out


def test_dispatch_layer_does_not_import_the_public_cuda_package():
    assert _violations("backends", ["minitorch_gpu.cuda"]) == []


def test_cuda_runtime_imports_only_the_shared_types_of_the_dispatch_layer():
    dispatch = [f"minitorch_gpu.backends.{p.stem}" for p in (PKG / "backends").glob("*.py")]
    # the elementwise primitive table is data with no imports, shared by both sides like the types
    assert _violations("backends/cuda", dispatch, allowed=["minitorch_gpu.backends._types",
                                                           "minitorch_gpu.backends._elementwise_table"]) == []


def test_the_scan_sees_relative_imports():
    names = [n for n, _ in _imports(PKG / "backends" / "cuda_backend.py")]
    assert "minitorch_gpu.backends.cuda.launch" in names and "minitorch_gpu.backends.base" in names
