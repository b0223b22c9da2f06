"""The docs as a site: `mkdocs build --strict` (what `make docs` runs) builds every page of docs/ with no
warning, each page is in the nav, and the API reference holds exactly `toolproof.__all__`. A broken link
fails the build (checked on a copy of the configuration with one bad page)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import toolproof
from tests._data import REPO_ROOT

pytestmark = pytest.mark.e2e  # a build of the whole site: about half a minute

MKDOCS = REPO_ROOT / "mkdocs.yml"


def _mkdocs(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, env=env, timeout=600)


def _pages(nav: list[Any]) -> list[str]:
    out: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        out.extend(_pages(value) if isinstance(value, list) else [value])
    return out


def test_the_site_builds_strict_with_every_page_in_the_nav_and_the_public_api(tmp_path: Path) -> None:
    config = yaml.safe_load(MKDOCS.read_text(encoding="utf-8"))
    pages = _pages(config["nav"])
    assert sorted(pages) == sorted(p.name for p in (REPO_ROOT / "docs").glob("*.md")), pages
    done = _mkdocs(MKDOCS, tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    html = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    documented = {i.rsplit(".", 1)[1] for i in re.findall(r'id="(toolproof(?:\.[\w.]+)?\.[\w]+)"', html)
                  if i.count(".") == 1 or i == "toolproof.stores.PostgresStore"}
    assert documented == set(toolproof.__all__), documented ^ set(toolproof.__all__)


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the missing page](missing.md).\n", encoding="utf-8")
    config = yaml.safe_load(MKDOCS.read_text(encoding="utf-8"))
    config.update(docs_dir=str(docs), nav=[{"Home": "index.md"}], plugins=["search"])
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    done = _mkdocs(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "missing.md" in done.stderr
