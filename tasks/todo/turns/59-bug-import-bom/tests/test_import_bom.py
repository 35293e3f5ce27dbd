import json

import pytest

BOM = "\ufeff"


def _cli(db, *args):
    from todo.cli import main

    return main(["--db", str(db), *args])


def test_cli_imports_a_file_with_a_bom(tmp_path, capsys):
    source = tmp_path / "backup.json"
    text = '[\n  {"title": "Book flights", "done": true},\n  {"title": "Pack bags"}\n]\n'
    source.write_bytes(BOM.encode("utf-8") + text.replace("\n", "\r\n").encode("utf-8"))
    db = tmp_path / "a.db"
    assert _cli(db, "import", str(source)) == 0
    assert capsys.readouterr().out.strip() == "Imported 2 todo(s)."
    _cli(db, "list")
    assert capsys.readouterr().out.splitlines() == ["[ ] #2 Pack bags", "[x] #1 Book flights"]


def test_exported_backup_edited_on_windows_round_trips(tmp_path, capsys):
    first, second, backup = tmp_path / "one.db", tmp_path / "two.db", tmp_path / "backup.json"
    _cli(first, "add", "Café au lait")
    _cli(first, "export", "-o", str(backup))
    edited = backup.read_text(encoding="utf-8").replace("Café au lait", "Café crème")
    backup.write_text(edited, encoding="utf-8-sig")
    assert backup.read_bytes().startswith(b"\xef\xbb\xbf")
    capsys.readouterr()
    assert _cli(second, "import", str(backup)) == 0
    capsys.readouterr()
    _cli(second, "export")
    assert [t["title"] for t in json.loads(capsys.readouterr().out)] == ["Café crème"]


def test_broken_files_with_a_bom_are_still_refused(tmp_path, capsys):
    db = tmp_path / "a.db"
    source = tmp_path / "bad.json"
    for content in [BOM, BOM + "{oops", BOM + '[{"title": "   "}]']:
        source.write_text(content, encoding="utf-8")
        assert _cli(db, "import", str(source)) == 1
        assert capsys.readouterr().err.startswith("Error:")
    source.write_text(BOM + "[]", encoding="utf-8")
    assert _cli(db, "import", str(source)) == 0
    assert capsys.readouterr().out.strip() == "Imported 0 todo(s)."


def test_items_from_json_skips_a_leading_bom():
    from todo.errors import ValidationError
    from todo.transfer import items_from_json

    assert items_from_json(BOM + '[{"title": "x"}]') == [{"title": "x"}]
    assert items_from_json(BOM + '\r\n[{"title": "y"}]\r\n') == [{"title": "y"}]
    assert items_from_json('[{"title": "' + BOM + 'z"}]') == [{"title": BOM + "z"}]
    with pytest.raises(ValidationError):
        items_from_json(BOM)
    with pytest.raises(ValidationError):
        items_from_json("[1] " + BOM)
