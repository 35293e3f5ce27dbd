"""Walk, read, copy, hash and remove a tree that an adversary wrote.

The agent's commands can put any kind of file in the work tree: named pipes (opening one
blocks until a writer comes), sockets, symlink loops, folders nested thousands deep,
sparse files of many gigabytes that take no disk, hundreds of thousands of files.
Everything here

- looks at entries with ``lstat`` and never follows a symlink;
- opens nothing but regular files, with ``O_NOFOLLOW | O_NONBLOCK`` and an ``fstat``
  check after the open, so a pipe never blocks and a device is never read;
- walks with an explicit stack, so depth meets no recursion limit;
- counts entries and apparent sizes (``st_size``: a sparse file counts in full) against
  caps and raises ``TreeTooLarge`` naming the cap before any work past it is done;
- removes trees through file descriptors, two at a time, so neither depth nor path
  length matters, and makes folders it cannot empty writable on the way.

An entry whose path relative to the root is longer than ``MAX_REL_PATH`` bytes is
skipped as if absent, and so is a folder that cannot be listed: what ``walk`` does not
see is neither counted, copied nor hashed. The limit keeps every path the env builds
(the root, plus a path below it) within the system's PATH_MAX, under a copy's root too.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from typing import Callable, Collection, Iterator

from stamina_gym.errors import TreeTooLarge

Ignore = Callable[[str, list[str]], Collection[str]]
"""``shutil.copytree``'s ``ignore``: (folder path, names in it) -> the names to leave out."""

SPECIAL = frozenset({"fifo", "socket", "device"})
"""Kinds of entry that are never opened, copied or hashed."""

MAX_REL_PATH = 3072
#: Most entries (files, folders, links) and most bytes (apparent sizes) of the work tree
#: that the env lists, stages and lets grading copy; past either, it says so in ``error:``.
MAX_FILES = 20_000
MAX_BYTES = 256 * 1024 * 1024
"""Longest path below a root, in bytes, that ``walk`` yields (PATH_MAX is 4096 on Linux)."""

_CHUNK = 1 << 20
_DIGEST_CHUNK = 1 << 16
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def kind_of(mode: int) -> str:
    """``file``, ``dir``, ``symlink``, ``fifo``, ``socket`` or ``device`` for an ``st_mode``."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "device"


@dataclass(frozen=True)
class Entry:
    """One entry below a walked root."""

    path: str
    """Its path on this machine (names that are not UTF-8 carry surrogate escapes)."""
    rel: str
    """Its path relative to the root, ``/``-separated."""
    stat: os.stat_result
    """Its ``lstat``: a symlink is described, not what it points at."""

    @property
    def kind(self) -> str:
        return kind_of(self.stat.st_mode)


def walk(
    root: str | os.PathLike,
    ignore: Ignore | None = None,
    *,
    special: bool = False,
    max_files: int | None = None,
    max_bytes: int | None = None,
) -> Iterator[Entry]:
    """Every entry below ``root`` in ``os.walk``'s top-down order: a folder's subfolders,
    then its other entries, each group sorted by name, then each subfolder's contents in
    turn. Symlinks are entries, never followed. Named pipes, sockets and devices are
    yielded only with ``special``. ``ignore`` leaves out names (and what is below them).

    Raises ``TreeTooLarge`` when the entries not ignored (of every kind) pass
    ``max_files``, or the sizes of the regular files pass ``max_bytes``, before yielding
    the entry that passed it. Entries deeper than ``MAX_REL_PATH`` bytes are skipped."""
    root = os.fspath(root)
    count = size = 0
    stack = [(root.rstrip("/") or "/", "")]
    while stack:
        folder, rel_folder = stack.pop()
        try:
            with os.scandir(folder) as listing:  # names and d_type only: no stat past a cap
                is_dir = {item.name: item.is_dir(follow_symlinks=False) for item in listing}
        except OSError:
            continue
        names = sorted(is_dir)
        skipped = set(ignore(folder, names)) if ignore else set()
        dirs = [n for n in names if n not in skipped and is_dir[n]]
        others = [n for n in names if n not in skipped and not is_dir[n]]
        descend = []
        for name in [*dirs, *others]:
            rel = f"{rel_folder}/{name}" if rel_folder else name
            if len(rel) * 4 > MAX_REL_PATH and len(rel.encode("utf-8", "surrogateescape")) > MAX_REL_PATH:
                continue
            count += 1
            if max_files is not None and count > max_files:
                raise TreeTooLarge("max_files", max_files)
            path = f"{folder}/{name}" if folder != "/" else f"/{name}"
            try:
                info = os.lstat(path)
            except OSError:  # gone since the listing
                continue
            if stat.S_ISREG(info.st_mode):
                size += info.st_size
                if max_bytes is not None and size > max_bytes:
                    raise TreeTooLarge("max_bytes", max_bytes)
            elif stat.S_ISDIR(info.st_mode):
                descend.append((path, rel))
            if special or kind_of(info.st_mode) not in SPECIAL:
                yield Entry(path, rel, info)
        stack += reversed(descend)


# -- reading ----------------------------------------------------------------------------


def open_regular(path: str | os.PathLike, *, follow_symlinks: bool = False) -> int:
    """A read-only descriptor of the regular file at ``path``; OSError for anything else
    (a pipe, socket, device or folder is refused before it is opened, and checked again
    on the descriptor). Without ``follow_symlinks`` a symlink is refused too."""
    info = os.stat(path) if follow_symlinks else os.lstat(path)
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EINVAL, f"not a regular file but a {kind_of(info.st_mode)}", os.fspath(path))
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"not a regular file but a {kind_of(info.st_mode)}", os.fspath(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: str | os.PathLike, *, follow_symlinks: bool = False, limit: int | None = None) -> bytes:
    """The content of a regular file (its first ``limit`` bytes with a limit)."""
    fd = open_regular(path, follow_symlinks=follow_symlinks)
    with os.fdopen(fd, "rb") as handle:
        return handle.read() if limit is None else handle.read(limit)


def count_lines(path: str | os.PathLike) -> int:
    """Newlines in a regular file (0 for anything else)."""
    try:
        fd = open_regular(path)
    except OSError:
        return 0
    with os.fdopen(fd, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(_CHUNK), b""))


# -- making folders ---------------------------------------------------------------------


def make_folders(path: str | os.PathLike, mode: int = 0o777) -> None:
    """``os.makedirs(path, exist_ok=True)`` without recursion: the missing folders are made
    from the top down in a loop, so a path thousands of folders deep meets no recursion
    limit (``os.makedirs`` and ``Path.mkdir(parents=True)`` recurse once per missing
    folder). Raises OSError when a part of the path is not a folder."""
    path = os.path.abspath(os.fspath(path))
    missing = []
    while not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, mode)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise


# -- copying ----------------------------------------------------------------------------


def copy_tree(
    src: str | os.PathLike,
    dst: str | os.PathLike,
    ignore: Ignore | None = None,
    *,
    max_files: int | None,
    max_bytes: int | None,
) -> tuple[int, int]:
    """Copy the tree at ``src`` to the new folder ``dst``: folders, regular files (content,
    holes kept, permission bits without set-id and sticky bits, times) and symlinks as
    links; named pipes, sockets and devices are left out. ``ignore`` as in
    ``shutil.copytree``. Raises ``TreeTooLarge`` as ``walk`` does, before the file that
    passes a cap is written; on any failure ``dst`` is removed again. Returns the number
    of entries and the bytes (apparent sizes) copied."""
    src, dst = os.fspath(src), os.fspath(dst)
    root_info = os.stat(src)
    os.mkdir(dst, 0o700)
    folders = [(dst, root_info)]
    count = size = 0
    try:
        for entry in walk(src, ignore, max_files=max_files, max_bytes=max_bytes):
            target = os.path.join(dst, entry.rel)
            kind = entry.kind
            if kind == "dir":
                os.mkdir(target, 0o700)
                folders.append((target, entry.stat))
            elif kind == "symlink":
                os.symlink(os.readlink(entry.path), target)
            else:
                _copy_file(entry.path, target, entry.stat)
                size += entry.stat.st_size
            count += 1
        for target, info in reversed(folders):  # children first: a read-only folder is filled before it closes
            os.chmod(target, stat.S_IMODE(info.st_mode) & 0o777)
            os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    except BaseException:
        rmtree(dst)
        raise
    return count, size


def _copy_file(src: str, dst: str, info: os.stat_result) -> None:
    fd = open_regular(src)
    try:
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            _copy_data(fd, out, info.st_size)
            os.fchmod(out, stat.S_IMODE(info.st_mode) & 0o777)
            os.utime(out, ns=(info.st_atime_ns, info.st_mtime_ns))
        finally:
            os.close(out)
    finally:
        os.close(fd)


def _copy_data(fd: int, out: int, size: int) -> None:
    """Copy the first ``size`` bytes, skipping holes where the filesystem reports them."""
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
            end = os.lseek(fd, start, os.SEEK_HOLE)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # nothing but a hole up to the end
                break
            start, end = offset, size  # holes unknown here: copy everything
        end = min(end, size)
        while start < end:
            chunk = os.pread(fd, min(_CHUNK, end - start), start)
            if not chunk:  # the file shrank since it was counted
                end = size
                break
            view = memoryview(chunk)
            while view:
                written = os.pwrite(out, view, start)
                view, start = view[written:], start + written
        offset = max(end, offset + 1)
    os.ftruncate(out, size)


# -- hashing ----------------------------------------------------------------------------


def tree_digest(
    root: str | os.PathLike,
    ignore: Ignore | None = None,
    *,
    max_files: int | None = None,
    max_bytes: int | None = None,
) -> str:
    """sha256 over every entry ``copy_tree`` would copy: relative path, kind, exec bit,
    content (link target for symlinks), in ``walk``'s order. The same records as
    ``grading.cache.tree_digest``, so the two agree on every tree without named pipes,
    sockets, devices or symlinks to folders (which ``os.walk`` sorts among folders).
    Raises ``TreeTooLarge`` as ``walk`` does, before reading past a cap."""
    digest = hashlib.sha256()
    for entry in walk(root, ignore, max_files=max_files, max_bytes=max_bytes):
        rel, kind = entry.rel, entry.kind
        if kind == "symlink":
            digest.update(f"L {rel}\0{os.readlink(entry.path)}\0".encode("utf-8", "surrogateescape"))
        elif kind == "dir":
            digest.update(f"D {rel}\0".encode("utf-8", "surrogateescape"))
        else:
            digest.update(f"F {rel} {int(bool(entry.stat.st_mode & 0o111))}\0".encode("utf-8", "surrogateescape"))
            with os.fdopen(open_regular(entry.path), "rb") as handle:
                for chunk in iter(lambda: handle.read(_DIGEST_CHUNK), b""):
                    digest.update(hashlib.sha256(chunk).digest())
    return digest.hexdigest()


# -- removing ---------------------------------------------------------------------------


def rmtree(path: str | os.PathLike, *, keep_root: bool = False) -> None:
    """Remove ``path`` and everything below it (with ``keep_root``, only what is below
    it). Any depth and any path length: it goes down by descriptor and back up by
    ``..``, holding two descriptors at a time. A folder that refuses (no write or search
    permission) is made ``0700`` first, which works for its owner. A symlink is removed,
    never followed; a missing ``path`` is fine. Raises OSError when something stays."""
    path = os.fspath(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        if not keep_root:
            os.unlink(path)
        return
    try:
        fd = os.open(path, _DIR_FLAGS)
    except PermissionError:
        os.chmod(path, 0o700)
        fd = os.open(path, _DIR_FLAGS)
    names: list[str] = []  # folder names from ``path`` down to the folder ``fd`` is
    try:
        pending = [_remove_files(fd)]  # per level: subfolders still to remove
        while True:
            if pending[-1]:
                name = pending[-1].pop()
                child = _open_subfolder(fd, name)
                if child is None:
                    continue
                os.close(fd)
                fd = child
                names.append(name)
                pending.append(_remove_files(fd))
                continue
            pending.pop()
            if not names:
                break
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            _retry_writable(os.rmdir, names.pop(), fd)
    finally:
        os.close(fd)
    if not keep_root:
        os.rmdir(path)


def _remove_files(fd: int) -> list[str]:
    """Unlink every entry of the folder ``fd`` that is not a folder; returns the folders."""
    with os.scandir(fd) as listing:
        items = [(item.name, item.is_dir(follow_symlinks=False)) for item in listing]
    folders = []
    for name, is_dir in items:
        if is_dir:
            folders.append(name)
        else:
            _retry_writable(os.unlink, name, fd)
    return folders


def _open_subfolder(fd: int, name: str) -> int | None:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        return None
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=fd)
        return os.open(name, _DIR_FLAGS, dir_fd=fd)


def _retry_writable(remove: Callable[..., None], name: str, fd: int) -> None:
    """``remove(name, dir_fd=fd)`` (unlink or rmdir), once more after making the folder
    ``fd`` writable when it was refused."""
    try:
        remove(name, dir_fd=fd)
    except FileNotFoundError:
        pass
    except PermissionError:
        os.fchmod(fd, 0o700)
        remove(name, dir_fd=fd)
