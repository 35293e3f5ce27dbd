"""Where the envs and tasks that ship with the package live: in ``stamina_gym/_data/`` of
an installed wheel (``setup.py`` copies the checkout's top-level ``envs/`` and ``tasks/``
there at build time), else beside the package (a checkout or an editable install)."""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
DATA_DIR = PACKAGE_DIR / "_data"


def data_dir(name: str) -> Path:
    """The shipped folder ``name`` (``envs`` or ``tasks``)."""
    packaged = DATA_DIR / name
    return packaged if packaged.is_dir() else PACKAGE_DIR.parent / name


def env_spec_files() -> dict[str, Path]:
    """Env id -> spec file, for every shipped ``envs/*.yaml``."""
    return {path.stem: path for path in sorted(data_dir("envs").glob("*.yaml"))}
