from ratelimit.limiter import RateLimiter


def test_hundred_requests_per_window():
    limiter = RateLimiter()
    assert all(limiter.allow("k", i * 0.1) for i in range(100))
    assert limiter.allow("k", 10.0) is False


def test_window_slides():
    limiter = RateLimiter()
    for i in range(100):
        assert limiter.allow("k", float(i // 2))  # two requests a second, t = 0..49
    assert limiter.allow("k", 59.9) is False
    assert limiter.allow("k", 60.0) is True  # the first request at t=0 has left the window
    assert limiter.allow("k", 60.0) is True
    assert limiter.allow("k", 60.5) is False


def test_limits_are_per_key():
    limiter = RateLimiter()
    for i in range(100):
        limiter.allow("a", 0.0)
    assert limiter.allow("a", 1.0) is False
    assert limiter.allow("b", 1.0) is True


def test_refused_requests_do_not_count():
    limiter = RateLimiter()
    for _ in range(100):
        limiter.allow("k", 0.0)
    for second in range(1, 60):
        assert limiter.allow("k", float(second)) is False
    assert limiter.allow("k", 60.0) is True


def test_retry_after():
    limiter = RateLimiter()
    assert limiter.retry_after("k", 0.0) == 0
    for i in range(100):
        limiter.allow("k", 10.0 + i * 0.01)
    assert abs(limiter.retry_after("k", 20.0) - 50.0) < 1e-6
    assert limiter.retry_after("other", 20.0) == 0
