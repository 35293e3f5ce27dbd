import pytest


def test_add_assigns_ids_and_get_returns_todo(tmp_path):
    from todo.models import Todo
    from todo.storage import TodoStore

    store = TodoStore(tmp_path / "t.db")
    first = store.add(Todo("Buy milk"))
    second = store.add(Todo("Walk dog", done=True))
    assert isinstance(first.id, int) and isinstance(second.id, int)
    assert first.id != second.id
    got = store.get(second.id)
    assert (got.id, got.title, got.done) == (second.id, "Walk dog", True)
    store.close()


def test_get_missing_returns_none(tmp_path):
    from todo.models import Todo
    from todo.storage import TodoStore

    store = TodoStore(tmp_path / "t.db")
    saved = store.add(Todo("Buy milk"))
    assert store.get(saved.id + 100) is None
    store.close()


def test_list_returns_all_in_insertion_order(tmp_path):
    from todo.models import Todo
    from todo.storage import TodoStore

    store = TodoStore(tmp_path / "t.db")
    for title in ["b", "c", "a"]:
        store.add(Todo(title))
    assert [t.title for t in store.list()] == ["b", "c", "a"]
    store.close()


def test_update_changes_title_and_done(tmp_path):
    from todo.models import Todo
    from todo.storage import TodoStore

    store = TodoStore(tmp_path / "t.db")
    saved = store.add(Todo("Buy milk"))
    store.update(Todo("Buy oat milk", True, saved.id))
    got = store.get(saved.id)
    assert (got.title, got.done) == ("Buy oat milk", True)
    with pytest.raises(KeyError):
        store.update(Todo("nope", id=saved.id + 50))
    store.close()


def test_delete_reports_whether_it_existed(tmp_path):
    from todo.models import Todo
    from todo.storage import TodoStore

    store = TodoStore(tmp_path / "t.db")
    keep = store.add(Todo("keep"))
    gone = store.add(Todo("gone"))
    assert store.delete(gone.id) is True
    assert store.delete(gone.id) is False
    assert [t.id for t in store.list()] == [keep.id]
    store.close()


def test_data_persists_across_store_instances(tmp_path):
    from todo.models import Todo
    from todo.storage import TodoStore

    path = tmp_path / "persist.db"
    with TodoStore(path) as store:
        saved = store.add(Todo("Remember me", done=True))
    with TodoStore(str(path)) as store:
        got = store.get(saved.id)
    assert (got.title, got.done) == ("Remember me", True)
