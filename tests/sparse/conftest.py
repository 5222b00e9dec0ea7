import warnings

import pytest


@pytest.fixture(autouse=True)
def _quiet_torch():
    # PyTorch warns on every sparse tensor it builds that its invariant checks are off by default (ours are on)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield
