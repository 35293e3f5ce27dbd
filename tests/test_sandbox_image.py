"""Parts of the docker backend that need no engine: the image recipe and its tag, the
apt sources taken from the machine, and the archives that carry grading trees."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

from stamina_gym.sandbox.docker import _pack, _unpack, owner_gone, owner_id
import pytest

from stamina_gym.errors import SandboxError
from stamina_gym.sandbox.image import RECIPE, SUITES, apt_sources, image_tag, recipe, sources_for


def test_tag_is_a_hash_of_the_recipe():
    assert image_tag() == image_tag(dict(RECIPE))
    assert image_tag().startswith("stamina-gym-sandbox:")
    changed = {**RECIPE, "packages": [*RECIPE["packages"], "git"]}
    assert image_tag(changed) != image_tag()
    assert image_tag(recipe("trixie")) != image_tag() == image_tag(recipe(SUITES[0]))
    with pytest.raises(SandboxError, match="no sandbox image recipe for Debian 'sid'; there is one for bookworm, trixie"):
        recipe("sid")


def test_a_release_apt_does_not_list_comes_from_the_mirror_of_the_machines_own(tmp_path):
    (tmp_path / "sources.list").write_text(
        "deb http://mirror.invalid/debian bookworm main\ndeb http://mirror.invalid/debian bookworm-updates main\n"
        "deb http://sec.invalid/debian-security bookworm-security main\n"
    )
    os_release = tmp_path / "os-release"
    os_release.write_text('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nVERSION_CODENAME=bookworm\n')
    text = sources_for("trixie", tmp_path, os_release)
    assert "URIs: http://mirror.invalid/debian\nSuites: trixie\n" in text
    assert "Suites: trixie-updates" in text and "URIs: http://sec.invalid/debian-security\nSuites: trixie-security" in text
    assert "bookworm" not in text
    assert sources_for("bookworm", tmp_path, os_release) == apt_sources("bookworm", tmp_path)
    os_release.write_text("ID=debian\n")  # no codename: nothing to derive from
    assert sources_for("trixie", tmp_path, os_release) == ""


def test_apt_sources_keep_only_the_suite_and_its_updates(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "main.sources").write_text(
        "Types: deb deb-src\nURIs: http://mirror.invalid/debian\nSuites: bookworm bookworm-updates trixie\n"
        "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
        "Types: deb\nURIs: http://other.invalid/x\nSuites: nodistro\nComponents: main\n\n"
        "Enabled: no\nTypes: deb\nURIs: http://off.invalid/debian\nSuites: bookworm\nComponents: main\n"
    )
    (tmp_path / "sources.list").write_text(
        "# comment\ndeb [signed-by=/k.gpg] http://sec.invalid/debian-security bookworm-security main\n"
        "deb-src http://src.invalid/debian bookworm main\n"
    )
    (tmp_path / "sources.list.d" / "old.list.disabled").write_text("deb http://disabled.invalid/debian bookworm main\n")
    text = apt_sources("bookworm", tmp_path)
    assert "Suites: bookworm bookworm-updates\n" in text and "trixie" not in text
    assert "URIs: http://sec.invalid/debian-security\nSuites: bookworm-security" in text and "Signed-By: /k.gpg" in text
    assert "Types: deb\n" in text and "deb-src" not in text
    for absent in ("other.invalid", "off.invalid", "src.invalid", "disabled.invalid"):
        assert absent not in text
    assert apt_sources("bullseye", tmp_path) == ""


def test_pack_sets_owner_and_strips_write_and_setid_bits(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("x = 1\n")
    os.chmod(tmp_path / "pkg" / "mod.py", 0o4777)
    (tmp_path / "link").symlink_to("pkg/mod.py")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "old.xml").write_text("<x/>")
    buffer = io.BytesIO()
    _pack(tmp_path, buffer, 4242, writable=False, skip=["report"])
    buffer.seek(0)
    members = {m.name: m for m in tarfile.open(fileobj=buffer)}
    assert set(members) == {"pkg", "pkg/mod.py", "link"}
    assert all(m.uid == 4242 and m.gid == 4242 for m in members.values())
    assert members["pkg/mod.py"].mode == 0o555 and members["pkg"].mode == 0o555
    assert members["link"].issym() and members["link"].linkname == "pkg/mod.py"


def _tar(entries: list[tuple[tarfile.TarInfo, bytes | None]]) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, data in entries:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    buffer.seek(0)
    return buffer


def _entry(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, 0o644
    return info


def test_unpack_takes_files_and_folders_only_and_stays_inside(tmp_path):
    outside = tmp_path / "outside"
    target = tmp_path / "report"
    target.mkdir()
    (target / "stale.txt").write_text("from before")
    archive = _tar([
        (_entry("report", tarfile.DIRTYPE), None),
        (_entry("report/junit.xml"), b"<testsuites/>"),
        (_entry("report/sub", tarfile.DIRTYPE), None),
        (_entry("report/sub/a.txt"), b"a"),
        (_entry("report/evil", tarfile.SYMTYPE, "/etc/passwd"), None),
        (_entry("report/hard", tarfile.LNKTYPE, "report/junit.xml"), None),
        (_entry("report/../outside"), b"escaped"),
        (_entry("/abs"), b"escaped"),
    ])  # fmt: skip
    _unpack(archive, target, skip=[])
    assert (target / "junit.xml").read_text() == "<testsuites/>"
    assert (target / "sub" / "a.txt").read_text() == "a"
    assert not (target / "stale.txt").exists(), "a copy-back replaces the folder's contents"
    assert not (target / "evil").exists() and not (target / "evil").is_symlink()
    assert not (target / "hard").exists()
    assert not outside.exists() and not Path("/abs").exists()


def test_owner_of_a_live_process_is_not_gone_and_a_dead_one_is():
    assert owner_gone(owner_id()) is False
    boot, pid, started = owner_id().split(":")
    assert owner_gone(f"{boot}:{pid}:{int(started) + 1}") is True, "a reused pid with another start time"
    assert owner_gone(f"another-boot:{pid}:{started}") is False, "containers of other machines are not judged"
