import pytest
from todo_hidden_http import call


def _app(tmp_path, monkeypatch, page_size, count=7):
    from todo.web import create_app

    if page_size is None:
        monkeypatch.delenv("TODO_PAGE_SIZE", raising=False)
    else:
        monkeypatch.setenv("TODO_PAGE_SIZE", page_size)
    app = create_app(str(tmp_path / f"p{page_size}.db"))
    for n in range(1, count + 1):
        call(app, "POST", "/todos", json={"title": f"item {n}"})
        if n % 2 == 0:
            call(app, "POST", f"/todos/{n}/complete")
    return app


def _page(app, query=""):
    status, _, body = call(app, "GET", "/todos" + query)
    assert status == 200, body
    return [t["title"] for t in body["todos"]], body["total"]


def test_setting_values():
    from todo.config import load_settings

    assert load_settings({}).page_size is None
    assert load_settings({"TODO_PAGE_SIZE": ""}).page_size is None
    assert load_settings({"TODO_PAGE_SIZE": "50"}).page_size == 50
    assert load_settings({"TODO_PAGE_SIZE": " 1 "}).page_size == 1


def test_largest_allowed_page_size():
    from todo.config import ConfigError, load_settings

    assert load_settings({"TODO_PAGE_SIZE": "500"}).page_size == 500
    for bad in ("501", "1000"):
        with pytest.raises(ConfigError) as info:
            load_settings({"TODO_PAGE_SIZE": bad})
        assert "TODO_PAGE_SIZE" in str(info.value) and bad in str(info.value)


@pytest.mark.parametrize("bad", ["0", "-3", "ten", "2.5"])
def test_bad_page_sizes(bad):
    from todo.config import ConfigError, load_settings

    with pytest.raises(ConfigError):
        load_settings({"TODO_PAGE_SIZE": bad})


def test_lists_without_limit_are_paged(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "3")
    assert _page(app) == (["item 7", "item 6", "item 5"], 7)
    assert _page(app, "?offset=3") == (["item 4", "item 3", "item 2"], 7)
    assert _page(app, "?offset=6") == (["item 1"], 7)
    assert _page(app, "?done=true") == (["item 6", "item 4", "item 2"], 3)
    assert _page(app, "?sort=title&order=asc") == (["item 1", "item 2", "item 3"], 7)


def test_explicit_limit_still_wins(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "2")
    assert _page(app, "?limit=5") == (["item 7", "item 6", "item 5", "item 4", "item 3"], 7)
    assert _page(app, "?limit=500")[0][-1] == "item 1"
    status, _, body = call(app, "GET", "/todos?limit=501")
    assert status == 400 and body["field"] == "limit"
    assert _page(app) == (["item 7", "item 6"], 7)


def test_unset_means_everything(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, None)
    assert _page(app) == ([f"item {n}" for n in range(7, 0, -1)], 7)
    paged = _app(tmp_path, monkeypatch, "4")
    assert _page(paged)[0] == ["item 7", "item 6", "item 5", "item 4"]
