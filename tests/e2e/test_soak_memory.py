"""The soak: 200,000 calls on one Runner with the in-memory store and every default on stay under the RSS bound
documented in docs/security.md, and the growth levels off once the store's bounds are reached. Runs
benchmarks/soak_memory.py in a fresh interpreter (about a minute on a loaded 2-core machine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests._data import REPO_ROOT

pytestmark = pytest.mark.e2e


def test_200k_calls_on_one_runner_stay_under_the_documented_rss_bound() -> None:
    env = {**os.environ, "PYTHONPATH": f"{REPO_ROOT / 'src'}{os.pathsep}{REPO_ROOT}"}
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" / "soak_memory.py"), "--calls", "200000",
                           "--json"], capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=900)
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    rss = {p["calls"]: p["rss_mb"] for p in summary["points"]}
    assert proc.returncode == 0, (rss, proc.stderr[-2000:])
    assert rss[200_000] <= summary["bound_mb"], rss
    documented = (REPO_ROOT / "docs" / "security.md").read_text()
    assert f"{summary['bound_mb']} MiB" in documented  # the bound the script checks is the one documented
    # Past the store's bounds (audit 100,000, finished intents 20,000, stops 10,000) the growth levels off.
    assert rss[200_000] - rss[100_000] < 0.25 * (rss[100_000] - rss[0]), rss
    assert summary["held"] == {"audit": 100_000, "intents": 20_000, "stops": 10_000}
    assert summary["outcomes"]["replayed"] == 10_000 and summary["outcomes"]["ok"] == 170_000
