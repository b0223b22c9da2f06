"""Create (or reuse) a virtual environment with pip, on machines whose python3 lacks ensurepip.

Debian's python3 ships without `ensurepip` unless python3-venv is installed. When `python -m venv` cannot
install pip, we create the venv without pip and install pip from its wheel on PyPI (the only network we
rely on is the package registry).
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path


def main(target: str) -> int:
    venv = Path(target)
    python = venv / "bin" / "python"
    if python.exists() and subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode == 0:
        return 0
    if subprocess.run([sys.executable, "-m", "venv", str(venv)]).returncode == 0:
        subprocess.run([python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=False)
        return 0
    subprocess.run([sys.executable, "-m", "venv", "--clear", "--without-pip", str(venv)], check=True)
    with urllib.request.urlopen("https://pypi.org/pypi/pip/json", timeout=60) as response:
        release = json.load(response)
    wheel = next(u for u in release["urls"] if u["filename"].endswith(".whl"))
    path = venv / wheel["filename"]
    urllib.request.urlretrieve(wheel["url"], path)
    subprocess.run([python, f"{path}/pip", "install", "--quiet", str(path)], check=True)
    path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ".venv"))
