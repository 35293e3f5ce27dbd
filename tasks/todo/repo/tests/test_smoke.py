import todo


def test_package_has_version() -> None:
    assert isinstance(todo.__version__, str)
    assert todo.__version__
