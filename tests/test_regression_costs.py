"""The regression sample sized by the tests' stored costs (``regression.budget_ms`` and
the task's ``costs.json``, ``stamina_gym.costs``)."""

from __future__ import annotations

import json
import shutil

import pytest

from stamina_gym import costs
from stamina_gym.cli import main
from stamina_gym.config import EnvConfig
from stamina_gym.env import StaminaEnv
from stamina_gym.errors import ConfigError, TaskError
from stamina_gym.task import load_task_dir
from tests.conftest import MINI
from tests.test_regression_sample import TESTS_PER_TURN, TURNS, play, task_dir  # noqa: F401 - a fixture

DEAR = f"01-f1/test_f1.py::test_f1_0"


@pytest.fixture(scope="module")
def priced(task_dir, tmp_path_factory):  # noqa: F811 - the imported fixture
    """The counting task with a costs.json: 10 ms a test, but turn 1's file costs 1000 ms."""
    root = tmp_path_factory.mktemp("priced") / "task"
    shutil.copytree(task_dir, root)
    task = load_task_dir(root)
    measured = {tid: 10.0 for turn in task.turns for tid in turn.test_ids}
    measured[DEAR] = 980.0
    costs.write(task, measured)
    return root


def env_of(root, **regression) -> StaminaEnv:
    return StaminaEnv(EnvConfig(id="Counting-v0", task=str(root), regression=regression))


def draws(root, seed: int, **regression) -> list[tuple[str, ...]]:
    env = env_of(root, **regression)
    env.reset(seed=seed)
    try:
        return [env._regression_to_run(turn.index, env.task.regression_ids(turn.index)) for turn in env.turns]
    finally:
        env.close()


def test_draws_fit_the_budget_and_follow_the_seed(priced):
    task = load_task_dir(priced)
    stored = costs.load(task)
    budget = 2 * TESTS_PER_TURN * 10.0  # two cheap files
    first = draws(priced, seed=1, budget_ms=budget, full_every=10)
    for index, drawn in enumerate(first[:-1], start=1):  # the last turn reruns everything
        in_force = task.regression_ids(index)
        assert sum(stored[t] for t in drawn) <= budget
        assert DEAR not in drawn, "a file dearer than the budget waits for a full run"
        cheap_files = {t.split("::")[0] for t in in_force if t.split("::")[0] != DEAR.split("::")[0]}
        if sum(stored[t] for t in in_force) > budget:
            assert len({t.split("::")[0] for t in drawn}) == min(2, len(cheap_files)), "cheap files fit, and are drawn"
    assert DEAR in first[-1] and set(first[-1]) == set(task.regression_ids(TURNS))
    assert draws(priced, seed=1, budget_ms=budget, full_every=10) == first
    assert any(draws(priced, seed=s, budget_ms=budget, full_every=10) != first for s in (2, 3, 4))


def test_a_budget_that_holds_everything_reruns_everything(priced):
    task = load_task_dir(priced)
    for index, drawn in enumerate(draws(priced, seed=0, budget_ms=10_000, full_every=10), start=1):
        assert drawn == task.regression_ids(index)


def test_a_sampled_episode_pays_a_regression_nobody_drew_at_the_next_full_run(priced):
    """Breaking f1 (the dear file, never drawn) is paid at the last turn's full run."""
    grades = play(priced, seed=0, broken_at={2: frozenset({1})}, budget_ms=60, full_every=10)
    dear_file = [f"01-f1/test_f1.py::test_f1_{n}" for n in range(TESTS_PER_TURN)]
    assert all(not set(dear_file) & set(g["regression_tests"]) for g in grades[1:-1]), "never drawn before the end"
    assert all(g["regression_tests"][t] == "failed" for g in grades[-1:] for t in dear_file)
    assert grades[-1]["regression_total"] == (TURNS - 1) * TESTS_PER_TURN


def test_budget_and_sample_together_are_refused():
    with pytest.raises(ValueError, match="one of regression.budget_ms and regression.sample"):
        EnvConfig(id="X-v0", task="todo", regression={"budget_ms": 100, "sample": 5})


def test_a_budget_without_costs_or_with_stale_costs_is_a_clear_error(task_dir, priced, tmp_path):  # noqa: F811
    with pytest.raises(ConfigError, match="costs.json.*stamina-gym costs"):
        env_of(task_dir, budget_ms=100)
    stale = tmp_path / "stale"
    shutil.copytree(priced, stale)
    data = json.loads((stale / "costs.json").read_text())
    (stale / "costs.json").write_text(json.dumps({**data, "task_version": 99}))
    with pytest.raises(TaskError, match="version 99 of the task, which is now version 1"):
        env_of(stale, budget_ms=100)
    del data["ms"][DEAR]
    (stale / "costs.json").write_text(json.dumps(data))
    with pytest.raises(TaskError, match=r"no cost for 1 test\(s\).*test_f1_0"):
        env_of(stale, budget_ms=100)
    (stale / "costs.json").write_text("{not json")
    with pytest.raises(TaskError, match="not a costs file"):
        env_of(stale, budget_ms=100)


def test_measuring_times_every_test_on_its_own_turns_reference(tmp_path, capsys):
    root = tmp_path / "mini"
    shutil.copytree(MINI, root)
    assert main(["costs", str(root), "--write"]) == 0
    out = capsys.readouterr()
    assert "tests of mini v1" in out.out and "turn 2/2" in out.err and "wrote" in out.out
    task = load_task_dir(root)
    stored = costs.load(task)
    assert set(stored) == {tid for turn in task.turns for tid in turn.test_ids}
    assert all(ms > 0 for ms in stored.values())


def test_measuring_a_turn_whose_tests_fail_on_its_reference_names_it(tmp_path):
    root = tmp_path / "mini"
    shutil.copytree(MINI, root)
    test = root / "turns" / "02-mul" / "tests" / "test_mul.py"
    test.write_text(test.read_text().replace("== product", "== product + 1"))
    with pytest.raises(TaskError, match=r"turn 2 \(02-mul\): its tests do not pass"):
        costs.measure(load_task_dir(root))


def test_the_todo_tasks_costs_are_current():
    from stamina_gym.task import load_task

    assert costs.load(load_task("todo")) is not None
