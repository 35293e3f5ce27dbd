"""Sampled regression checks (``regression.sample``): a submit reruns a drawn part of the
earlier tests, every ``full_every``-th turn and the last rerun them all, and a test broken
while nobody looked is still paid for, once, when it is next run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from stamina_gym.config import EnvConfig
from stamina_gym.env import StaminaEnv
from tests.conftest import act

TURNS = 6
TESTS_PER_TURN = 3


def module(upto: int, broken: frozenset[int] = frozenset()) -> str:
    """calc with f1..f<upto>, each returning its number (the ``broken`` ones return 0)."""
    return "".join(f"\n\ndef f{k}():\n    return {0 if k in broken else k}\n" for k in range(1, upto + 1))


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory) -> Path:
    """A task of TURNS turns; turn k asks for f<k>() == k and has TESTS_PER_TURN tests."""
    root = tmp_path_factory.mktemp("task")
    (root / "repo" / "calc").mkdir(parents=True)
    (root / "repo" / "calc" / "__init__.py").write_text('"""Numbers."""\n')
    (root / "task.yaml").write_text(
        "id: counting\nversion: 1\ntitle: Counting\ndescription: One function per turn.\n"
        f"phases:\n  - {{name: all, first: 1, last: {TURNS}}}\n"
    )
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root / "repo")]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "seed"], check=True)
    for k in range(1, TURNS + 1):
        turn = root / "turns" / f"{k:02d}-f{k}"
        (turn / "tests").mkdir(parents=True)
        (turn / "turn.yaml").write_text(
            f"title: f{k}\nkind: feature\nprompts:\n  - Add calc.f{k}() returning {k}.\n  - calc.f{k}() should give {k}.\n"
        )
        (turn / "tests" / f"test_f{k}.py").write_text(
            "".join(f"def test_f{k}_{n}():\n    import calc\n\n    assert calc.f{k}() == {k}\n\n\n" for n in range(TESTS_PER_TURN))
        )
        (root / "repo" / "calc" / "__init__.py").write_text('"""Numbers."""\n' + module(k))
        (turn / "reference.patch").write_text(subprocess.run([*git, "diff"], check=True, capture_output=True, text=True).stdout)
        subprocess.run([*git, "commit", "-qam", f"turn {k}"], check=True)  # the next patch starts from this turn
    subprocess.run([*git, "checkout", "-q", "HEAD~" + str(TURNS), "--", "."], check=True)  # the seed again
    shutil.rmtree(root / "repo" / ".git")
    return root


def play(task_dir: Path, seed: int, broken_at: dict[int, frozenset[int]] | None = None, **regression) -> list[dict]:
    """Solve every turn (breaking the functions ``broken_at[turn]`` names from that turn
    on); returns each submit's grade info."""
    env = StaminaEnv(EnvConfig(id="Counting-v0", task=str(task_dir), regression=regression))
    env.reset(seed=seed)
    grades, broken = [], frozenset()
    try:
        for k in range(1, TURNS + 1):
            broken |= (broken_at or {}).get(k, frozenset())
            act(env, tool="write_file", path="calc/__init__.py", content='"""Numbers."""\n' + module(k, broken))
            _, _, info = act(env, tool="submit")
            grades.append(info["grade"])
    finally:
        env.close()
    return grades


def test_a_sample_runs_between_full_runs_and_the_draw_follows_the_seed(task_dir):
    grades = play(task_dir, seed=1, sample=2, full_every=3)
    in_force = [(k - 1) * TESTS_PER_TURN for k in range(1, TURNS + 1)]
    assert [g["regression_in_force"] for g in grades] == in_force
    # turn 1 has nothing earlier; 3 and 6 run all (every 3rd, and the last); the others
    # draw whole files (of 3 tests) until they hold 2 tests: one file
    assert [g["regression_total"] for g in grades] == [0, 3, 6, 3, 3, 15]
    assert all(g["failure_class"] is None for g in grades) and all(not g["newly_broken"] for g in grades)
    draws = [sorted(g["regression_tests"]) for g in grades]
    assert draws == [sorted(g["regression_tests"]) for g in play(task_dir, seed=1, sample=2, full_every=3)]
    other_seeds = [[sorted(g["regression_tests"]) for g in play(task_dir, seed=s, sample=2, full_every=3)] for s in (2, 3)]
    assert any(draw != draws for draw in other_seeds)


def test_a_regression_nobody_sampled_is_paid_once_at_the_next_full_run(task_dir):
    # The attack: break f1 at turn 4, hoping the draw misses its tests. Each of them is
    # counted newly broken exactly once, when drawn or at the full run of the last turn.
    found_at = []
    for seed in range(4):
        grades = play(task_dir, seed=seed, broken_at={4: frozenset({1})}, sample=1, full_every=10)
        paid = [(turn, g["newly_broken"]) for turn, g in enumerate(grades, start=1) if g["newly_broken"]]
        assert len(paid) == 1 and sorted(paid[0][1]) == [f"01-f1/test_f1.py::test_f1_{n}" for n in range(TESTS_PER_TURN)]
        assert grades[paid[0][0] - 1]["failure_class"] == "regression"
        found_at.append(paid[0][0])
    assert TURNS in found_at and min(found_at) < TURNS  # by the full run of the last turn, or drawn before it


def test_without_a_sample_every_submit_reruns_everything(task_dir):
    grades = play(task_dir, seed=0, broken_at={4: frozenset({1})})
    assert [g["regression_total"] for g in grades] == [(k - 1) * TESTS_PER_TURN for k in range(1, TURNS + 1)]
    assert len(grades[3]["newly_broken"]) == TESTS_PER_TURN and grades[3]["failure_class"] == "regression"


@pytest.fixture(scope="module")
def imports_at_top(task_dir, tmp_path_factory) -> Path:
    """The same task with tests that import the product at module level, as real projects
    write them: a product that does not import fails their collection."""
    root = tmp_path_factory.mktemp("top") / "task"
    shutil.copytree(task_dir, root)
    for k in range(1, TURNS + 1):
        (root / "turns" / f"{k:02d}-f{k}" / "tests" / f"test_f{k}.py").write_text(
            f"from calc import f{k}\n\n\n" + "".join(f"def test_f{k}_{n}():\n    assert f{k}() == {k}\n\n\n" for n in range(TESTS_PER_TURN))
        )
    return root


def test_a_wrecked_build_on_a_sampled_turn_is_a_build_failure_that_pays_its_regressions(imports_at_top, backend):
    """With part of the earlier tests chosen, modules that fail to import must not end the
    run (pytest's exit 4 on a missing chosen test): the turn is ``build``, never tampering,
    and every earlier test drawn that passed before counts as newly broken."""
    env = StaminaEnv(EnvConfig(id="Counting-v0", task=str(imports_at_top), regression={"sample": 2, "full_every": 10},
                               sandbox={"kind": backend}))  # fmt: skip
    env.reset(seed=1)
    try:
        for k in (1, 2, 3):
            act(env, tool="write_file", path="calc/__init__.py", content='"""Numbers."""\n' + module(k))
            _, _, info = act(env, tool="submit")
            assert info["grade"]["failure_class"] is None, info["grade"]["detail"]
        act(env, tool="write_file", path="calc/__init__.py", content="def f1(:\n")  # turn 4: nothing imports
        _, reward, info = act(env, tool="submit")
    finally:
        env.close()
    grade = info["grade"]
    assert grade["failure_class"] == "build", grade["detail"]
    assert 0 < grade["regression_total"] < 9, "the turn must be a sampled one"
    assert sorted(grade["newly_broken"]) == sorted(grade["regression_tests"])
    assert info["reward_terms"]["regression"] == -1.0 and reward < -1
