from todo_hidden_http import call


def _app(path):
    from todo.web import create_app

    return create_app(str(path))


def _add(app, title, **fields):
    todo = call(app, "POST", "/todos", json={"title": title, **fields})[2]
    return todo["id"]


def _add_with_items(app, title, items, **fields):
    todo_id = _add(app, title, **fields)
    for text in items:
        call(app, "POST", f"/todos/{todo_id}/items", json={"text": text})
    return todo_id


def _search(app, query):
    status, _, body = call(app, "GET", "/todos?sort=id&q=" + query)
    assert status == 200, body
    return [t["title"] for t in body["todos"]]


def test_words_in_notes_are_found(tmp_path):
    app = _app(tmp_path / "s.db")
    _add(app, "trip", notes="don't forget the Passport")
    _add(app, "groceries", notes="milk, eggs")
    assert _search(app, "passport") == ["trip"]
    assert _search(app, "PASS") == ["trip"]
    assert _search(app, "eggs") == ["groceries"]


def test_words_in_checklist_items_are_found(tmp_path):
    app = _app(tmp_path / "s.db")
    _add_with_items(app, "move flat", ["book van", "cancel Internet"])
    _add_with_items(app, "party", ["buy balloons"])
    assert _search(app, "internet") == ["move flat"]
    assert _search(app, "ball") == ["party"]


def test_every_word_must_match_somewhere(tmp_path):
    app = _app(tmp_path / "s.db")
    _add_with_items(app, "trip", ["pack charger"], notes="passport", tags=["travel"])
    _add(app, "passport renewal", notes="photo booth")
    assert _search(app, "trip+passport") == ["trip"]
    assert _search(app, "charger+travel+passport") == ["trip"]
    assert _search(app, "passport") == ["trip", "passport renewal"]
    assert _search(app, "passport+booth") == ["passport renewal"]
    assert _search(app, "passport+nothing") == []


def test_search_still_combines_with_filters_and_paging(tmp_path):
    app = _app(tmp_path / "s.db")
    ids = [_add(app, f"todo {n}", notes="needs a receipt" if n % 2 else "", priority="high" if n < 4 else "low")
           for n in range(1, 7)]
    call(app, "POST", f"/todos/{ids[0]}/complete")
    status, _, body = call(app, "GET", "/todos?q=receipt&done=false&sort=id&limit=1")
    assert status == 200
    assert [t["title"] for t in body["todos"]] == ["todo 3"] and body["total"] == 2
    assert [t["title"] for t in call(app, "GET", "/todos?q=receipt&priority=low")[2]["todos"]] == ["todo 5"]


def test_removed_notes_and_items_no_longer_match(tmp_path):
    app = _app(tmp_path / "s.db")
    todo_id = _add(app, "call bank", notes="ask about the mortgage")
    item = call(app, "POST", f"/todos/{todo_id}/items", json={"text": "find the statement"})[2]
    assert _search(app, "mortgage") == ["call bank"]
    assert _search(app, "statement") == ["call bank"]
    call(app, "PATCH", f"/todos/{todo_id}", json={"notes": None})
    call(app, "DELETE", f"/todos/{todo_id}/items/{item['id']}")
    assert _search(app, "mortgage") == []
    assert _search(app, "statement") == []
