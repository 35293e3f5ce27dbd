from auth.reset import ResetService

GOOD = "a long enough password"


def service():
    changed = {}
    svc = ResetService({"ann@example.com"}, lambda email, pw: changed.__setitem__(email, pw))
    return svc, changed


def test_token_resets_once():
    svc, changed = service()
    token = svc.request("ann@example.com", 0)
    assert isinstance(token, str) and len(token) >= 16
    assert svc.reset(token, GOOD, 60) is True
    assert changed == {"ann@example.com": GOOD}
    assert svc.reset(token, GOOD + "!", 61) is False


def test_token_expires_after_thirty_minutes():
    svc, _ = service()
    token = svc.request("ann@example.com", 0)
    assert svc.reset(token, GOOD, 30 * 60) is False
    token = svc.request("ann@example.com", 0)
    assert svc.reset(token, GOOD, 30 * 60 - 1) is True


def test_new_request_invalidates_older_tokens():
    svc, _ = service()
    old = svc.request("ann@example.com", 0)
    new = svc.request("ann@example.com", 1)
    assert old != new
    assert svc.reset(old, GOOD, 2) is False
    assert svc.reset(new, GOOD, 2) is True


def test_unknown_email_gets_nothing():
    svc, changed = service()
    assert svc.request("bob@example.com", 0) is None
    assert changed == {}


def test_short_password_fails_and_keeps_the_token():
    svc, changed = service()
    token = svc.request("ann@example.com", 0)
    assert svc.reset(token, "short pw 11", 5) is False
    assert changed == {}
    assert svc.reset(token, GOOD, 6) is True


def test_token_is_not_stored_in_plain_text():
    svc, _ = service()
    token = svc.request("ann@example.com", 0)
    assert token not in repr(vars(svc))
