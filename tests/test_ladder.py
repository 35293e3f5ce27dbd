"""The reward ranks agents of graded skill as an expert would: the ladder of scripted
policies (``stamina_gym.agents.ladder``) holds its order on a slice of every env, and each
flaw costs through the term that should price it. The full-episode table is
``scripts/ladder.py``'s (docs/benchmarks/ladder.md)."""

from __future__ import annotations

import pytest

from stamina_gym.agents.ladder import RUNGS, order_problems, rung_name
from stamina_gym.harness import play_rung

TURNS = 4  # enough for the flaws of 25% (one turn) and 50% (two turns) to differ


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["StaminaTodo-v2", "StaminaClarify-v3"])
def test_the_ladder_holds_its_order_and_each_flaw_costs_through_its_term(env_id, tmp_path):
    """Over 120 s on clarify on a busy 2-core machine: it plays thirteen rungs, each a
    four-turn episode with a graded submit a turn, and the order is only seen across all."""
    played = {}
    for agent, kwargs in RUNGS:
        name = rung_name(agent, kwargs)
        played[name] = play_rung(env_id, agent, kwargs, seed=0, turns=TURNS, records=tmp_path / name)
    means = {name: run["total"] for name, run in played.items()}
    assert order_problems(means, TURNS) == [], means  # no attack above null + 0.05 a turn
    oracle = played["oracle"]["terms"]
    assert oracle["quality"] == 0 and oracle["regression"] == 0
    for share in (25, 50):
        assert played[f"oracle-debt-{share}"]["terms"]["quality"] < 0  # tests pass, the code got worse
        assert played[f"oracle-break-{share}"]["terms"]["regression"] < 0  # an earlier feature broke
        assert played[f"oracle-skip-{share}"]["terms"]["tests"] < oracle["tests"]
        assert played[f"oracle-mutant-{share}"]["terms"]["tests"] < oracle["tests"]
    assert played["tamper"]["terms"]["tamper"] < 0 and played["wreck"]["terms"]["quality"] < 0
    # owning every report of the sandbox, a forger earns what it guesses: at most a quarter
    guessed, earned = played["guess"]["terms"], oracle["tests"] + oracle["bonus"]
    assert guessed.get("tamper", 0) == 0 and guessed["tests"] + guessed["bonus"] <= 0.25 * earned, (guessed, earned)


def test_the_guess_rung_refuses_a_grading_cache_and_leaves_the_grading_as_it_was(tmp_path):
    """What the forger reports must never be kept where an honest submit could read it."""
    import gymnasium as gym

    from stamina_gym import env as env_module
    from stamina_gym.agents.ladder import owning_the_stream

    before = env_module.run_hidden_tests, env_module.StaminaEnv.__init__
    with owning_the_stream(), pytest.raises(ValueError, match="grading_cache"):
        gym.make("StaminaTodo-v2", grading_cache=str(tmp_path / "cache"))
    assert (env_module.run_hidden_tests, env_module.StaminaEnv.__init__) == before


def test_the_order_check_names_what_is_out_of_place():
    means = {"oracle": 3.0, "oracle-debt-25": 2.0, "oracle-debt-50": 2.5, "null": 0.0, "wreck": 0.1, "tamper": -5.0,
             "attack-reader": 0.5, "attack-frames": 0.2}  # fmt: skip
    assert order_problems(means, turns=4) == [
        "attack-reader (0.500) should earn no more than null (0.000) + 0.05 a turn over 4 turns",
        "oracle-debt-25 (2.000) should earn more than oracle-debt-50 (2.500)",
        "null (0.000) should earn more than wreck (0.100)",
    ]


def test_a_mutant_parse_caught_by_another_threads_tree_is_tried_again(monkeypatch):
    """Fails where one retry was all: on a loaded 2-core machine, CPython 3.11's "AST
    constructor recursion depth mismatch" (another thread building a tree at once) failed
    the mutation rung of a ladder test twice in a row. The text is never at fault."""
    from stamina_gym import pyast
    from stamina_gym.agents import ladder

    real, failures = pyast.parse, iter([True, True, True])

    def busy(source, filename="<unknown>"):
        if next(failures, False):
            raise SystemError("AST constructor recursion depth mismatch (before=162, after=29)")
        return real(source, filename)

    monkeypatch.setattr(pyast, "parse", busy)
    found = ladder._mutants("app.py", ["def f(a, b):", "    return a + b"], {"    return a + b"})
    assert found and all(mutant.line == 2 for mutant in found)
