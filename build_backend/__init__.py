"""helion-kiln's PEP 517 build backend.

A thin layer over ``setuptools.build_meta``: every hook is setuptools' own,
except that ``build_wheel``, ``build_editable`` and ``build_sdist`` first run
the kiln build (discover, plan, tune, lock) and then add its results.  No
torch or helion import happens at module import time; the kiln build imports
them only when a hook runs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401  (re-exported PEP 517 hooks)
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

from tuning.errors import KilnError


def _fail(error: KilnError) -> SystemExit:
    """One readable paragraph instead of a traceback through pip's hook runner."""
    print(f"\nkiln: error: {error}\n", file=sys.stderr, flush=True)
    return SystemExit(f"kiln: error: {error}")


def _package_dir(package: str) -> str:
    return package.replace(".", "/")


def build_wheel(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    from tuning.runtime.table import TABLE_FILENAME

    from .archives import rewrite_wheel
    from .builder import run_build

    try:
        outcome = run_build(Path.cwd(), config_settings)
    except KilnError as e:
        raise _fail(e) from None
    name = _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    extra = {f"{_package_dir(p)}/{TABLE_FILENAME}": data for p, data in outcome.tables.items()}
    rewrite_wheel(Path(wheel_directory) / name, extra)
    return name


def build_editable(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                   metadata_directory: str | None = None) -> str:
    """Editable installs read the table from the source tree, so it is written there."""
    from tuning.runtime.table import TABLE_FILENAME

    from .builder import run_build

    try:
        outcome = run_build(Path.cwd(), config_settings)
    except KilnError as e:
        raise _fail(e) from None
    for package, data in outcome.tables.items():
        (Path.cwd() / _package_dir(package) / TABLE_FILENAME).write_bytes(data)
    return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    """The sdist carries kiln.lock, so a build from it bakes without retuning."""
    from .archives import rewrite_sdist
    from .settings import load_settings

    try:
        settings = load_settings(Path.cwd(), config_settings, os.environ)
    except KilnError as e:
        raise _fail(e) from None
    name = _setuptools.build_sdist(sdist_directory, config_settings)
    extra: dict[str, bytes] = {}
    lock = settings.lock_path
    if lock.is_file() and lock.is_relative_to(settings.project_dir):
        extra[lock.relative_to(settings.project_dir).as_posix()] = lock.read_bytes()
    rewrite_sdist(Path(sdist_directory) / name, extra)
    return name
