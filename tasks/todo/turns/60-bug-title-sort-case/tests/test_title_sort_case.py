from todo_hidden_http import call

TITLES = ["Écrire au syndic", "écouter le podcast", "Öl kaufen", "öffnungszeiten prüfen", "apple pie", "Zebra",
          "ÉCOUTER LE PODCAST", "Σπίτι", "σχολείο"]
ASC = ["apple pie", "Zebra", "écouter le podcast", "ÉCOUTER LE PODCAST", "Écrire au syndic", "öffnungszeiten prüfen",
       "Öl kaufen", "Σπίτι", "σχολείο"]


def _app(path):
    from todo.web import create_app

    app = create_app(str(path))
    for title in TITLES:
        call(app, "POST", "/todos", json={"title": title})
    return app


def _titles(app, query):
    status, _, body = call(app, "GET", f"/todos?{query}")
    assert status == 200, body
    return [t["title"] for t in body["todos"]]


def test_title_sort_ignores_case_for_all_letters(tmp_path):
    app = _app(tmp_path / "a.db")
    assert _titles(app, "sort=title") == ASC
    assert _titles(app, "sort=title&order=asc") == ASC


def test_descending_and_ties(tmp_path):
    app = _app(tmp_path / "a.db")
    desc = _titles(app, "sort=title&order=desc")
    assert desc == ["σχολείο", "Σπίτι", "Öl kaufen", "öffnungszeiten prüfen", "Écrire au syndic", "ÉCOUTER LE PODCAST",
                    "écouter le podcast", "Zebra", "apple pie"]


def test_paging_and_filters_with_title_sort(tmp_path):
    app = _app(tmp_path / "a.db")
    status, _, body = call(app, "GET", "/todos?sort=title&limit=3&offset=2")
    assert [t["title"] for t in body["todos"]] == ASC[2:5] and body["total"] == len(TITLES)
    first = call(app, "GET", "/todos?sort=id&order=asc&limit=1")[2]["todos"][0]
    call(app, "POST", f"/todos/{first['id']}/complete")
    assert _titles(app, "sort=title&done=false") == [t for t in ASC if t != "Écrire au syndic"]
    assert _titles(app, "sort=title&q=podcast") == ["écouter le podcast", "ÉCOUTER LE PODCAST"]


def test_service_sorts_titles_ignoring_case(tmp_path):
    from todo.service import TodoService
    from todo.storage import TodoStore

    service = TodoService(TodoStore(tmp_path / "s.db"))
    for title in ["Übung", "ufo", "über", "Ufer"]:
        service.create(title)
    assert [t.title for t in service.list(sort="title")] == ["Ufer", "ufo", "über", "Übung"]
    assert [t.title for t in service.list(sort="title", order="desc")] == ["Übung", "über", "ufo", "Ufer"]
