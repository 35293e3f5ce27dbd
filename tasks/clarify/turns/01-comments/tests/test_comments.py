import pytest

from blog.comments import CommentBoard


def approved(board, post, author, body, parent=None):
    cid = board.add(post, author, body, parent)
    board.approve(cid)
    return cid


def test_only_approved_comments_show():
    board = CommentBoard()
    shown = approved(board, 1, "ann", "first")
    hidden = board.add(1, "bob", "pending")
    board.add(1, "cid", "reply to pending", hidden)
    thread = board.thread(1)
    assert [c["id"] for c in thread] == [shown]
    board.approve(hidden)
    assert [c["id"] for c in board.thread(1)] == [shown, hidden]
    assert board.thread(1)[1]["replies"] == []


def test_replies_nest_three_levels_deep():
    board = CommentBoard()
    one = approved(board, 1, "a", "level one")
    two = approved(board, 1, "b", "level two", one)
    three = approved(board, 1, "c", "level three", two)
    with pytest.raises(ValueError):
        board.add(1, "d", "level four", three)
    thread = board.thread(1)
    assert thread[0]["replies"][0]["replies"][0]["id"] == three


def test_body_length_is_checked():
    board = CommentBoard()
    with pytest.raises(ValueError):
        board.add(1, "a", "   ")
    with pytest.raises(ValueError):
        board.add(1, "a", "x" * 501)
    cid = approved(board, 1, "a", "  " + "x" * 500 + "  ")
    assert board.thread(1)[0]["body"] == "x" * 500 and board.thread(1)[0]["id"] == cid


def test_oldest_first():
    board = CommentBoard()
    ids = [approved(board, 7, f"user{i}", f"comment {i}") for i in range(4)]
    parent = ids[0]
    replies = [approved(board, 7, "r", f"reply {i}", parent) for i in range(3)]
    thread = board.thread(7)
    assert [c["id"] for c in thread] == ids
    assert [r["id"] for r in thread[0]["replies"]] == replies
    assert board.thread(8) == []


def test_bodies_are_html_escaped():
    board = CommentBoard()
    approved(board, 1, "eve", '<script>alert("x")</script> & more')
    assert board.thread(1)[0]["body"] == "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more"
