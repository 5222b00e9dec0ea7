"""Fixtures of the reliability tests: a small corpus and an uninterrupted reference run of the main job."""
import random

import pytest
from train_runs import SMALL, run_train


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    rng = random.Random(0)
    words = ["def", "return", "self", "import", "class", "lambda"]
    path = tmp_path_factory.mktemp("corpus") / "words.txt"
    path.write_text("\n".join(" ".join(rng.choice(words) for _ in range(6)) for _ in range(300)) + "\n")
    return str(path)


@pytest.fixture(scope="session")
def reference(corpus, tmp_path_factory):
    """An uninterrupted run of SMALL: (output directory, its stdout)."""
    out = str(tmp_path_factory.mktemp("reference"))
    r = run_train("--data", corpus, "--out", out, *SMALL)
    assert r.returncode == 0, r.stderr
    return out, r.stdout
