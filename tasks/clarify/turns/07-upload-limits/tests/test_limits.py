import pytest

from uploads.limits import UploadPolicy, UploadRejected

MB = 1024 * 1024
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 100
JPEG = b"\xff\xd8\xff\xe0" + b"\0" * 100
PDF = b"%PDF-1.7\n" + b"\0" * 100


def test_png_jpeg_and_pdf_are_accepted():
    policy = UploadPolicy()
    for name, data in (("a.png", PNG), ("b.JPG", JPEG), ("c.jpeg", JPEG), ("d.pdf", PDF)):
        policy.accept("ann", name, data)
    assert policy.used("ann") == len(PNG) + 2 * len(JPEG) + len(PDF)


def test_ten_megabytes_per_file():
    policy = UploadPolicy()
    policy.check("ann", "big.pdf", b"%PDF-" + b"\0" * (10 * MB - 5))
    with pytest.raises(UploadRejected):
        policy.check("ann", "big.pdf", b"%PDF-" + b"\0" * (10 * MB - 4))


def test_other_types_and_fake_content_are_rejected():
    policy = UploadPolicy()
    for name, data in (("a.gif", b"GIF89a" + b"\0" * 10), ("a.exe", b"MZ" + b"\0" * 10), ("a.png", PDF), ("noext", PNG)):
        with pytest.raises(UploadRejected):
            policy.check("ann", name, data)


def test_quota_of_one_hundred_megabytes_per_user():
    policy = UploadPolicy()
    chunk = b"%PDF-" + b"\0" * (10 * MB - 5)
    for i in range(10):
        policy.accept("ann", f"{i}.pdf", chunk)
    with pytest.raises(UploadRejected):
        policy.accept("ann", "one-more.pdf", PDF)
    policy.accept("bob", "fine.pdf", PDF)
    assert policy.used("ann") == 100 * MB


def test_empty_files_are_rejected():
    with pytest.raises(UploadRejected):
        UploadPolicy().check("ann", "empty.png", b"")
