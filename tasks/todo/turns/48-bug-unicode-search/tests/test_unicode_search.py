from urllib.parse import quote

import pytest
from todo_hidden_http import call

TODOS = [
    ("Café mit Jörg", ["Büro"]),
    ("Ölwechsel beim Händler", []),
    ("ÉCOLE: réunion des parents", ["famille"]),
    ("Купить молоко", ["ДОМ"]),
    ("Plain ascii todo", ["home"]),
    ("Spar 100% Öko", []),
    ("Spar 1000 öko", []),
]


def _app(tmp_path):
    from todo.web import create_app

    app = create_app(str(tmp_path / "u.db"))
    for title, tags in TODOS:
        status, _, body = call(app, "POST", "/todos", json={"title": title, "tags": tags})
        assert status == 201, body
    return app


def _search(app, text, extra=""):
    status, _, body = call(app, "GET", f"/todos?q={quote(text)}{extra}")
    assert status == 200, body
    return sorted(t["title"] for t in body["todos"])


@pytest.mark.parametrize(
    "text, expected",
    [
        ("CAFÉ", ["Café mit Jörg"]),
        ("jÖrg", ["Café mit Jörg"]),
        ("ölwechsel", ["Ölwechsel beim Händler"]),
        ("école RÉUNION", ["ÉCOLE: réunion des parents"]),
        ("КУПИТЬ", ["Купить молоко"]),
    ],
)
def test_titles_match_ignoring_case_beyond_ascii(tmp_path, text, expected):
    app = _app(tmp_path)
    assert _search(app, text) == expected


def test_tags_match_ignoring_case_beyond_ascii(tmp_path):
    app = _app(tmp_path)
    assert _search(app, "büro") == ["Café mit Jörg"]
    assert _search(app, "BÜRO") == ["Café mit Jörg"]
    assert _search(app, "дом") == ["Купить молоко"]
    assert _search(app, "FAMILLE école") == ["ÉCOLE: réunion des parents"]


def test_wildcards_stay_literal_with_accents(tmp_path):
    app = _app(tmp_path)
    assert _search(app, "100% ÖKO") == ["Spar 100% Öko"]
    assert _search(app, "spar ÖKO") == ["Spar 100% Öko", "Spar 1000 öko"]
    assert _search(app, "_") == []
    assert _search(app, "HOME") == ["Plain ascii todo"]


def test_paging_and_filters_with_unicode_search(tmp_path):
    app = _app(tmp_path)
    status, _, body = call(app, "GET", f"/todos?q={quote('ÖKO')}&limit=1&sort=id&order=asc")
    assert status == 200
    assert body["total"] == 2
    assert [t["title"] for t in body["todos"]] == ["Spar 100% Öko"]
    first = call(app, "GET", f"/todos?q={quote('öl')}")[2]["todos"][0]
    call(app, "POST", f"/todos/{first['id']}/complete")
    assert _search(app, "ÖL", "&done=true") == ["Ölwechsel beim Händler"]
    assert _search(app, "ÖL", "&done=false") == []


def test_service_search_ignores_case(tmp_path):
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "s.db"))
    service.create("Überweisung an Ärztin", tags=["Geld"])
    service.create("Straßenfest")
    assert [t.title for t in service.list(search="ÜBERWEISUNG ärztin")] == ["Überweisung an Ärztin"]
    assert [t.title for t in service.list(search="übERweisung")] == ["Überweisung an Ärztin"]


def test_cli_list_search_ignores_case(tmp_path, capsys):
    from todo.cli import main

    db = str(tmp_path / "cli.db")
    for title in ["Café mit Jörg", "Tee mit Anna", "CAFÉ bestellen"]:
        assert main(["--db", db, "add", title]) == 0
    capsys.readouterr()
    assert main(["--db", db, "list", "--search", "café"]) == 0
    assert capsys.readouterr().out.splitlines() == ["[ ] #3 CAFÉ bestellen", "[ ] #1 Café mit Jörg"]
    assert main(["--db", db, "list", "--search", "JÖRG", "--open"]) == 0
    assert capsys.readouterr().out.splitlines() == ["[ ] #1 Café mit Jörg"]
