def _cli(db, *args):
    from todo.cli import main

    return main(["--db", str(db), *args])


def _seed(db, capsys):
    for title in ["Buy milk", "Walk dog", "Pay rent"]:
        _cli(db, "add", title)
    _cli(db, "done", "2")
    capsys.readouterr()


def test_edit_renames(tmp_path, capsys):
    db = tmp_path / "cli.db"
    _seed(db, capsys)
    assert _cli(db, "edit", "1", "Buy oat milk") == 0
    assert capsys.readouterr().out.strip() == "Renamed #1: Buy oat milk"
    _cli(db, "list")
    assert "[ ] #1 Buy oat milk" in capsys.readouterr().out.splitlines()


def test_edit_errors(tmp_path, capsys):
    db = tmp_path / "cli.db"
    _seed(db, capsys)
    assert _cli(db, "edit", "1", "   ") == 1
    assert capsys.readouterr().err.startswith("Error:")
    assert _cli(db, "edit", "9", "Ghost") == 1
    assert capsys.readouterr().err.startswith("Error:")
    _cli(db, "list")
    assert "[ ] #1 Buy milk" in capsys.readouterr().out.splitlines()


def test_undo_reopens(tmp_path, capsys):
    db = tmp_path / "cli.db"
    _seed(db, capsys)
    assert _cli(db, "undo", "2") == 0
    assert capsys.readouterr().out.strip() == "Reopened #2: Walk dog"
    _cli(db, "list")
    assert capsys.readouterr().out.splitlines() == ["[ ] #3 Pay rent", "[ ] #2 Walk dog", "[ ] #1 Buy milk"]
    assert _cli(db, "undo", "7") == 1
    assert capsys.readouterr().err.startswith("Error:")


def test_list_done_and_open_filters(tmp_path, capsys):
    db = tmp_path / "cli.db"
    _seed(db, capsys)
    assert _cli(db, "list", "--done") == 0
    assert capsys.readouterr().out.splitlines() == ["[x] #2 Walk dog"]
    assert _cli(db, "list", "--open") == 0
    assert capsys.readouterr().out.splitlines() == ["[ ] #3 Pay rent", "[ ] #1 Buy milk"]
    _cli(db, "undo", "2")
    capsys.readouterr()
    _cli(db, "list", "--done")
    assert capsys.readouterr().out.strip() == "No todos."
