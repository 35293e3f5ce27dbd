from urllib.parse import quote

import pytest
from todo_hidden_http import call

PASSWORD = "pa55word-{{ min_password_length }}-long-enough"
ACUTE = "\u0301"  # a combining acute accent
DIAERESIS = "\u0308"  # a combining diaeresis


@pytest.fixture(autouse=True)
def _cheap_password_hashing(monkeypatch):
    """Some tests register and log in: hash passwords with few iterations."""
    try:
        monkeypatch.setattr("todo.auth.HASH_ITERATIONS", 1000, raising=False)
    except ImportError:  # no todo/auth.py at all: the behaviour is graded all the same
        pass


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


def _add(app, title, auth=None, **fields):
    status, _, body = call(app, "POST", "/todos", json={"title": title, **fields}, headers=auth)
    assert status == 201, body
    return body


def _found(app, words, extra="", auth=None):
    status, _, body = call(app, "GET", f"/todos?sort=id&q={quote(words)}{extra}", headers=auth)
    assert status == 200, body
    return [todo["title"] for todo in body["todos"]]


def test_a_combining_accent_in_the_search_finds_the_title(tmp_path):
    app = _app(tmp_path / "s.db")
    _add(app, "Book a table at Caf\u00e9 M\u00fcller")
    _add(app, "Cafeteria menu")
    assert _found(app, "cafe" + ACUTE) == ["Book a table at Caf\u00e9 M\u00fcller"]
    assert _found(app, "CAFE" + ACUTE + " MU" + DIAERESIS + "LLER") == ["Book a table at Caf\u00e9 M\u00fcller"]
    assert _found(app, "caf\u00e9") == ["Book a table at Caf\u00e9 M\u00fcller"]


def test_accented_search_finds_notes_typed_the_other_way(tmp_path):
    app = _app(tmp_path / "s.db")
    _add(app, "Send CV", notes="update the re" + ACUTE + "sume" + ACUTE + " first")
    _add(app, "Plain", notes="resume the work")
    assert _found(app, "r\u00e9sum\u00e9") == ["Send CV"]
    assert _found(app, "R\u00c9SUM\u00c9") == ["Send CV"]
    assert _found(app, "re" + ACUTE + "sume" + ACUTE) == ["Send CV"]
    assert _found(app, "resume") == ["Plain"]


def test_checklist_items_and_tags_match_either_way(tmp_path):
    app = _app(tmp_path / "s.db")
    talk = _add(app, "Conference talk")
    status, _, body = call(app, "POST", f"/todos/{talk['id']}/items", json={"text": "pre" + ACUTE + "sentation slides"})
    assert status == 201, body
    _add(app, "Lunch", tags=["caf\u00e9"])
    assert _found(app, "pr\u00e9sentation") == ["Conference talk"]
    assert _found(app, "cafe" + ACUTE) == ["Lunch"]


def test_accents_still_count(tmp_path):
    app = _app(tmp_path / "s.db")
    _add(app, "Caf\u00e9 opening")
    _add(app, "Cafe opening")
    assert _found(app, "cafe" + ACUTE) == ["Caf\u00e9 opening"]
    assert _found(app, "cafe") == ["Cafe opening"]


def test_combining_accents_with_filters_and_paging(tmp_path):
    app = _app(tmp_path / "s.db")
    for number in range(3):
        _add(app, f"Caf\u00e9 shift {number}", priority="high" if number else "low")
    _add(app, "Other shift", priority="high")
    status, _, body = call(app, "GET", f"/todos?q={quote('cafe' + ACUTE + ' shift')}&priority=high&sort=id&limit=1")
    assert status == 200, body
    assert body["total"] == 2
    assert [todo["title"] for todo in body["todos"]] == ["Caf\u00e9 shift 1"]


def test_a_users_search_stays_within_their_todos(tmp_path):
    app = _app(tmp_path / "s.db")
    assert call(app, "POST", "/users", json={"username": "zoe", "password": PASSWORD})[0] == 201
    status, _, body = call(app, "POST", "/users/login", json={"username": "zoe", "password": PASSWORD})
    assert status == 200, body
    zoe = {"Authorization": f"Bearer {body['token']}"}
    _add(app, "Caf\u00e9 with Zo\u00e9", zoe)
    _add(app, "Caf\u00e9 for nobody")
    assert _found(app, "cafe" + ACUTE, auth=zoe) == ["Caf\u00e9 with Zo\u00e9"]
    assert _found(app, "cafe" + ACUTE) == ["Caf\u00e9 for nobody"]
