from calc.stats import mean


def test_none_values_are_skipped():
    assert mean([1, None, 3]) == 2.0
