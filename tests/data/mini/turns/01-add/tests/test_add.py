def test_add_small():
    import calc

    assert calc.add(2, 3) == 5


def test_add_negative():
    import calc

    assert calc.add(-2, -7) == -9
