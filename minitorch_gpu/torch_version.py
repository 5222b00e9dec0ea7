"""``TorchVersion``: ``mt.__version__``, a str that compares as a version (PEP 440), as PyTorch's does.

Scripts gate features on ``torch.__version__ >= "2.0"`` or ``torch.__version__ > (1, 12)``; compared as plain
strings "10.0" would sort before "9.0". Here the comparison parses both sides; where the other side is not a
version, it falls back to comparing strings, as PyTorch does.

    >>> TorchVersion("2.13.0+minitorch_gpu.0.1.0") >= "2.0"
    True
    >>> TorchVersion("2.13.0") > (2, 9, 1)
    True
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["TorchVersion", "InvalidVersion"]

_PATTERN = re.compile(
    r"""^\s*v?
    (?:(?P<epoch>\d+)!)?
    (?P<release>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre_l>alpha|beta|preview|pre|rc|a|b|c)[-_.]?(?P<pre_n>\d+)?)?
    (?:-(?P<post_n1>\d+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>\d+)?)?
    (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$""", re.VERBOSE | re.IGNORECASE)
_PRE_ORDER = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


class InvalidVersion(ValueError):
    """The text is not a PEP 440 version."""


def _sort_key(text: str) -> tuple[Any, ...]:
    """PEP 440's order as a tuple: epoch, release (trailing zeros dropped), pre-release, post, dev, local."""
    m = _PATTERN.match(text)
    if m is None:
        raise InvalidVersion(f"Invalid version: '{text}'")
    release = [int(p) for p in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    post_n = m["post_n1"] or m["post_n2"]
    has_post = m["post_n1"] is not None or m["post_l"] is not None
    # absent parts sort where PEP 440 puts them: a dev release of X before X's pre-releases, X's pre-releases
    # before X, X before X's post releases, and a local label after the public version it labels
    if m["pre_l"] is not None:
        pre: tuple[int, ...] = (0, _PRE_ORDER[m["pre_l"].lower()], int(m["pre_n"] or 0))
    elif m["dev_l"] is not None and not has_post:
        pre = (-1,)
    else:
        pre = (1,)
    post = (0, int(post_n or 0)) if has_post else (-1,)
    dev = (0, int(m["dev_n"] or 0)) if m["dev_l"] is not None else (1,)
    local = tuple((1, int(s), "") if s.isdigit() else (0, 0, s.lower())
                  for s in re.split(r"[-_.]", m["local"])) if m["local"] else ()
    return int(m["epoch"] or 0), tuple(release), pre, post, dev, local


def _other_key(other: Any) -> tuple[Any, ...]:
    if isinstance(other, str):
        return _sort_key(other)
    if isinstance(other, Iterable):
        return _sort_key(".".join(str(item) for item in other))
    if hasattr(other, "release"):  # a ``packaging.version.Version``
        return _sort_key(str(other))
    raise InvalidVersion(other)


class TorchVersion(str):
    """A version string that compares with strings, tuples and ``packaging`` versions as versions."""

    __slots__ = ()
    __hash__ = str.__hash__

    def _compare(self, other: Any, op: str) -> Any:
        try:
            mine, theirs = _sort_key(self), _other_key(other)
        except InvalidVersion:
            # not a version (``"parrot"``, ``5``): the comparison of ``str``, as PyTorch falls back to
            return getattr(str, op)(self, other)
        return getattr(mine, op)(theirs)

    def __eq__(self, other: object) -> Any:
        return self._compare(other, "__eq__")

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, "__lt__")

    def __le__(self, other: Any) -> Any:
        return self._compare(other, "__le__")

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, "__gt__")

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, "__ge__")
