import pytest


@pytest.mark.parametrize("a,b,product", [(2, 3, 6), (-1, 5, -5)])
def test_mul(a, b, product):
    import calc

    assert calc.mul(a, b) == product
