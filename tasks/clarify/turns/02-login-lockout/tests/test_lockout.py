import pytest

from auth.lockout import AccountLocked, LoginGuard


def guard():
    g = LoginGuard()
    g.set_password("ann", "correct horse")
    return g


def test_five_failures_lock_the_account():
    g = guard()
    for second in range(4):
        assert g.login("ann", "wrong", second) is False
    assert g.login("ann", "correct horse", 4) is True
    for second in range(5, 10):
        assert g.login("ann", "wrong", second) is False
    with pytest.raises(AccountLocked):
        g.login("ann", "wrong", 10)


def test_lock_lasts_fifteen_minutes():
    g = guard()
    for second in range(5):
        g.login("ann", "wrong", second)
    with pytest.raises(AccountLocked):
        g.login("ann", "correct horse", 4 + 899)
    assert g.login("ann", "correct horse", 4 + 900) is True


def test_success_resets_the_count():
    g = guard()
    for round_ in range(3):
        for attempt in range(4):
            assert g.login("ann", "wrong", round_ * 10 + attempt) is False
        assert g.login("ann", "correct horse", round_ * 10 + 5) is True


def test_locked_even_with_the_right_password():
    g = guard()
    for second in range(5):
        g.login("ann", "nope", second)
    with pytest.raises(AccountLocked):
        g.login("ann", "correct horse", 5)


def test_unknown_user_is_just_false():
    g = guard()
    assert g.login("nobody", "correct horse", 0) is False


def test_password_is_not_kept_in_plain_text():
    g = guard()
    assert g.login("ann", "correct horse", 0) is True
    assert "correct horse" not in repr(vars(g))
