"""What a project needs to be mined: a recipe file (``stamina-gym mine --recipe FILE``).

A project's history rarely runs as it is in a sandbox of today. Its recipe says, once per
package, what mining cannot guess::

    # recipe.yaml
    test_dependencies: ["pretend==1.0.9", "nose"]   # pip requirements the tests import
    test_import_roots: [".", "helpers"]   # folders of the tests folder whose modules the
                                          # tests import by their top-level name
    fixes:                                # text substitutions in every snapshot
      - {path: "**/*.py", old: "collections.Mapping", new: "collections.abc.Mapping"}
    support_files:                        # helpers the tests of some snapshots lack
      common.py: "def assert_equal(a, b): ..."
    ignore: ["benchmarks/**", "documentation/**"]   # files neither product nor test
    max_turn_lines: 4000                  # a turn's bound, where releases are larger

Test dependencies are installed (``pip install --target``) into the task's ``support/``
folder, which the grader puts first on the hidden tests' path and guards as the task's
own test support (an agent's rebinding of a dependency's function is tampering, as for
any support module). The tests folder itself is an import root by default: ``from common
import x`` in a test, where the tests folder holds ``common.py``, is made a relative
import (``test_import_roots: []`` turns that off). The recipe is copied into the task as
``recipe.yaml``, so the task says how it was made. Recipes of the packages mined here
come with stamina-gym (``recipes/``; ``--recipe six`` names one).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stamina_gym.config import format_validation_error, load_yaml
from stamina_gym.errors import ConfigError
from stamina_gym.task import SourceFix, glob_matches

RECIPE_FILE = "recipe.yaml"


class Recipe(BaseModel):
    """A package's recipe (see the module's docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    test_dependencies: tuple[str, ...] = ()
    """pip requirements (``name``, ``name==1.0``, a wheel's path) the tests import."""
    test_import_roots: tuple[str, ...] = (".",)
    """Folders of the tests folder (``.`` is the folder itself) whose modules the tests import
    by their top-level name."""
    fixes: tuple[SourceFix, ...] = ()
    support_files: dict[str, str] = Field(default_factory=dict)
    """Test helpers some snapshots' tests import but lack (an sdist that left them out):
    path under the task's ``support/`` -> text. A tests folder's own module of that name is
    found first where it has one."""
    ignore: tuple[str, ...] = ()
    """Globs of the files that are neither product nor test (``**/`` also matches at the top)."""
    max_turn_lines: int | None = Field(default=None, ge=1)
    """The most changed lines of product code a turn holds, where the project's releases are
    larger than the miner's default (``MAX_TURN_LINES``): packaging 21.0 rewrote every
    signature as an annotation."""
    notes: str = Field(default="", description="free text: why the recipe is what it is")

    def ignored(self, rel: str) -> bool:
        return any(glob_matches(rel, pattern) for pattern in self.ignore)


#: The recipes that come with stamina-gym, by package name (``--recipe six``).
SHIPPED = Path(__file__).parent / "recipes"


def shipped_recipes() -> list[str]:
    return sorted(path.stem for path in SHIPPED.glob("*.yaml"))


def find_recipe(spec: str) -> Recipe:
    """The recipe ``spec`` names: a file, or the name of a shipped recipe (``six``)."""
    path = Path(spec)
    if path.is_file():
        return load_recipe(path)
    if "/" not in spec and (SHIPPED / f"{spec}.yaml").is_file():
        return load_recipe(SHIPPED / f"{spec}.yaml")
    raise ConfigError(f"--recipe {spec}: no such file, nor a shipped recipe (shipped: {', '.join(shipped_recipes())})")


def load_recipe(path: Path) -> Recipe:
    """The recipe in ``path``; a ConfigError that names the file and what is wrong in it."""
    if not path.is_file():
        raise ConfigError(f"{path}: no such recipe file")
    data = load_yaml(path)
    if data is not None and not isinstance(data, dict):
        raise ConfigError(f"{path}: a recipe is a mapping (test_dependencies, test_import_roots, fixes, support_files, ignore, notes)")
    try:
        return Recipe.model_validate(data or {})
    except ValidationError as exc:
        raise ConfigError(f"{path}: {format_validation_error(exc)}") from None


def write_support(recipe: Recipe, support: Path, progress=lambda line: None) -> None:
    """The recipe's support files and test dependencies, into the task's ``support/``."""
    for rel, text in recipe.support_files.items():
        path = support / rel
        if path.resolve().parent != support.resolve() and support.resolve() not in path.resolve().parents:
            raise ConfigError(f"support_files: {rel!r} is outside the support folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    install_test_dependencies(recipe, support, progress)


def install_test_dependencies(recipe: Recipe, support: Path, progress=lambda line: None) -> None:
    """``pip install --target support`` of the recipe's test dependencies, with the
    interpreter that runs the tests (the sandbox's Python is this one). Scripts are left
    out; each package's metadata, its licence among them, is kept."""
    if not recipe.test_dependencies:
        return
    progress(f"installing the tests' dependencies into {support}: {', '.join(recipe.test_dependencies)}")
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
               "--target", str(support), *recipe.test_dependencies]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        tail = "\n".join((run.stderr or run.stdout).strip().splitlines()[-6:])
        raise ConfigError(f"the recipe's test_dependencies did not install ({' '.join(recipe.test_dependencies)}):\n{tail}")
    shutil.rmtree(support / "bin", ignore_errors=True)
    for dist in _already_loaded(support):
        progress(f"  left out of {support.name}/: {dist.name}, which the grading interpreter loads with pytest")
        for top in _top_levels(dist):
            target = support / top
            shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
        shutil.rmtree(dist)


def _already_loaded(support: Path) -> list[Path]:
    """The installed distributions (``*.dist-info``) whose every top-level module pytest
    already loads in the grading interpreter (zipp's jaraco.functools pulls in
    typing_extensions): the harness finds them loaded from there before any test runs, and
    refuses a support module that is not the task's own copy, voiding every run."""
    with tempfile.TemporaryDirectory() as empty:
        code = ("import sys, pytest\npytest.main(['-q', '--co', '-p', 'no:cacheprovider', sys.argv[1]])\n"
                "print('LOADED', *sorted({m.split('.')[0] for m in sys.modules}))")  # fmt: skip
        probe = subprocess.run([sys.executable, "-I", "-c", code, empty], capture_output=True, text=True, cwd=empty, timeout=300)
    loaded = set(next((line.split()[1:] for line in probe.stdout.splitlines() if line.startswith("LOADED ")), []))
    return [dist for dist in sorted(support.glob("*.dist-info"))
            if (tops := _top_levels(dist)) and {top.removesuffix(".py") for top in tops} <= loaded]  # fmt: skip


def _top_levels(dist: Path) -> list[str]:
    """The top-level module files and package folders a ``*.dist-info`` installed (its RECORD's first parts)."""
    record = dist / "RECORD"
    if not record.is_file():
        return []
    firsts = {line.split(",", 1)[0].split("/", 1)[0] for line in record.read_text(encoding="utf-8").splitlines() if line.strip()}
    return sorted(first for first in firsts if not first.endswith((".dist-info", ".data")) and first not in ("..", "__pycache__", "bin"))
