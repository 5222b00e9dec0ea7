"""Anomaly detection: record each op's forward stack so backward errors can point at it.

Global (not thread-local), as in PyTorch. When on, every recorded node keeps the stack of the
forward call that created it, every in-place write keeps its stack on the version counter, and the
engine checks each backward output for NaN.
"""
import traceback

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]

_mode = {"enabled": False, "check_nan": True}


def is_anomaly_enabled():
    return _mode["enabled"]


def is_anomaly_check_nan_enabled():
    return _mode["check_nan"]


def _stack():
    # drop the frames inside minitorch_gpu itself: the user wants their own line
    frames = [f for f in traceback.extract_stack()[:-1] if "minitorch_gpu" not in (f.filename or "")]
    return "".join(traceback.format_list(frames))


class detect_anomaly:
    """Context manager (and decorator) that turns anomaly detection on."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        self.prev = None

    def __enter__(self):
        import warnings
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", stacklevel=2)
        self.prev = dict(_mode)
        _mode["enabled"] = True
        _mode["check_nan"] = self.check_nan
        return self

    def __exit__(self, *exc):
        _mode.update(self.prev)
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off; takes effect at once, restores on exit when used with ``with``."""

    def __init__(self, mode, check_nan=True):
        self.prev = dict(_mode)
        _mode["enabled"] = bool(mode)
        _mode["check_nan"] = check_nan

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _mode.update(self.prev)
        return False
