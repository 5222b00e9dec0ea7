"""What the benchmarks write beside their numbers: the machine they ran on, in one line (these timings are only
comparable side by side, so a reader needs to know which CPU and how busy it was), and the results files
themselves. Imports nothing heavy (benchmarks set thread variables before NumPy loads)."""
from __future__ import annotations

import json
import os
import platform
from typing import Any


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


def write_results(folder: str, stem: str, res: Any, text: str) -> None:
    """``<stem>.json`` (the results) and ``<stem>.md`` (their table) in ``folder``, made if missing."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, stem + ".json"), "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(folder, stem + ".md"), "w", encoding="utf-8") as f:
        f.write(text)
