"""``mt.backends.mps``: present and not available, as in a PyTorch build without MPS."""
import pytest

import minitorch_gpu as mt


def test_mps_answers_match_a_torch_build_without_it(torch):
    import minitorch_gpu.backends.mps as mps
    assert mps is mt.backends.mps
    assert mps.is_available() is torch.backends.mps.is_available() is False
    assert mps.is_built() is torch.backends.mps.is_built() is False
    with pytest.raises(RuntimeError) as ours:
        mps.is_macos13_or_newer()
    with pytest.raises(RuntimeError) as theirs:
        torch.backends.mps.is_macos13_or_newer()
    assert str(ours.value) == str(theirs.value)
