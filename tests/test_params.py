"""Procedural variants: the episode seed picks task params, rendered into the prompt, the
reference patch and the hidden tests, so a solution memorised under one seed fails another."""

from __future__ import annotations

from stamina_gym.agents import make_agent
from stamina_gym.cli import main
from stamina_gym.config import EnvConfig
from stamina_gym.env import StaminaEnv
from stamina_gym.harness import run_episode
from tests.conftest import DATA, act

CLIP = DATA / "clip"


def clip_env() -> StaminaEnv:
    return StaminaEnv(EnvConfig(id="Clip-v0", task=str(CLIP)))


def variants(seeds=range(12)) -> dict[int, dict]:
    env = clip_env()
    try:
        return {seed: env.reset(seed=seed)[1]["params"] for seed in seeds}
    finally:
        env.close()


def test_the_seed_picks_params_and_the_prompt_shows_them():
    env = clip_env()
    try:
        observation, info = env.reset(seed=3)
        again = env.reset(seed=3)[1]["params"]
    finally:
        env.close()
    params = info["params"]
    assert params == again and set(params) == {"limit", "name"}
    assert f"{params['name']}(x)" in observation["prompt"] and str(params["limit"]) in observation["prompt"]
    assert "{{" not in observation["prompt"]
    assert len({tuple(sorted(p.items())) for p in variants().values()}) >= 3


def test_the_oracle_solves_every_variant():
    for seed in (0, 1, 2, 3):
        env = clip_env()
        agent = make_agent("oracle")
        try:
            result = run_episode(env, agent, seed=seed)
        finally:
            agent.close()
            env.close()
        assert [t.failure_class for t in result.turns] == [None], seed


def test_a_solution_memorised_under_one_seed_fails_under_another():
    seen = variants(range(60))
    first = next(s for s, p in seen.items() if p["limit"] != seen[0]["limit"] and p["name"] == seen[0]["name"])
    remembered = clip_env()
    try:
        remembered.reset(seed=0)
        patch = remembered.reference_patch(0)  # the reference of seed 0's variant
    finally:
        remembered.close()
    env = clip_env()
    try:
        env.reset(seed=first)
        act(env, tool="apply_patch", patch=patch)
        _, _, info = act(env, tool="submit")
    finally:
        env.close()
    assert info["grade"]["failure_class"] == "functional" and info["grade"]["passed"] < info["grade"]["total"]


def test_validate_checks_the_variant_of_each_seed(capsys):
    assert main(["validate", str(CLIP), "--seeds", "0", "1", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("seed ") >= 3 and "params {'limit'" in out and out.rstrip().endswith("valid")
