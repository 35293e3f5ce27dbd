def test_defaults_for_new_todo():
    from todo.models import Todo

    todo = Todo("Buy milk")
    assert todo.title == "Buy milk"
    assert todo.done is False
    assert todo.id is None


def test_positional_field_order():
    from todo.models import Todo

    todo = Todo("Buy milk", True, 7)
    assert (todo.title, todo.done, todo.id) == ("Buy milk", True, 7)


def test_to_dict_contains_fields():
    from todo.models import Todo

    data = Todo("Buy milk", done=True, id=4).to_dict()
    assert data["id"] == 4
    assert data["title"] == "Buy milk"
    assert data["done"] is True


def test_from_dict_defaults_and_ignores_unknown_keys():
    from todo.models import Todo

    todo = Todo.from_dict({"title": "Call mom", "colour": "red"})
    assert todo.title == "Call mom"
    assert todo.done is False
    assert todo.id is None


def test_from_dict_roundtrip():
    from todo.models import Todo

    original = Todo("Call mom", done=True, id=12)
    again = Todo.from_dict(original.to_dict())
    assert (again.title, again.done, again.id) == ("Call mom", True, 12)
