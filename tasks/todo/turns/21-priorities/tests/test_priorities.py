import pytest
from todo_hidden_http import call


def _app(tmp_path, name="api.db"):
    from todo.web import create_app

    return create_app(str(tmp_path / name))


def _titles(app, query=""):
    status, _, body = call(app, "GET", "/todos" + query)
    assert status == 200, body
    return [t["title"] for t in body["todos"]]


@pytest.mark.parametrize("level", ["low", "normal", "high"])
def test_create_with_each_level(tmp_path, level):
    app = _app(tmp_path)
    status, _, body = call(app, "POST", "/todos", json={"title": f"task {level}", "priority": level})
    assert status == 201
    assert body["priority"] == level
    assert call(app, "GET", f"/todos/{body['id']}")[2]["priority"] == level


def test_default_priority_is_normal(tmp_path):
    app = _app(tmp_path)
    _, _, body = call(app, "POST", "/todos", json={"title": "no priority given"})
    assert body["priority"] == "normal"
    assert call(app, "GET", "/todos")[2]["todos"][0]["priority"] == "normal"


def test_patch_priority_keeps_other_fields(tmp_path):
    app = _app(tmp_path)
    _, _, todo = call(app, "POST", "/todos", json={"title": "Call the bank", "priority": "low"})
    call(app, "POST", f"/todos/{todo['id']}/complete")
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"priority": "high"})
    assert status == 200
    assert (body["title"], body["done"], body["priority"]) == ("Call the bank", True, "high")
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"priority": "normal", "title": "Call the bank today"})
    assert status == 200
    fetched = call(app, "GET", f"/todos/{todo['id']}")[2]
    assert (fetched["title"], fetched["priority"]) == ("Call the bank today", "normal")


@pytest.mark.parametrize("bad", ["urgent", "HIGH", "", 3, None, ["high"]])
def test_unknown_priority_is_rejected_like_other_bad_input(tmp_path, bad):
    app = _app(tmp_path)
    status, _, body = call(app, "POST", "/todos", json={"title": "x", "priority": bad})
    assert status == 400
    assert body["field"] == "priority" and isinstance(body["error"], str) and body["error"]
    assert call(app, "GET", "/todos")[2]["todos"] == []
    _, _, todo = call(app, "POST", "/todos", json={"title": "keep me", "priority": "low"})
    status, _, body = call(app, "PATCH", f"/todos/{todo['id']}", json={"title": "changed", "priority": bad})
    assert status == 400 and body["field"] == "priority"
    fetched = call(app, "GET", f"/todos/{todo['id']}")[2]
    assert (fetched["title"], fetched["priority"]) == ("keep me", "low")


def test_filter_by_priority_combines_with_done(tmp_path):
    app = _app(tmp_path)
    plan = [("a", "high"), ("b", "low"), ("c", "high"), ("d", "normal"), ("e", "high")]
    ids = {t: call(app, "POST", "/todos", json={"title": t, "priority": p})[2]["id"] for t, p in plan}
    call(app, "POST", f"/todos/{ids['c']}/complete")
    assert _titles(app, "?priority=high") == ["e", "c", "a"]
    assert _titles(app, "?priority=low") == ["b"]
    assert _titles(app, "?priority=high&done=false") == ["e", "a"]
    assert _titles(app, "?priority=normal&done=true") == []
    status, _, body = call(app, "GET", "/todos?priority=urgent")
    assert status == 400 and body["field"] == "priority"


def test_sort_by_priority_uses_rank_not_alphabet(tmp_path):
    app = _app(tmp_path)
    for title, level in [("n1", "normal"), ("h1", "high"), ("l1", "low"), ("h2", "high"), ("n2", "normal")]:
        call(app, "POST", "/todos", json={"title": title, "priority": level})
    assert _titles(app, "?sort=priority") == ["l1", "n1", "n2", "h1", "h2"]
    assert _titles(app, "?sort=priority&order=desc") == ["h2", "h1", "n2", "n1", "l1"]


def test_existing_database_gets_normal_priority(tmp_path):
    import sqlite3

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE todos (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, "
        "done INTEGER NOT NULL DEFAULT 0, created_at TEXT, updated_at TEXT)"
    )
    conn.execute("INSERT INTO todos (title, done) VALUES ('from before', 0)")
    conn.commit()
    conn.close()
    from todo.web import create_app

    app = create_app(str(path))
    todos = call(app, "GET", "/todos")[2]["todos"]
    assert [(t["title"], t["priority"]) for t in todos] == [("from before", "normal")]
    status, _, body = call(app, "PATCH", f"/todos/{todos[0]['id']}", json={"priority": "high"})
    assert status == 200 and body["priority"] == "high"
