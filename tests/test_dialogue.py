"""The user inside the env: ask, plan and summarize; scores at submit; template
variables from the agent's own repository; bug reports with real reproduction output."""

from __future__ import annotations

import json
import textwrap

import gymnasium as gym
import pytest

from stamina_gym.agents import make_agent
from stamina_gym.config import EnvConfig, UserConfig
from stamina_gym.env import StaminaEnv
from stamina_gym.errors import TaskError
from stamina_gym.harness import run_episode
from stamina_gym.task import load_task_dir
from stamina_gym.user.checks import check_dialogue_data
from tests.conftest import DATA, act, play_oracle

CHAT = DATA / "chat"


def chat_env(**overrides) -> StaminaEnv:
    return StaminaEnv(EnvConfig(id="Chat-v0", task=str(CHAT)), **overrides)


@pytest.fixture
def chat():
    env = chat_env()
    env.reset(seed=0)
    yield env
    env.close()


def expected_scores(clarification, planning, passed, quality, adherence=None):
    """C, P, G and the composite as ScoreConfig defines them; parts not measured drop out."""
    def mean(parts):
        parts = [(w, v) for w, v in parts if v is not None]
        return sum(w * v for w, v in parts) / sum(w for w, _ in parts)

    generation = mean([(0.7, passed), (0.2, None if quality is None else quality * passed), (0.1, adherence)])
    composite = mean([(0.3, clarification), (0.2, planning), (0.5, generation)])
    return {"clarification": clarification, "planning": planning, "generation": generation, "composite": composite}


def assert_scores(actual, expected):
    assert actual.keys() == expected.keys()
    for key, value in expected.items():
        assert actual[key] == (None if value is None else pytest.approx(value, abs=1e-4)), (key, actual, expected)


def submit(env):
    observation, reward, terminated, truncated, info = env.step({"tool": "submit"})
    return observation, reward, info


@pytest.mark.parametrize("env_id", ["StaminaTodo-v2", "StaminaClarify-v3"])
def test_both_envs_expose_ask_and_plan(env_id):
    env = gym.make(env_id)
    try:
        observation, _ = env.reset(seed=0)
        assert "- ask(question)" in observation["output"] and "- plan(steps)" in observation["output"]
        assert "- summarize(requirements)" in observation["output"]
        output, _, info = act(env.unwrapped, tool="ask", question="Anything I should know?")
        assert info["ok"] and output == env.unwrapped.config.user.neutral_answer or env_id == "StaminaClarify-v3"
        output, _, info = act(env.unwrapped, tool="plan", steps=["read the code", "write it"])
        assert info["ok"] and output.startswith("Plan recorded (2 steps)")
    finally:
        env.close()


def test_ask_answers_matched_points_in_the_users_words_and_others_neutrally(chat):
    output, _, _ = act(chat, tool="ask", question="What should mean return for an empty list?")
    assert output == "An empty input raises ValueError."
    output, _, _ = act(chat, tool="ask", question="What colour should the button be?")
    assert output == "No preference there; use your judgement."
    output, reward, info = act(chat, tool="ask", question="")
    assert output.startswith("error: ask: question must be a non-empty string") and not info["ok"]


def play_turn_one(env, questions=(), plan=None, patch=True):
    for question in questions:
        act(env, tool="ask", question=question)
    if plan is not None:
        act(env, tool="plan", steps=plan)
    if patch:
        act(env, tool="apply_patch", patch=env.turns[0].reference_patch)
    return submit(env)


KEY_QUESTIONS = ("What should mean return for an empty list?", "Should the result be rounded?")
REFERENCE_PLAN = ["Write calc/stats.py with mean() computed by statistics.fmean.", "Raise ValueError on empty input, round to 2 places."]


def test_asking_the_key_questions_scores_higher_than_asking_nothing_on_the_same_code():
    results = {}
    for name, questions in (("silent", ()), ("asks", KEY_QUESTIONS)):
        env = chat_env()
        env.reset(seed=0)
        _, reward, info = play_turn_one(env, questions, plan=REFERENCE_PLAN)
        results[name] = (reward, info)
        env.close()
    (silent_reward, silent), (asks_reward, asks) = results["silent"], results["asks"]
    assert silent["grade"]["passed"] == asks["grade"]["passed"] == 3  # the same code passes the same tests
    assert silent["scores"]["clarification"] == 0.0 and asks["scores"]["clarification"] == 1.0
    assert asks["scores"]["composite"] > silent["scores"]["composite"]
    assert asks_reward - silent_reward == pytest.approx(0.3)  # reward.clarification x (1 - 0)
    assert asks["dialogue"]["covered"] == ["empty", "rounding"] and silent["dialogue"]["missed"] == ["empty", "rounding"]


def test_scores_of_a_perfect_turn_and_of_a_null_turn(chat):
    _, reward, info = play_turn_one(chat, KEY_QUESTIONS, plan=REFERENCE_PLAN)
    assert_scores(info["scores"], expected_scores(1.0, 1.0, 1.0, info["grade"]["quality"]["score"], adherence=1.0))
    assert info["reward_terms"]["clarification"] == pytest.approx(0.3) and info["reward_terms"]["planning"] == pytest.approx(0.2)
    assert info["dialogue"]["followed"] == {"library": True} and info["dialogue"]["plan_before_code"] is True
    env = chat_env()
    env.reset(seed=0)
    _, _, null = play_turn_one(env, patch=False)
    env.close()
    assert_scores(null["scores"], expected_scores(0.0, 0.0, 0.0, null["grade"]["quality"]["score"], adherence=0.0))


def test_questions_after_the_first_code_change_do_not_cover(chat):
    act(chat, tool="ask", question=KEY_QUESTIONS[0])
    act(chat, tool="write_file", path="notes.txt", content="thinking\n")
    act(chat, tool="ask", question=KEY_QUESTIONS[1])
    _, _, info = play_turn_one(chat, plan=REFERENCE_PLAN)
    assert [q["early"] for q in info["dialogue"]["questions"]] == [True, False]
    assert info["dialogue"]["covered"] == ["empty"]
    assert info["scores"]["clarification"] == pytest.approx(0.6 * 0.5 + 0.4 * 1.0)


def test_reading_and_running_without_changes_keeps_questions_early(chat):
    act(chat, tool="run", command="ls; python -c 'import calc'")
    act(chat, tool="read_file", path="README.md")
    _, _, info = play_turn_one(chat, KEY_QUESTIONS, plan=REFERENCE_PLAN)
    assert info["dialogue"]["covered"] == ["empty", "rounding"]


def test_irrelevant_and_repeated_questions_lower_relevance(chat):
    questions = (KEY_QUESTIONS[0], KEY_QUESTIONS[0], "Which editor do you use?", KEY_QUESTIONS[1])
    _, _, info = play_turn_one(chat, questions, plan=REFERENCE_PLAN)
    assert info["dialogue"]["relevance"] == 0.5 and info["dialogue"]["questions_asked"] == 4
    assert info["scores"]["clarification"] == pytest.approx(0.6 + 0.4 * 0.5)


def test_a_plan_with_a_wrong_choice_and_code_that_ignores_the_plan(chat):
    _, _, info = play_turn_one(chat, KEY_QUESTIONS, plan=["Compute it with numpy"])
    assert info["dialogue"]["decisions"] == {"library": {"verdict": "rejected", "named": ["numpy"]}}
    assert info["scores"]["planning"] == 0.0
    assert info["dialogue"]["followed"] == {"library": False}  # the code imports statistics, not numpy
    assert info["scores"]["generation"] == pytest.approx(0.7 + 0.2 * info["grade"]["quality"]["score"], abs=1e-4)


def test_a_requirement_summary_is_scored_and_closes_the_questions(chat):
    act(chat, tool="ask", question=KEY_QUESTIONS[0])
    output, _, _ = act(chat, tool="summarize", requirements={"empty input": "raise ValueError", "rounding": "2 decimals"})
    assert "clarification phase is closed" in output
    act(chat, tool="ask", question=KEY_QUESTIONS[1])
    _, _, info = play_turn_one(chat, plan=REFERENCE_PLAN)
    assert info["dialogue"]["requirements_score"] == 1.0
    assert info["dialogue"]["covered"] == ["empty"]


def test_summary_with_a_wrong_value_is_not_credited(chat):
    act(chat, tool="summarize", requirements={"empty input": "return 0", "rounding": "2 decimals"})
    _, _, info = play_turn_one(chat, plan=REFERENCE_PLAN)
    assert info["dialogue"]["requirements_score"] == 0.5


def test_the_user_caps_questions_and_question_length():
    env = chat_env(user={"max_questions": 1, "max_question_chars": 45})
    env.reset(seed=0)
    output, _, info = act(env, tool="ask", question="x" * 46)
    assert "ask one thing at a time" in output and not info["ok"]
    act(env, tool="ask", question=KEY_QUESTIONS[0])
    output, _, _ = act(env, tool="ask", question=KEY_QUESTIONS[1])
    assert output.startswith("I have answered enough questions")
    _, _, info = submit(env)
    env.close()
    assert info["dialogue"]["covered"] == ["empty"]


def test_a_listing_question_gets_at_most_two_points():
    env = chat_env(user={"max_points_per_question": 1})
    env.reset(seed=0)
    output, _, _ = act(env, tool="ask", question="For empty input, and rounding?")
    _, _, info = submit(env)
    env.close()
    assert info["dialogue"]["questions"][0]["points"] == ["empty"] and output == "An empty input raises ValueError."


def test_a_symlinked_folder_does_not_read_host_files_into_the_next_prompt(tmp_path):
    """The attack: the agent makes ``calc`` a link to a host folder, so that the bug report
    of turn 2, which names a function and a file found in ``calc/*.py``, would name what
    the host's files hold there (hidden tests, other tasks). Links are never followed:
    the prompt names the defaults."""
    outside = tmp_path / "host"
    outside.mkdir()
    (outside / "host_secret.py").write_text("def mean_of_the_host_secret():\n    return 1\n")
    env = chat_env()
    env.reset(seed=0)
    output, _, _ = act(env, tool="run", command=f"rm -rf calc && ln -s {outside} calc && ls -l calc")
    assert str(outside) in output
    observation, _, _ = submit(env)
    env.close()
    prompt = observation["prompt"]
    assert "mean_of_the_host_secret" not in prompt and "host_secret.py" not in prompt
    assert "mean in calc/stats.py breaks" in prompt or "mean (calc/stats.py)" in prompt


def test_the_bug_report_names_the_agents_own_code_and_pastes_its_real_output(backend):
    env = chat_env(sandbox={"kind": backend})  # the script runs on the sandbox's own Python
    env.reset(seed=0)
    act(env, tool="write_file", path="calc/averaging.py", content="def weighted_mean(values, weights):\n    return 0\n")
    act(env, tool="write_file", path="calc/stats.py",
        content="def mean(values):\n    raise RuntimeError('agent-code-marker-42')\n")  # fmt: skip
    observation, _, info = submit(env)
    prompt = observation["prompt"]
    assert "weighted_mean in calc/averaging.py breaks" in prompt or "weighted_mean (calc/averaging.py)" in prompt
    assert "RuntimeError: agent-code-marker-42" in prompt and 'File "/repo/calc/stats.py", line 2, in mean' in prompt
    assert "print(mean([1, None, 3]))" in prompt  # the script itself
    assert "{{" not in prompt and ("Ann" in prompt or "Bob" in prompt)
    env.close()


def test_variant_values_follow_the_seed():
    seen = {}
    for seed in range(8):
        env = chat_env()
        env.reset(seed=seed)
        env.step({"tool": "apply_patch", "patch": env.turns[0].reference_patch})
        observation, *_ = env.step({"tool": "submit"})
        seen[seed] = observation["prompt"]
        env.close()
    assert {"Ann" in p for p in seen.values()} == {True, False}
    assert all("mean in calc/stats.py breaks" in p or "mean (calc/stats.py)" in p for p in seen.values())
    assert all("TypeError" in p for p in seen.values())  # the reference code of turn 1 really fails on None
    again = chat_env()
    again.reset(seed=3)
    again.step({"tool": "apply_patch", "patch": again.turns[0].reference_patch})
    assert again.step({"tool": "submit"})[0]["prompt"] == seen[3]
    again.close()


def test_oracle_gets_every_score_and_records_and_summary_hold_them(tmp_path):
    result = play_oracle(chat_env(), tmp_path)
    first, second = result.turns
    assert_scores(first.scores, expected_scores(1.0, 1.0, 1.0, first.quality, adherence=1.0))
    assert_scores(second.scores, expected_scores(None, None, 1.0, second.quality))
    turns = [json.loads(line) for line in (tmp_path / "turns.jsonl").read_text().splitlines()]
    assert turns[0]["scores"]["clarification"] == 1.0 and turns[0]["dialogue"]["questions_asked"] == 2
    summary = json.loads((tmp_path / "summary.json").read_text())
    means = {k: sum(t.scores[k] for t in result.turns if t.scores[k] is not None) for k in ("generation", "composite")}
    assert summary["scores"]["clarification"] == summary["scores"]["planning"] == 1.0
    assert summary["scores"]["generation"] == pytest.approx(means["generation"] / 2, abs=1e-4)


def test_null_agent_gets_zero_clarification_and_planning():
    env = chat_env()
    agent = make_agent("null")
    try:
        result = run_episode(env, agent, seed=0)
    finally:
        env.close()
    first = result.turns[0]
    assert_scores(first.scores, expected_scores(0.0, 0.0, 0.0, first.quality, adherence=0.0))
    assert result.mean_scores()["clarification"] == 0.0


def test_dialogue_fields_are_schema_checked(tmp_path):
    import shutil

    root = tmp_path / "chat"
    shutil.copytree(CHAT, root)
    turn = root / "turns" / "01-mean" / "turn.yaml"
    text = turn.read_text()
    turn.write_text(text.replace("      answer: Round the result", "      anwser: x\n      answer: Round the result"))
    with pytest.raises(TaskError, match=r"spec\.key_points\.1\.anwser: unknown key"):
        load_task_dir(root)
    turn.write_text(text.replace("kind: imports", "kind: vibes"))
    with pytest.raises(TaskError, match=r"decisions\.0\.kind"):
        load_task_dir(root)
    turn.write_text(text.replace("code: [statistics]", "code: []"))
    with pytest.raises(TaskError, match="statistics need code patterns"):
        load_task_dir(root)


def test_validator_checks_phrasings_plans_and_templates(tmp_path):
    import shutil

    root = tmp_path / "chat"
    shutil.copytree(CHAT, root)
    first = root / "turns" / "01-mean" / "turn.yaml"
    first.write_text(first.read_text().replace("'Should the result be rounded?'", "'What about empty input?'")
                     .replace("with mean() computed by statistics.fmean", "with mean()"))  # fmt: skip
    second = root / "turns" / "02-skip-none" / "turn.yaml"
    second.write_text(second.read_text().replace("{{ who }} here", "{{ whom }} here"))
    found = [message for _, message in check_dialogue_data(load_task_dir(root), UserConfig(max_points_per_question=1))]
    assert "key point 'rounding': its phrasing 'What about empty input?' reaches ['empty']" in found
    assert "reference plan 1 does not settle ['library'] with an acceptable choice" in found
    assert "a prompt uses undefined template variable(s) ['whom']" in found
    assert len(found) == 3


@pytest.mark.slow
def test_oracle_gets_the_maximum_on_every_clarify_turn(clarify_oracle_episode):
    env, result = clarify_oracle_episode.env, clarify_oracle_episode.result  # played once a session (conftest)
    w = env.unwrapped.config.reward
    assert result.terminated and len(result.turns) == 9
    records = clarify_oracle_episode.lines("turns.jsonl")
    for turn, record in zip(result.turns, records):
        dialogue = env.unwrapped.turns[turn.turn - 1].spec.spec is not None
        assert turn.failure_class is None and turn.passed == turn.total, turn
        full = 1.0 if dialogue else None
        assert_scores(turn.scores, expected_scores(full, full, 1.0, turn.quality, adherence=full))
        terms = record["reward_terms"]
        assert terms["clarification"] == pytest.approx(w.clarification if dialogue else 0.0)
        assert terms["planning"] == pytest.approx(w.planning if dialogue else 0.0)
        assert terms["tests"] + terms["bonus"] == w.test_pass + w.turn_bonus and terms["rules"] == 0
        assert turn.reward == pytest.approx(sum(terms.values()) - turn.steps * w.step_cost)


@pytest.mark.slow
def test_null_agent_gets_no_clarification_or_planning_on_any_clarify_turn():
    env = gym.make("StaminaClarify-v3")
    agent = make_agent("null")
    try:
        result = run_episode(env, agent, seed=0)
    finally:
        env.close()
    assert len(result.turns) == 9
    for turn in result.turns[:8]:
        assert turn.scores["clarification"] == 0.0 and turn.scores["planning"] == 0.0 and turn.passed == 0, turn
    assert result.mean_scores()["composite"] == 0.0  # the seed's clean code earns no quality credit


def test_the_reproduction_runs_sandboxed_read_only_and_blind_to_hidden_data():
    env = chat_env()
    env.reset(seed=0)
    if env._sandbox.isolation != "bwrap":
        env.close()
        pytest.skip("needs bubblewrap: without it the sandbox says loudly that the filesystem is not isolated")
    hidden_test = env.turns[1].dir / "tests" / "test_none.py"
    attack = textwrap.dedent(
        f"""
        import os
        for target in ("/repo/pwned.txt", "/repo/calc/pwned.txt"):
            try:
                open(target, "w").write("x")
                print("WROTE", target)
            except OSError as exc:
                print("write refused:", type(exc).__name__)
        try:
            print("STOLEN", open({str(hidden_test)!r}).read())
        except OSError as exc:
            print("read refused:", type(exc).__name__)


        def mean(values):
            raise RuntimeError("done")
        """
    )
    act(env, tool="write_file", path="calc/stats.py", content=attack)
    observation, _, _ = submit(env)
    prompt = observation["prompt"]
    left = sorted(env.workspace.relative(p) for p in env.workspace.files())
    env.close()
    assert prompt.count("write refused: OSError") == 2 and "WROTE" not in prompt
    assert "read refused:" in prompt and "STOLEN" not in prompt and "test_none_values_are_skipped" not in prompt
    assert left == ["README.md", "calc/__init__.py", "calc/stats.py"]


def test_an_api_key_in_the_config_never_reaches_the_records(tmp_path):
    from stamina_gym.harness import run_header

    config = EnvConfig(id="Chat-v0", task=str(CHAT), user={"llm": {"api_key": "sk-very-secret"}})
    env = StaminaEnv(config)
    env.reset(seed=0)
    header = json.dumps(run_header(env, make_agent("null"), 0), default=str)
    env.close()
    assert "sk-very-secret" not in header and "**********" in header
    assert env.config.user.llm.api_key.get_secret_value() == "sk-very-secret"
