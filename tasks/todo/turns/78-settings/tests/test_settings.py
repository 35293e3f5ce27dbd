import pytest

DEFAULT_PORT = {{ default_port }}


def _load(environ=None):
    from todo.config import load_settings

    return load_settings(environ)


def _fields(settings):
    return (settings.db_path, settings.host, settings.port, settings.log_level)


def test_defaults_when_nothing_is_set():
    assert _fields(_load({})) == ("todo.db", "127.0.0.1", DEFAULT_PORT, "INFO")
    blank = {"TODO_DB": "", "TODO_HOST": "  ", "TODO_PORT": "", "TODO_LOG_LEVEL": " "}
    assert _fields(_load(blank)) == ("todo.db", "127.0.0.1", DEFAULT_PORT, "INFO")


def test_values_are_read_and_typed():
    settings = _load({"TODO_DB": "/data/todo.db", "TODO_HOST": "0.0.0.0", "TODO_PORT": "9001", "TODO_LOG_LEVEL": "debug"})
    assert _fields(settings) == ("/data/todo.db", "0.0.0.0", 9001, "DEBUG")
    assert isinstance(settings.port, int)
    settings = _load({"TODO_PORT": " 8123 ", "TODO_LOG_LEVEL": " Warning ", "TODO_HOST": " localhost "})
    assert (settings.port, settings.log_level, settings.host) == (8123, "WARNING", "localhost")
    assert _load({"TODO_LOG_LEVEL": "error"}).log_level == "ERROR"
    assert _load({"TODO_LOG_LEVEL": "INFO"}).log_level == "INFO"


def test_port_range():
    assert _load({"TODO_PORT": "0"}).port == 0
    assert _load({"TODO_PORT": "1"}).port == 1
    assert _load({"TODO_PORT": "65535"}).port == 65535


@pytest.mark.parametrize("value", ["http", "65536", "-1", "80.5", "1e3", "99999999999", "８０８０"])
def test_bad_port_names_the_variable(value):
    from todo.config import ConfigError

    with pytest.raises(ConfigError) as info:
        _load({"TODO_PORT": value})
    assert "TODO_PORT" in str(info.value)
    assert value in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("value", ["verbose", "critical", "0"])
def test_bad_log_level_names_the_variable(value):
    from todo.config import ConfigError

    with pytest.raises(ConfigError) as info:
        _load({"TODO_LOG_LEVEL": value})
    assert "TODO_LOG_LEVEL" in str(info.value) and value in str(info.value)


def test_process_environment_is_the_default(monkeypatch, tmp_path):
    monkeypatch.setenv("TODO_DB", str(tmp_path / "env.db"))
    monkeypatch.setenv("TODO_PORT", "7001")
    monkeypatch.delenv("TODO_HOST", raising=False)
    monkeypatch.delenv("TODO_LOG_LEVEL", raising=False)
    assert _fields(_load()) == (str(tmp_path / "env.db"), "127.0.0.1", 7001, "INFO")
    from todo.config import get_db_path

    assert get_db_path() == str(tmp_path / "env.db")
