"""The distributed package's layers: public API (c10d, optimizer) -> backends -> process groups. Read from the
source, so that an import pointing the wrong way fails here instead of surfacing as a cycle later."""
import ast
from pathlib import Path

import pytest

import minitorch_gpu.distributed as dist

PACKAGE = Path(dist.__file__).parent

# what each module may import from inside the package (the first component of the module it names, relative to
# the package; a subpackage by its dotted path, its __init__ by the subpackage's name)
ALLOWED = {
    "_process_group": set(),
    "_failures": set(),
    "_mpi_backend": {"_process_group", "_failures"},
    "_nccl_backend": {"_process_group", "_mpi_backend"},
    "c10d": {"_process_group"},
    "optimizer": {"_process_group", "c10d"},
    "optim": {"optim"},
    "optim.zero_redundancy_optimizer": {"_process_group", "c10d"},
    "run": {"_failures"},
}


def _path(module):
    sub = PACKAGE.joinpath(*module.split("."))
    return sub / "__init__.py" if sub.is_dir() else sub.with_suffix(".py")


def _imports(module):
    """(unit imported from inside the package, whether the import is inside a function) per import."""
    path = _path(module)
    # the package a relative import of level 1 starts from, as components relative to PACKAGE
    here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    tree = ast.parse(path.read_text())
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ImportFrom) and child.level:
                up = child.level - 1
                base = here[:len(here) - up] if up <= len(here) else None
                if base is not None:  # a level above the package is outside it
                    names = [child.module] if child.module else [a.name for a in child.names]
                    found.extend((".".join(base + [n]).split(".")[0], in_function) for n in names)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return found


@pytest.mark.parametrize("module", sorted(ALLOWED))
def test_imports_point_down(module):
    imported = _imports(module)
    wrong = sorted({m for m, _ in imported} - ALLOWED[module])
    assert not wrong, f"{module} imports {wrong}: only {sorted(ALLOWED[module])} lie below it"
    hidden = sorted({m for m, local in imported if local})
    assert not hidden, f"{module} imports {hidden} inside a function: import at the top instead"


def test_every_module_is_placed():
    modules = set()
    for p in PACKAGE.rglob("*.py"):
        parts = list(p.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if parts:
            modules.add(".".join(parts))
    assert modules == set(ALLOWED), "place a new module of minitorch_gpu.distributed in ALLOWED above"


def test_backends_register_by_name():
    assert dist.Backend.backend_list[:2] == ["mpi", "nccl"]
    assert dist.Backend("gloo") == "gloo"
    with pytest.raises(ValueError, match="NCCL c10d backend already exist"):
        dist.Backend.register_backend("nccl", lambda *a, **k: None, world=lambda: None, devices=("cuda",))
