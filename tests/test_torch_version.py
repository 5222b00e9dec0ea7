"""``TorchVersion`` (``mt.__version__``) against PyTorch's, over pairs of PEP 440 versions."""
import itertools
import operator

import pytest

import minitorch_gpu as mt
from minitorch_gpu.torch_version import InvalidVersion, TorchVersion, _sort_key

VERSIONS = ["2.0", "2.0.0", "2.0.1", "2.1", "2.10.0", "2.9.1", "1.13.1+cu117", "2.13.0+cpu", "2.13.0",
            "2.13.0a0", "2.13.0a1", "2.13.0b2", "2.13.0rc1", "2.13.0.dev20250101", "2.13.0a0.dev1",
            "2.13.0.post1", "2.13.0.post1.dev3", "1!0.1", "2.13.0+cpu.1", "2.13.0+cu121", "10.0", "v2.13"]
OPS = [operator.eq, operator.lt, operator.le, operator.gt, operator.ge]


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.__name__)
def test_order_matches_torch(torch, op):
    theirs_cls = torch.torch_version.TorchVersion
    for a, b in itertools.product(VERSIONS, VERSIONS):
        assert op(TorchVersion(a), b) == op(theirs_cls(a), b), (a, op.__name__, b)


def test_tuples_packaging_versions_and_non_versions(torch):
    v, theirs = TorchVersion("2.13.0+cpu"), torch.torch_version.TorchVersion("2.13.0+cpu")
    vendored = torch._vendor.packaging.version.Version
    for other in [(2, 12), (2, 13, 0), (3,), vendored("2.13.0"), vendored("2.14"), "parrot", "2.13.0+cpu"]:
        for op in OPS:
            assert op(v, other) == op(theirs, other), (other, op.__name__)
    assert (v == 5) is (theirs == 5) is False
    with pytest.raises(TypeError):
        v >= 5
    with pytest.raises(InvalidVersion, match="Invalid version: 'parrot'"):
        _sort_key("parrot")
    assert (TorchVersion("parrot") < "zebra") is True  # not a version: compared as strings


def test_still_a_string():
    v = TorchVersion("2.13.0+cpu")
    assert isinstance(v, str) and str(v) == "2.13.0+cpu" and v.split("+") == ["2.13.0", "cpu"]
    assert hash(v) == hash("2.13.0+cpu") and {v: 1}["2.13.0+cpu"] == 1
    assert v != "2.13.0+cu121"


def test_package_version_gates_like_a_torch_2_release():
    assert isinstance(mt.__version__, TorchVersion)
    assert mt.__version__ >= "2.0" and mt.__version__ > (1, 13) and not mt.__version__ < "2.0.0"
    assert mt.__version__.split("+")[0] == mt.version.TORCH_API
