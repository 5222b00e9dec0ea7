"""The elementwise primitive table against what serves it: the enums of kernels/elementwise.cu (parsed from the
source, so a row without a kernel line or a kernel line without a row fails), the array library's functions and
the backend's bodies."""
import re

import numpy as np
import pytest

from minitorch_gpu.backends import _elementwise_table as T
from minitorch_gpu.backends import get_backend
from minitorch_gpu.backends.cuda import loader


def _kernel_enum_members():
    """Every member of the op-code enums of elementwise.cu, read from its source."""
    text = open(f"{loader.kernel_dir()}/{T.KERNEL_FILE}").read()
    members = {}
    for enum in T.KERNEL_ENUMS.values():
        m = re.search(r"enum\s+" + enum + r"\s*\{([^}]*)\}", text)
        assert m is not None, f"enum {enum} is missing from {T.KERNEL_FILE}"
        body = re.sub(r"//[^\n]*", "", m.group(1))
        for item in (x.strip() for x in body.split(",")):
            if item:
                members[item] = enum
    return members


def test_table_rows_and_kernel_enum_lines_match():
    in_source = _kernel_enum_members()
    in_table = {member: enum for enum, member in T.kernel_members().values()}
    assert set(in_table) - set(in_source) == set(), "rows naming a kernel op code that elementwise.cu lacks"
    assert set(in_source) - set(in_table) == set(), "kernel op codes without a row in the primitive table"
    assert in_table == in_source


def test_names_are_unique_and_every_row_is_served():
    names = [p.name for p in T.PRIMITIVES]
    assert len(names) == len(set(names))
    for p in T.PRIMITIVES:
        served = [p.xp is not None, p.body is not None, p.served_by is not None]
        assert served.count(True) == 1, p
        if p.served_by is not None:
            assert p.kernel is not None, f"{p.name}: a kernel-only row needs its kernel"


@pytest.mark.parametrize("row", [p for p in T.PRIMITIVES if p.xp is not None], ids=lambda p: p.name)
def test_array_library_functions_exist(row):
    assert callable(getattr(np, row.xp))


@pytest.mark.parametrize("row", [p for p in T.PRIMITIVES if p.body is not None], ids=lambda p: p.name)
def test_bodies_are_backend_methods(row):
    assert callable(getattr(get_backend("cpu"), row.body))


@pytest.mark.parametrize("arity", ["unary", "binary"])
def test_every_served_row_runs_on_the_cpu_backend(arity):
    be = get_backend("cpu")
    x = np.array([0.25, 0.5, 2.0])
    for name in T.by_arity(arity):
        ints = name.startswith("bitwise") or name.endswith("shift")
        a = np.array([1, 2, 3]) if ints else x
        with np.errstate(all="ignore"):
            r = be.unary(name, a) if arity == "unary" else be.binary(name, a, a)
        assert r.shape == (3,), name
