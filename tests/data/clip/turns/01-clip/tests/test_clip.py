from calc import {{ name }} as capped


def test_caps_at_the_limit():
    assert capped(1000) == {{ limit }}
    assert capped({{ limit }} + 1) == {{ limit }}


def test_keeps_smaller_values():
    assert capped({{ limit }} - 1) == {{ limit }} - 1
    assert capped(-5) == -5
