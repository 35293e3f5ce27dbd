"""Two more ways to play: a person answering at the terminal (``--user human``) and the
adapter for clarify/plan/generate programs (``--agent cpg``)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from stamina_gym.agents import make_agent
from stamina_gym.harness import Recorder, run_episode
from tests.test_dialogue import CHAT, KEY_QUESTIONS, assert_scores, chat_env, expected_scores

ASKING_AGENT = textwrap.dedent(
    """
    import json, sys
    actions = [
        {"tool": "ask", "question": "What should mean return for an empty list?"},
        {"tool": "plan", "steps": ["Use statistics.fmean in calc/stats.py", "Raise on empty input"]},
        {"tool": "write_file", "path": "calc/stats.py", "content": "def mean(values):\\n    return 0\\n"},
        {"tool": "submit"},
    ]
    for line in sys.stdin:
        if json.loads(line).get("done"):
            break
        print(json.dumps(actions.pop(0)), flush=True)
    """
)


def test_human_user_reads_questions_and_plans_on_the_terminal_and_answers_from_stdin(tmp_path):
    program = tmp_path / "agent.py"
    program.write_text(ASKING_AGENT)
    out = tmp_path / "records"
    argv = [sys.executable, "-m", "stamina_gym.cli", "run", "--env", "Stamina-chat-v1", "--tasks", str(CHAT),
            "--agent", "command", "--agent-arg", f"command={sys.executable} {program}", "--user", "human",
            "--turns", "1", "--out", str(out)]  # fmt: skip
    done = subprocess.run(argv, input="It has to raise ValueError.\nFine by me.\n", capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "The agent asks: What should mean return for an empty list?" in done.stdout
    assert "The agent's plan:\n1. Use statistics.fmean in calc/stats.py\n2. Raise on empty input" in done.stdout
    assert "Add a mean(values) function" in done.stdout or "I need calc.stats.mean" in done.stdout  # the request is shown
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert steps[0]["output"] == "It has to raise ValueError."
    assert steps[1]["output"].endswith("The user says: Fine by me.")
    turn = json.loads((out / "turns.jsonl").read_text())
    assert turn["dialogue"]["covered"] == ["empty"] and turn["scores"]["clarification"] == 0.6 * 0.5 + 0.4
    assert "dialogue scores (mean over the turns that have them): clarification 0.700" in done.stdout


def test_human_user_at_end_of_input_gets_the_neutral_answer(tmp_path):
    program = tmp_path / "agent.py"
    program.write_text(ASKING_AGENT)
    argv = [sys.executable, "-m", "stamina_gym.cli", "run", "--env", "Stamina-chat-v1", "--tasks", str(CHAT),
            "--agent", "command", "--agent-arg", f"command={sys.executable} {program}", "--user", "human",
            "--turns", "1", "--out", str(tmp_path / "r")]  # fmt: skip
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    steps = [json.loads(line) for line in (tmp_path / "r" / "steps.jsonl").read_text().splitlines()]
    assert steps[0]["output"] == "No preference there; use your judgement."


CPG_PROGRAM = textwrap.dedent(
    '''
    import json, pathlib, sys

    QUESTIONS = %r
    PATCH = """diff --git a/calc/stats.py b/calc/stats.py
    new file mode 100644
    --- /dev/null
    +++ b/calc/stats.py
    @@ -0,0 +1,8 @@
    +import statistics
    +
    +
    +def mean(values):
    +    if not values:
    +        raise ValueError("empty")
    +    return round(statistics.fmean(values), 2)
    +
    """
    command = sys.argv[1]
    if command == "clarify":
        request = json.loads(sys.stdin.readline())
        assert "mean" in request
        answers = []
        for question in QUESTIONS:
            print(question, flush=True)
            answers.append(json.loads(sys.stdin.readline()))
        print("END_OF_QUESTIONS")
        print(json.dumps({"empty input": answers[0], "rounding": answers[1]}))
    elif command == "plan":
        data = json.load(sys.stdin)
        assert data["summary"]["rounding"].startswith("Round")
        if "FAIL_PLAN" in data["request"]:
            sys.exit(4)
        print(json.dumps({"steps": [{"description": "Write calc/stats.py with statistics.fmean"},
                                    {"description": "Raise ValueError when empty, round to 2 places", "depends_on": [1]}]}))
    elif command == "generate":
        data = json.load(sys.stdin)
        assert pathlib.Path(data["repo"], "calc", "__init__.py").is_file() and pathlib.Path.cwd() == pathlib.Path(data["repo"])
        assert len(data["plan"]["steps"]) == 2
        sys.stdout.write(PATCH)
    '''
) % (list(KEY_QUESTIONS),)


def test_cpg_adapter_drives_clarify_plan_generate(tmp_path):
    program = tmp_path / "cpg.py"
    program.write_text(CPG_PROGRAM)
    env = chat_env(max_turns=1)
    agent = make_agent("cpg", command=f"{sys.executable} {program}")
    try:
        result = run_episode(env, agent, seed=0, recorder=Recorder(tmp_path / "rec", {"agent": "cpg"}))
    finally:
        agent.close()
        env.close()
    steps = [json.loads(line) for line in (tmp_path / "rec" / "steps.jsonl").read_text().splitlines()]
    assert [s["action"]["tool"] for s in steps] == ["ask", "ask", "summarize", "plan", "apply_patch", "submit"]
    assert steps[0]["output"] == "An empty input raises ValueError."
    assert result.turns[0].failure_class is None
    first = result.turns[0]
    assert_scores(first.scores, expected_scores(1.0, 1.0, 1.0, first.quality, adherence=1.0))
    turn = json.loads((tmp_path / "rec" / "turns.jsonl").read_text())
    assert turn["dialogue"]["requirements_score"] == 1.0


def test_cpg_program_that_fails_is_a_framework_failure(tmp_path):
    program = tmp_path / "cpg.py"
    program.write_text(CPG_PROGRAM.replace('if "FAIL_PLAN" in data["request"]', "if True"))
    env = chat_env(max_turns=1)
    agent = make_agent("cpg", command=f"{sys.executable} {program}")
    try:
        result = run_episode(env, agent, seed=0)
    finally:
        agent.close()
        env.close()
    assert result.failure == "framework: plan exited with code 4: " and result.turns == []
