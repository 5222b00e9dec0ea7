"""The machine a benchmark ran on, in one line for its results file: these timings are only comparable side by
side, so a reader needs to know which CPU and how busy it was. Imports nothing heavy (benchmarks set thread
variables before NumPy loads)."""
from __future__ import annotations

import os
import platform


def machine_description() -> str:
    """CPU model, logical CPU count, Python version, and the load average at the time of the call."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = ""
    if hasattr(os, "getloadavg"):
        # a shared machine's other work shows in every timing: say how busy it was
        load = f", load average {os.getloadavg()[0]:.1f} at the end of the run"
    return f"{cpu}, {os.cpu_count()} logical CPUs, Python {platform.python_version()}{load}"
