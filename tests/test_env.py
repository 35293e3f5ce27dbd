"""The Gymnasium contract: spaces, check_env, determinism, no crash on any action."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import stamina_gym
from stamina_gym.env import to_text
from stamina_gym.errors import ConfigError
from tests.conftest import act, mini_env

STAMINA_IDS = sorted(k for k, v in gym.registry.items() if v.entry_point == stamina_gym.ENTRY_POINT)


def test_stamina_todo_is_registered():
    assert "StaminaTodo-v2" in STAMINA_IDS


@pytest.mark.parametrize("env_id", STAMINA_IDS)
def test_check_env_passes_for_every_registered_env(env_id):
    env = gym.make(env_id)
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


def test_make_by_module_path_without_importing_first():
    code = "import gymnasium as gym, sys; env = gym.make('stamina_gym:StaminaTodo-v2'); obs, _ = env.reset(seed=0); print(obs['turn'], 'stamina_gym' in sys.modules); env.close()"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "True"]


def test_overrides_apply_and_unknown_keys_are_named():
    env = gym.make("StaminaTodo-v2", max_turns=3, observation={"repo": "diff"})
    assert env.unwrapped.config.observation.repo == "diff" and env.unwrapped.window == (1, 3)
    env.close()
    with pytest.raises(ConfigError, match="observation.colour: unknown key"):
        gym.make("StaminaTodo-v2", observation={"colour": "red"})


def episode(seed: int, actions: list) -> list:
    env = mini_env()
    trace = []
    observation, info = env.reset(seed=seed)
    trace.append((observation, info))
    for action in actions:
        observation, reward, terminated, truncated, info = env.step(action)
        trace.append((observation, reward, terminated, truncated, info))
        if terminated or truncated:
            break
    env.close()
    return trace


def test_same_seed_and_actions_give_identical_episodes():
    env = mini_env()
    env.reset(seed=0)
    patches = [t.reference_patch for t in env.turns]
    env.close()
    actions = [
        {"tool": "list_files"},
        '{"tool": "run", "command": "ls; echo hi > x.txt"}',
        {"tool": "run_tests"},
        {"tool": "apply_patch", "patch": patches[0]},
        "not json",
        {"tool": "submit"},
        {"tool": "read_file", "path": "calc/__init__.py"},
        {"tool": "submit"},
    ]
    first, second = episode(7, actions), episode(7, actions)
    assert json.dumps(first, default=str) == json.dumps(second, default=str)
    assert len(first) == len(actions) + 1


def test_seed_picks_the_paraphrase():
    prompts = {episode(seed, [])[0][0]["prompt"] for seed in range(12)}
    assert len(prompts) == 2


def test_random_sampled_actions_never_crash():
    env = mini_env()
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(30):
        action = env.action_space.sample()[:2000]
        observation, reward, terminated, truncated, info = env.step(action)
        assert info["ok"] is False and observation["output"].startswith("error:")
        assert reward == pytest.approx(-0.011)
        assert env.observation_space.contains(observation)
    for bad in [{"tool": "read_file"}, {"tool": "nope"}, {"tool": "read_file", "path": 3}, [], 42,
                {"tool": "read_file", "path": "x", "extra": 1}, {"tool": "run", "command": "true", "timeout": -1}]:  # fmt: skip
        observation, reward, *_ , info = env.step(bad)
        assert info["ok"] is False and observation["output"].startswith("error:")
    env.close()


def test_unknown_tool_gets_a_did_you_mean(env):
    output, _, _ = act(env, tool="reed_file", path="x")
    assert "did you mean 'read_file'" in output


def test_text_reads_back_as_it_is_and_fits_the_space(env):
    text = "caf\u00e9 \u2603 \U0001f680 \x00 \u4e2d"
    act(env, tool="write_file", path="uni.txt", content=text + "\n")
    observation, *_ = env.step({"tool": "read_file", "path": "uni.txt"})
    assert text in observation["output"] and "\\u" not in observation["output"]
    observation, *_ = env.step({"tool": "run", "command": "cat uni.txt"})
    assert text in observation["output"]
    assert env.observation_space.contains(observation)
    assert not env.observation_space["output"].contains("a\ud800b")  # UTF-8 cannot carry it
    assert to_text("a\ud800b", 100) == "a\\ud800b" and env.observation_space["output"].contains(to_text("a\ud800b", 100))
    assert to_text("x" * 5000, 1000).endswith("more characters ...]") and len(to_text("x" * 5000, 1000)) == 1000
    assert env.observation_space["output"].contains(env.observation_space["output"].sample())


def test_an_action_past_the_action_space_is_refused_with_its_size(env):
    limit = env.action_space.max_length
    big = {"tool": "write_file", "path": "big.txt", "content": "x" * (limit + 1)}
    for action in (big, json.dumps(big)):
        output, reward, info = act(env, **big) if isinstance(action, dict) else _step_text(env, action)
        assert not info["ok"] and f"past the limit of {limit:,}" in output, output[:200]
        assert not (env.workspace.path / "big.txt").exists()
    output, _, info = act(env, tool="write_file", path="big.txt", content="x" * (limit - 100))
    assert info["ok"], output[:200]


def _step_text(env, text):
    observation, reward, _, _, info = env.step(text)
    return observation["output"], reward, info


def test_repo_observation_modes():
    env = mini_env(observation={"repo": "diff"})
    env.reset(seed=0)
    observation, *_ = env.step({"tool": "write_file", "path": "new.txt", "content": "hello\n"})
    assert "+hello" in observation["repo"]
    env.close()
    env = mini_env(observation={"repo": "full"})
    observation, _ = env.reset(seed=0)
    assert "=== calc/__init__.py ===" in observation["repo"] and "Tiny calculator" in observation["repo"]
    env.close()


@pytest.mark.parametrize("mode", ["tree", "full", "diff"])
def test_a_reset_shows_the_seed_again_whatever_the_last_episode_left(mode):
    """The seed's ``repo`` view is made once per env: a reset after an episode that wrote,
    changed and removed files shows the seed as the first reset did."""
    env = mini_env(observation={"repo": mode})
    first, _ = env.reset(seed=0)
    env.step({"tool": "write_file", "path": "new.txt", "content": "hello\n"})
    env.step({"tool": "write_file", "path": "calc/__init__.py", "content": "changed = 1\n"})
    env.step({"tool": "run", "command": "rm -rf tests"})
    again, _ = env.reset(seed=0)
    env.close()
    assert again["repo"] == first["repo"] and "new.txt" not in again["repo"] and "changed" not in again["repo"]


def test_feedback_summary_and_none():
    env = mini_env()
    env.reset(seed=0)
    observation, *_ = env.step({"tool": "submit"})
    assert "0/2 new checks passed" in observation["output"] and "functional" in observation["output"]
    assert "test_add" not in observation["output"]
    env.close()
    env = mini_env(observation={"feedback": "none"})
    env.reset(seed=0)
    observation, *_ = env.step({"tool": "submit"})
    assert observation["output"] == "Submitted."
    env.close()


def test_step_budget_truncates_the_episode():
    env = mini_env(budgets={"max_steps_per_turn": 3})
    env.reset(seed=0)
    results = [env.step({"tool": "list_files"}) for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]
    assert results[-1][4]["budget"] == "max_steps_per_turn"
    with pytest.raises(RuntimeError, match="call reset"):
        env.step({"tool": "list_files"})
    env.close()


def test_reward_terms_of_a_full_episode(env):
    rewards = []
    for turn in env.turns:
        act(env, tool="apply_patch", patch=turn.reference_patch)
        observation, reward, terminated, truncated, info = env.step({"tool": "submit"})
        terms = info["reward_terms"]
        fixed = ("tests", "bonus", "regression", "rules", "scope", "clarification", "planning", "generation")
        assert {k: terms[k] for k in fixed} == {
            "tests": 1.0, "bonus": 0.5, "regression": -0.0, "rules": -0.0, "scope": 0.0,
            "clarification": 0.0, "planning": 0.0, "generation": 0.0,
        }
        quality = info["grade"]["quality"]  # the reference's own code: relative quality stays 0
        assert terms["quality"] == 0.0 and quality["relative_delta"] == 0.0 == quality["relative"]
        assert quality["reference_score"] == quality["score"]
        rewards.append((reward, sum(terms.values())))
    assert terminated and not truncated
    assert [reward for reward, _ in rewards] == [pytest.approx(total - 0.001) for _, total in rewards]
    assert observation["prompt"] == ""


def test_an_episode_can_start_at_a_later_turn_on_the_reference_state():
    env = mini_env()
    try:
        seed_tree = env.reset(seed=3)[0]["repo"]
        observation, info = env.reset(seed=3, options={"start_turn": 2})
        assert info["turn"] == 2 and int(observation["turn"]) == 2 and "mul" in observation["prompt"]
        assert "starts at request 2" in observation["output"] and observation["repo"] != seed_tree
        assert "def add(a, b)" in (env.workspace.path / "calc" / "__init__.py").read_text()
        first = env.workspace.head()
        act(env, tool="apply_patch", patch=env.turns[1].reference_patch)
        _, reward, info = act(env, tool="submit")
        grade = info["grade"]
        assert grade["passed"] == grade["total"] > 0 and grade["regression_in_force"] == len(env.turns[0].test_ids)
        assert set(grade["regression_tests"].values()) == {"passed"} and info["reward_terms"]["regression"] == 0
        assert env.reset(seed=3, options={"start_turn": 2})[1]["turn"] == 2 and env.workspace.head() == first  # laid again
        act(env, tool="write_file", path="calc/__init__.py", content="")  # breaks turn 1's feature
        _, _, info = act(env, tool="submit")
        assert len(info["grade"]["newly_broken"]) == len(env.turns[0].test_ids) and info["reward_terms"]["regression"] < 0
        observation, info = env.reset(seed=3)
        assert info["turn"] == 1 and observation["repo"] == seed_tree
    finally:
        env.close()


@pytest.mark.parametrize("options, message", [
    ({"start_turn": 0}, "start_turn must be a turn number from 1 to 2 (or a list of them), got 0"),
    ({"start_turn": [1, 3]}, "(or a list of them), got 3"),
    ({"start_turn": []}, "start_turn is an empty list"),
    ({"start_turn": "2"}, "got '2'"),
    ({"start_turn": True}, "got True"),
    ({"start": 2}, "unknown reset option(s) 'start'; the env takes 'start_turn', 'num_turns', 'windows'"),
    ({"start_turn": 2, "num_turns": 2}, "the window of 2 turns from turn 2 ends at turn 3, past the last turn, 2: "
                                        "it may start at turn 1 at the latest"),
    ({"num_turns": 0}, "num_turns must be a number of turns, at least 1, got 0"),
    ({"windows": [[1, 1], [2, 2]]}, "the window of 2 turns from turn 2 ends at turn 3"),
    ({"windows": [[1, 1]], "num_turns": 1}, "give windows, or start_turn and num_turns, not both"),
    ({"windows": [2]}, "each window is a [start_turn, num_turns] pair, got 2"),
    ({"windows": []}, "windows must be a non-empty list"),
])  # fmt: skip
def test_bad_reset_options_are_named(env, options, message):
    with pytest.raises(ValueError) as caught:
        env.reset(seed=0, options=options)
    assert message in str(caught.value)


def test_a_list_of_start_turns_is_drawn_from_and_keeps_the_seeds_other_draws():
    env = mini_env()
    try:
        plain = env.reset(seed=5)[1]
        starts = {env.reset(seed=seed, options={"start_turn": [1, 2]})[1]["turn"] for seed in range(12)}
        assert starts == {1, 2}
        drawn = env.reset(seed=5, options={"start_turn": [1, 2]})[1]
        assert drawn["variants"] == plain["variants"] and drawn["params"] == plain["params"]
    finally:
        env.close()


def test_a_start_later_measures_the_tree_as_laid_even_if_the_agent_rewrites_it_at_once(tmp_path):
    """The policy's first action lands while the start's quality measures still run on the
    reviewer's thread: they must be of the reference's tree as the reset laid it, or junk
    written at once would move the baseline the next submit is paid against."""
    from stamina_gym.quality.measure import QualityMeter
    from stamina_gym.quality.reference import ReferenceTrack

    env = mini_env()
    try:
        env.reset(seed=0, options={"start_turn": 2})
        junk = "".join(f"def f{i}(a,b,c,d,e,f):\n    return eval('a')\n" for i in range(40))
        act(env, tool="write_file", path="calc/__init__.py", content=junk)
        reviewer = env._reviewer
        reviewer._settle_resumed()
        track = ReferenceTrack(env.task, env.params, QualityMeter(tmp_path / "stage"), tmp_path / "reference")
        expected = track.snapshot(1)
        assert reviewer._reference_before.components() == expected.components()
        assert reviewer._before.components() == expected.components()
    finally:
        env.close()


def test_windows_are_drawn_and_each_plays_its_turns_alone():
    """``windows``: the seed draws one; the episode plays exactly its turns and ends after
    the last, terminated, numbered from 1 in the observation and the info. ``max_turns``
    is a cap from the start: it shortens a later start, never refuses it."""
    env = mini_env()
    try:
        drawn = {}
        for seed in range(12):
            observation, info = env.reset(seed=seed, options={"windows": [[1, 1], [2, 1]]})
            drawn[info["turn"]] = (int(observation["turn"]), info["num_turns"], env.window)
        assert drawn == {1: (1, 1, (1, 1)), 2: (2, 1, (2, 2))}
        observation, info = env.reset(seed=0, options={"start_turn": 1, "num_turns": 1})
        act(env, tool="apply_patch", patch=env.turns[0].reference_patch)
        observation, reward, terminated, truncated, info = env.step({"tool": "submit"})
        assert terminated and not truncated and info["turn"] == 1 and int(observation["turn"]) == 1
        assert "the episode's last request" in observation["output"] and info["grade"]["passed"] == info["grade"]["total"]
    finally:
        env.close()
    capped = mini_env(max_turns=2)
    try:
        assert capped.reset(seed=0, options={"start_turn": 2})[1]["num_turns"] == 1 and capped.window == (2, 2)
    finally:
        capped.close()


def test_a_window_of_the_todo_task_is_numbered_from_its_start_in_obs_info_and_records():
    """Start 50, 5 turns, played by the oracle into a rollout record: every observation,
    info and step row says turns 50-54; five submits, all solved, then terminated. Turn 50
    is a full-regression turn, but the episode's first submit draws its regression tests
    (a later start used to begin with the whole set); the window's last submit reruns
    them all, so a test broken unseen by the draws is counted within the window."""
    from stamina_gym.agents import make_agent
    from stamina_gym.rollout.workers import play_episode

    env = gym.make("StaminaTodo-v2")
    agent = make_agent("oracle")
    try:
        record = play_episode(env, agent, episode=0, seed=0, options={"start_turn": 50, "num_turns": 5})
    finally:
        agent.close()
        env.close()
    assert record["failure_class"] is None, record["failure"]
    steps = record["steps"]
    assert steps[0]["turn"] == 50 and steps[0]["observation"]["turn"] == 50
    assert {row["turn"] for row in steps} == set(range(50, 55))
    submits = [row for row in steps if "grade" in row["info"]]
    assert [row["turn"] for row in submits] == [row["info"]["turn"] for row in submits] == [50, 51, 52, 53, 54]
    assert [row["observation"]["turn"] for row in submits] == [51, 52, 53, 54, 54]  # the next request; the last stays
    assert all(row["info"]["grade"]["failure_class"] is None for row in submits) and steps[-1]["terminated"]
    first, last = submits[0]["info"]["grade"], submits[-1]["info"]["grade"]
    assert 0 < first["regression_total"] < first["regression_in_force"], first  # drawn, not the whole set
    assert last["regression_total"] == last["regression_in_force"], last  # the window's last: all of them
    assert record["start_turn"] == 50 and len(record["turn_rewards"]) == 5


def test_a_reset_to_the_same_start_takes_the_grading_folder_staged_and_never_used():
    """A reset stages the first submit's grading folder while the agent works. Reset again
    to the same turn, draw and params before any submit, and that folder is taken as it
    is (a back-to-back reset does not pay the last one's staging); a folder a submit used
    never comes back, and none is left behind."""
    env = mini_env()
    env.reset(seed=0)
    staged = env._staging[1].result().folder
    env.step({"tool": "write_file", "path": "scratch.txt", "content": "x\n"})
    env.reset(seed=0)
    assert env._staging[1].result().folder == staged
    _, reused_reward, _ = act(env, tool="submit")
    env.reset(seed=0)
    fresh = env._staging[1].result().folder
    _, fresh_reward, _ = act(env, tool="submit")
    assert fresh != staged and fresh_reward == reused_reward  # a folder taken again grades as a new one
    env.reset(seed=0)
    env.reset(seed=0)
    env._stager.submit(lambda: None).result()  # the discards queued before it are done
    assert [p.name for p in staged.parent.glob("grade-*")] == [env._staging[1].result().folder.name]
    env.close()
