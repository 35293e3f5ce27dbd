import json
import re
import shlex
from fnmatch import fnmatch
from pathlib import Path

DEFAULT_PORT = {{ default_port }}


def _root():
    import todo

    return Path(todo.__file__).resolve().parent.parent


def _instructions():
    """(INSTRUCTION, arguments) of the Dockerfile's final stage."""
    found, current = [], ""
    for raw in (_root() / "Dockerfile").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line.startswith("#") or (not line and not current):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        word, _, rest = current.strip().partition(" ")
        found.append((word.upper(), rest.strip()))
        current = ""
    last_from = max(i for i, (word, _) in enumerate(found) if word == "FROM")
    return found[last_from:]


def _args(instructions, name):
    return [rest for word, rest in instructions if word == name]


def _env(instructions):
    env = {}
    for rest in _args(instructions, "ENV"):
        tokens = shlex.split(rest)
        if "=" in tokens[0]:
            env.update(token.split("=", 1) for token in tokens)
        else:
            env[tokens[0]] = rest.split(None, 1)[1].strip()
    return env


def _exec_form(rest):
    value = json.loads(rest)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), rest
    return value


def _port(instructions):
    return int(_env(instructions).get("TODO_PORT", DEFAULT_PORT))


def test_final_image_is_a_slim_python():
    instructions = _instructions()
    image = [t for t in instructions[0][1].split() if not t.startswith("--")][0]
    assert re.fullmatch(r"python:3\.\d+(\.\d+)?-slim(-[a-z]+)?", image), image


def test_runs_as_an_unprivileged_user():
    instructions = _instructions()
    users = [(i, rest) for i, (word, rest) in enumerate(instructions) if word == "USER"]
    assert users, "no USER in the final stage"
    position, user = users[-1]
    assert user.split(":")[0] not in ("root", "0")
    starts = [i for i, (word, _) in enumerate(instructions) if word in ("CMD", "ENTRYPOINT")]
    assert starts and position < min(starts)


def test_database_lives_on_the_data_volume():
    instructions = _instructions()
    db = _env(instructions).get("TODO_DB", "")
    assert db.startswith("/data/") and db.count("/") == 2, db
    volumes = []
    for rest in _args(instructions, "VOLUME"):
        volumes += _exec_form(rest) if rest.startswith("[") else rest.split()
    assert "/data" in [v.rstrip("/") for v in volumes]


def test_listens_on_all_interfaces_and_exposes_its_port():
    instructions = _instructions()
    assert _env(instructions).get("TODO_HOST") == "0.0.0.0"
    exposed = [p.split("/")[0] for rest in _args(instructions, "EXPOSE") for p in rest.split()]
    assert exposed == [str(_port(instructions))]


def test_healthcheck_uses_the_health_endpoint_without_extra_tools():
    instructions = _instructions()
    checks = _args(instructions, "HEALTHCHECK")
    assert len(checks) == 1 and "CMD" in checks[0], checks
    command = checks[0].split("CMD", 1)[1]
    assert "/health" in command
    assert str(_port(instructions)) in command or "TODO_PORT" in command
    assert not re.search(r"\b(curl|wget)\b", command)
    assert not any(re.search(r"\b(curl|wget)\b", rest) for rest in _args(instructions, "RUN"))


def test_starts_the_server_in_exec_form():
    instructions = _instructions()
    entry = [_exec_form(rest) for rest in _args(instructions, "ENTRYPOINT")]
    cmd = [_exec_form(rest) for rest in _args(instructions, "CMD")]
    command = (entry[-1] if entry else []) + (cmd[-1] if cmd else [])
    assert command[0].rsplit("/", 1)[-1] in ("python", "python3")
    assert command[1:] == ["-m", "todo.server"]


def _ignored(name, patterns):
    for pattern in patterns:
        pattern = pattern.strip().strip("/")
        while pattern.startswith("**/"):
            pattern = pattern[3:]
        if pattern and fnmatch(name, pattern):
            return True
    return False


def test_no_databases_or_secrets_go_into_the_image():
    patterns = [line for line in (_root() / ".dockerignore").read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#")]
    for name in ("todo.db", "backup.db", ".env", ".git"):
        assert _ignored(name, patterns), name
    instructions = _instructions()
    for rest in _args(instructions, "COPY") + _args(instructions, "ADD"):
        sources = [s for s in (_exec_form(rest) if rest.startswith("[") else rest.split())[:-1] if not s.startswith("--")]
        assert not any(s.endswith((".db", ".sqlite", ".env")) or s.startswith(".env") for s in sources), rest
    for name in _env(instructions):
        assert not re.search(r"SECRET|PASSWORD|TOKEN|API_KEY", name.upper()), name
