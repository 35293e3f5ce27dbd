import unicodedata

import pytest
from todo_hidden_http import call

LIMIT = 80
E_ACUTE_NFD = "e\u0301"
E_ACUTE = "\u00e9"


@pytest.fixture
def app(tmp_path):
    from todo.web import create_app

    return create_app(str(tmp_path / "u.db"))


def _create(app, title):
    return call(app, "POST", "/todos", json={"title": title})


def test_combining_marks_count_once(app):
    status, _, body = _create(app, E_ACUTE_NFD * LIMIT)
    assert status == 201, body
    assert body["title"] == E_ACUTE * LIMIT
    status, _, body = _create(app, E_ACUTE_NFD * (LIMIT + 1))
    assert status == 400 and body["field"] == "title"
    status, _, body = _create(app, "  " + E_ACUTE_NFD * LIMIT + " \t")
    assert status == 201 and body["title"] == E_ACUTE * LIMIT


def test_titles_are_stored_composed(app):
    status, _, body = _create(app, "Cafe\u0301 au lait with Zoe\u0308")
    assert status == 201
    assert body["title"] == "Caf\u00e9 au lait with Zo\u00eb"
    assert unicodedata.is_normalized("NFC", body["title"])
    todo_id = body["id"]
    status, _, body = call(app, "PATCH", f"/todos/{todo_id}", json={"title": "  A\u030angstro\u0308m  "})
    assert status == 200 and body["title"] == "\u00c5ngstr\u00f6m"
    assert call(app, "GET", f"/todos/{todo_id}")[2]["title"] == "\u00c5ngstr\u00f6m"
    assert [t["title"] for t in call(app, "GET", "/todos")[2]["todos"]] == ["\u00c5ngstr\u00f6m"]


def test_emoji_and_right_to_left_text(app):
    party = "\U0001F389"
    assert _create(app, party * LIMIT)[0] == 201
    status, _, body = _create(app, party + " fe\u0302te " + party * (LIMIT - 7))
    assert status == 201 and body["title"] == party + " f\u00eate " + party * (LIMIT - 7)
    status, _, body = _create(app, party * (LIMIT + 1))
    assert status == 400 and body["field"] == "title"
    for title in ("\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd", "\u0645\u0631\u062d\u0628\u0627 world 42", "\u6f22\u5b57\u306e\u30bf\u30a4\u30c8\u30eb"):
        status, _, body = _create(app, title)
        assert status == 201 and body["title"] == title
        assert call(app, "GET", f"/todos/{body['id']}")[2]["title"] == title


@pytest.mark.parametrize("bad", ["nul\x00byte", "bell\x07", "escape\x1b[31m red", "del\x7f", "c1\x9bcontrol"])
def test_control_characters_are_refused(app, bad):
    status, _, body = _create(app, bad)
    assert status == 400 and body["field"] == "title", body
    todo_id = _create(app, "clean")[2]["id"]
    status, _, body = call(app, "PATCH", f"/todos/{todo_id}", json={"title": bad})
    assert status == 400 and body["field"] == "title"
    assert [t["title"] for t in call(app, "GET", "/todos")[2]["todos"]] == ["clean"]


def test_whitespace_around_is_still_trimmed(app):
    status, _, body = _create(app, "\n\t  Gru\u0308\u00dfe aus Ko\u0308ln \n")
    assert status == 201 and body["title"] == "Gr\u00fc\u00dfe aus K\u00f6ln"


def test_service_and_import_follow_the_same_rules(tmp_path):
    from todo.errors import ValidationError
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "s.db"))
    assert service.create("Re\u0301sume\u0301").title == "R\u00e9sum\u00e9"
    with pytest.raises(ValidationError) as info:
        service.create("bad\x00title")
    assert info.value.field == "title"
    with pytest.raises(ValidationError):
        service.import_todos([{"title": "fine"}, {"title": "also\x00fine?"}])
    assert [t.title for t in service.list()] == ["R\u00e9sum\u00e9"]
    imported = service.import_todos([{"title": E_ACUTE_NFD * LIMIT}])
    assert imported[0].title == E_ACUTE * LIMIT


def test_line_breaks_inside_become_spaces(app):
    status, _, body = _create(app, "Cafe\u0301\n\tau  lait")
    assert status == 201 and body["title"] == "Caf\u00e9 au lait"
