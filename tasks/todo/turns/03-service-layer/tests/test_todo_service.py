import pytest


def _service(tmp_path):
    from todo.service import TodoService
    from todo.storage import TodoStore

    return TodoService(TodoStore(tmp_path / "svc.db"))


def test_create_strips_whitespace_and_persists(tmp_path):
    service = _service(tmp_path)
    todo = service.create("   Buy milk  ")
    assert todo.title == "Buy milk"
    assert todo.done is False
    assert isinstance(todo.id, int)
    assert service.get(todo.id).title == "Buy milk"


def test_get_unknown_raises_todo_not_found(tmp_path):
    from todo.errors import TodoNotFound

    service = _service(tmp_path)
    service.create("x")
    with pytest.raises(TodoNotFound) as info:
        service.get(999)
    assert info.value.todo_id == 999
    assert isinstance(info.value, LookupError)


def test_list_returns_created_todos(tmp_path):
    service = _service(tmp_path)
    service.create("one")
    service.create("two")
    assert sorted(t.title for t in service.list()) == ["one", "two"]


def test_rename_updates_title(tmp_path):
    service = _service(tmp_path)
    todo = service.create("Buy milk")
    renamed = service.rename(todo.id, "  Buy oat milk ")
    assert renamed.title == "Buy oat milk"
    assert service.get(todo.id).title == "Buy oat milk"


def test_rename_and_delete_unknown_raise(tmp_path):
    from todo.errors import TodoNotFound

    service = _service(tmp_path)
    with pytest.raises(TodoNotFound):
        service.rename(41, "nope")
    with pytest.raises(TodoNotFound):
        service.delete(41)


def test_delete_removes_todo(tmp_path):
    from todo.errors import TodoNotFound

    service = _service(tmp_path)
    keep = service.create("keep")
    gone = service.create("gone")
    service.delete(gone.id)
    assert [t.id for t in service.list()] == [keep.id]
    with pytest.raises(TodoNotFound):
        service.get(gone.id)
