from urllib.parse import quote

import pytest
from todo_hidden_http import call

TODOS = [
    ("Buy oat milk", ["shopping"]),
    ("Call mom about the MILK delivery", []),
    ("Write quarterly report", ["work", "finance"]),
    ("Fix bike tyre", ["errands"]),
    ("Reach 100% test coverage", ["work"]),
    ("Do 1000 push-ups", ["fitness"]),
    ("rename file_name helper", ["code"]),
]


def _app(tmp_path):
    from todo.web import create_app

    app = create_app(str(tmp_path / "search.db"))
    for title, tags in TODOS:
        call(app, "POST", "/todos", json={"title": title, "tags": tags})
    return app


def _search(app, text, extra=""):
    status, _, body = call(app, "GET", f"/todos?q={quote(text)}{extra}")
    assert status == 200, body
    return sorted(t["title"] for t in body["todos"])


@pytest.mark.parametrize("text", ["milk", "MILK", "Milk", "mIlK"])
def test_search_ignores_case(tmp_path, text):
    app = _app(tmp_path)
    assert _search(app, text) == ["Buy oat milk", "Call mom about the MILK delivery"]


def test_search_matches_parts_of_words(tmp_path):
    app = _app(tmp_path)
    assert _search(app, "quart") == ["Write quarterly report"]
    assert _search(app, "ush-u") == ["Do 1000 push-ups"]


def test_search_looks_at_tags_too(tmp_path):
    app = _app(tmp_path)
    assert _search(app, "finance") == ["Write quarterly report"]
    assert _search(app, "shop") == ["Buy oat milk"]
    assert _search(app, "work") == ["Reach 100% test coverage", "Write quarterly report"]


def test_every_word_must_match_in_any_order(tmp_path):
    app = _app(tmp_path)
    assert _search(app, "milk buy") == ["Buy oat milk"]
    assert _search(app, "report work") == ["Write quarterly report"]
    assert _search(app, "milk   delivery  mom") == ["Call mom about the MILK delivery"]
    assert _search(app, "milk bike") == []
    assert len(_search(app, "")) == len(TODOS)
    assert len(_search(app, "   ")) == len(TODOS)


def test_special_characters_match_literally(tmp_path):
    app = _app(tmp_path)
    assert _search(app, "100%") == ["Reach 100% test coverage"]
    assert _search(app, "0%") == ["Reach 100% test coverage"]
    assert _search(app, "e_n") == ["rename file_name helper"]
    assert _search(app, "_") == ["rename file_name helper"]


def test_search_combines_with_filters_and_keeps_the_order(tmp_path):
    app = _app(tmp_path)
    listed = call(app, "GET", "/todos")[2]["todos"]
    ids = {t["title"]: t["id"] for t in listed}
    call(app, "POST", f"/todos/{ids['Buy oat milk']}/complete")
    assert _search(app, "milk", "&done=false") == ["Call mom about the MILK delivery"]
    assert _search(app, "e", "&tag=work") == ["Reach 100% test coverage", "Write quarterly report"]
    _, _, body = call(app, "GET", "/todos?q=e&tag=work&sort=title")
    assert [t["title"] for t in body["todos"]] == ["Reach 100% test coverage", "Write quarterly report"]
    _, _, body = call(app, "GET", "/todos?q=o")
    titles = [t["title"] for t in body["todos"]]
    assert titles == [t for t, _ in reversed(TODOS) if "o" in t.lower() or any("o" in g for g in _)]


def test_cli_list_search(tmp_path, capsys):
    from todo.cli import main

    db = str(tmp_path / "cli.db")
    for title in ["Buy milk", "Walk dog", "Buy dog food", "buy stamps"]:
        main(["--db", db, "add", title])
    main(["--db", db, "done", "3"])
    capsys.readouterr()
    assert main(["--db", db, "list", "--search", "BUY"]) == 0
    assert capsys.readouterr().out.splitlines() == ["[ ] #4 buy stamps", "[x] #3 Buy dog food", "[ ] #1 Buy milk"]
    assert main(["--db", db, "list", "--search", "dog buy", "--open"]) == 0
    assert capsys.readouterr().out.strip() == "No todos."
    assert main(["--db", db, "list", "--search", "dog buy", "--done"]) == 0
    assert capsys.readouterr().out.splitlines() == ["[x] #3 Buy dog food"]
    assert main(["--db", db, "list", "--search", "cat"]) == 0
    assert capsys.readouterr().out.strip() == "No todos."
