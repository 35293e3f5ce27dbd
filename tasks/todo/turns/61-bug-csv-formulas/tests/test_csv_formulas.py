import csv
import io
import json

import pytest

DANGEROUS = ['=HYPERLINK("http://x.example","go")', "+1 555 0100 call back", "-5 kg by summer", "@channel standup"]


def _cli(db, *args):
    from todo.cli import main

    return main(["--db", str(db), *args])


def _service(path):
    from todo.service import TodoService
    from todo.storage import TodoStore

    return TodoService(TodoStore(path))


def _rows(text):
    return list(csv.reader(io.StringIO(text)))


def test_dangerous_titles_are_quoted_in_the_cli_export(tmp_path, capsys):
    db = tmp_path / "a.db"
    service = _service(db)
    for title in DANGEROUS:
        service.create(title)
    done = service.create("Fine = ok", priority="high", due="2025-03-01", tags=["b", "a"])
    service.complete(done.id)
    capsys.readouterr()
    assert _cli(db, "export", "--format", "csv") == 0
    rows = _rows(capsys.readouterr().out)
    assert rows[0] == ["id", "title", "done", "priority", "due", "tags"]
    assert [row[1] for row in rows[1:5]] == ["'" + title for title in DANGEROUS]
    assert rows[5] == ["5", "Fine = ok", "true", "high", "2025-03-01", "a;b"]


def test_tags_cell_is_quoted_too(tmp_path):
    from todo.transfer import todos_to_csv

    service = _service(tmp_path / "t.db")
    service.create("Budget", tags=["=sum", "money"])
    service.create("Plain", tags=["x-ray", "@home"])
    service.create("Other", tags=["work"])
    rows = _rows(todos_to_csv(service.list(sort="id", order="asc")))
    assert [row[5] for row in rows[1:]] == ["'=sum;money", "'@home;x-ray", "work"]
    assert [row[1] for row in rows[1:]] == ["Budget", "Plain", "Other"]


@pytest.mark.parametrize("title", ["a=b", "email@example.com", "1+1", "Fix -v flag", "'quoted already", "Ölwechsel"])
def test_harmless_cells_are_unchanged(tmp_path, title):
    from todo.transfer import todos_to_csv

    service = _service(tmp_path / "h.db")
    service.create(title)
    service.create("-")
    rows = _rows(todos_to_csv(service.list(sort="id", order="asc")))
    assert [row[1] for row in rows[1:]] == [title, "'-"]


def test_json_export_keeps_titles(tmp_path, capsys):
    db = tmp_path / "j.db"
    service = _service(db)
    for title in DANGEROUS:
        service.create(title, tags=["=x"])
    capsys.readouterr()
    assert _cli(db, "export") == 0
    data = json.loads(capsys.readouterr().out)
    assert [t["title"] for t in data] == DANGEROUS
    assert all(t["tags"] == ["=x"] for t in data)
    _cli(db, "export", "--format", "csv")
    assert _rows(capsys.readouterr().out)[1][5] == "'=x"
