"""The repository state: a work tree the agent edits and a git directory it cannot see.

The git directory lives beside the work tree, never inside it, so nothing the agent writes
can become git configuration or a hook that the env (which may run as root) would execute.
Git runs with system and global configuration off, hooks off and fixed commit dates, so
commit ids are reproducible. Each submitted turn is a commit; any turn can be checked out.

Every path an agent names goes through ``resolve``: absolute paths, ``..`` and symlinks
that lead out of the work tree are refused.

The agent can put any file in the work tree, so git never walks it: the env walks it
(``stamina_gym.safetree``: no symlink followed, no pipe or device opened, no recursion,
at most ``max_files`` entries and ``max_bytes`` of apparent size), writes the blobs and
the index itself, and asks git only about ``.gitignore`` rules. Attributes in the tree
(``.gitattributes``) are never read: ``GIT_ATTR_SOURCE`` points at the empty tree, and
for a git older than 2.40 ``info/attributes`` unsets every attribute git acts on. A
nested repository is a plain folder; a ``.git`` anywhere in the tree is left out.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable, Iterator

from stamina_gym import safetree
from stamina_gym.errors import PatchError, StaminaError, ToolError, TreeTooLarge
from stamina_gym.safetree import MAX_BYTES, MAX_FILES, Entry
from stamina_gym.sandbox import REPO_MOUNT

#: git's id of the empty tree (it knows this object without storing it).
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_AUTHOR_NAME": "stamina-gym",
    "GIT_AUTHOR_EMAIL": "env@stamina-gym.invalid",
    "GIT_COMMITTER_NAME": "stamina-gym",
    "GIT_COMMITTER_EMAIL": "env@stamina-gym.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
    "LC_ALL": "C",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_ATTR_SOURCE": EMPTY_TREE,
}
_GIT_CONFIG = [
    "safe.directory=*", "core.hooksPath=/dev/null", "core.fsmonitor=false", "core.autocrlf=false",
    "core.symlinks=true", "core.quotePath=false", "gc.auto=0", "commit.gpgsign=false",
    "diff.noprefix=false", "diff.external=", "advice.detachedHead=false",
    "core.attributesFile=/dev/null", "core.excludesFile=/dev/null",
]  # fmt: skip
#: Written to ``info/attributes``, which outranks every ``.gitattributes``: ``!name``
#: makes an attribute unspecified, so a git without ``GIT_ATTR_SOURCE`` converts nothing.
_NEUTRAL_ATTRIBUTES = "* " + " ".join(
    f"!{name}" for name in ("text", "eol", "crlf", "filter", "ident", "working-tree-encoding", "encoding", "diff",
                            "merge", "whitespace", "delta", "conflict-marker-size", "export-ignore", "export-subst",
                            "binary")
) + "\n"  # fmt: skip
_SKIP_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".git"}
#: A git command taking longer than this is killed (none should come near it).
GIT_TIMEOUT_S = 300.0
#: A hashed blob is remembered by its file's stat once the file is this old, so that a
#: rewrite within the same clock tick cannot reuse a stale id.
_SETTLED_NS = 1_000_000_000
#: Blobs up to this size are hashed in memory first, so one git has is not written again.
_IN_MEMORY = 1 << 20
#: A path in a unified diff's file headers, or in git's header of a rename or copy (which
#: has no ``---``/``+++`` lines when the file's text is unchanged).
_DIFF_PATH = re.compile(r"^(?:(?:---|\+\+\+) (?:\"?[ab]/)?|(?:rename|copy) (?:from|to) \"?)(.*?)\"?(?:\t.*)?$")
#: Recreate the git directory after this many resets, so unreachable objects of old
#: episodes do not pile up during a long training run.
REINIT_EVERY = 500


class GitError(StaminaError):
    """A git command failed in a way that is the env's fault, not the agent's."""


@dataclass(frozen=True)
class Listing:
    """Entries below a folder of the work tree (``safetree.walk`` order, caches and
    ``.git`` left out), and the cap the walk stopped at, if it stopped."""

    entries: list[Entry]
    over: TreeTooLarge | None = None


def _stat_key(info: os.stat_result) -> tuple[int, ...]:
    """What tells a file's content changed without reading it (git's own racy-clean test
    uses the same fields)."""
    return (info.st_mode, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class Workspace:
    """A work tree at ``root/work`` with its git directory at ``root/git``. ``max_files``
    and ``max_bytes`` cap what the env walks (see ``listing``)."""

    def __init__(self, root: Path, seed: Path, *, max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES) -> None:
        self.root = root
        self.path = root / "work"
        self.git_dir = root / "git"
        self.seed = seed
        self.max_files = max_files
        self.max_bytes = max_bytes
        self._resets = 0
        self._env = {**os.environ, **_GIT_ENV, "GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.path)}
        self._blobs: dict[tuple, tuple[bytes, str]] = {}
        self._lines: dict[tuple, int] = {}
        self._staged: tuple | None = None
        self.generation = 0
        """Counts the times the repository was made anew (commits of an older one are gone)."""
        """What the index was last made from (every walked entry's path and lstat), while
        nothing but ``stage`` has written the index: a tree that walks the same again is
        staged already, and three git processes are saved."""

    # -- git ----------------------------------------------------------------------------

    def git(self, *args: str, input: str | bytes | None = None, check: bool = True,
            index: Path | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
        """Run git on this workspace; ``index`` names another index file. Output is text
        (bytes that are not UTF-8 replaced); ``git_bytes`` keeps it raw."""
        proc = self.git_bytes(*args, input=input, check=check, index=index)
        text = {name: getattr(proc, name).decode("utf-8", "replace") for name in ("stdout", "stderr")}
        return subprocess.CompletedProcess(proc.args, proc.returncode, **text)

    def git_bytes(self, *args: str, input: str | bytes | None = None, check: bool = True,
                  index: Path | None = None) -> subprocess.CompletedProcess[bytes]:  # fmt: skip
        config = [item for pair in _GIT_CONFIG for item in ("-c", pair)]
        env = self._env if index is None else {**self._env, "GIT_INDEX_FILE": str(index)}
        if args[:1] == ("apply",):
            # git apply dies of a segfault with an attribute source (git 2.47); without one
            # it reads .gitattributes, which info/attributes neutralizes (apply_patch first
            # refuses a .gitattributes that is a pipe).
            env = {k: v for k, v in env.items() if k != "GIT_ATTR_SOURCE"}
        try:
            proc = subprocess.run(
                ["git", *config, *args],
                cwd=self.path,
                env=env,
                input=input.encode("utf-8", "surrogateescape") if isinstance(input, str) else input,
                capture_output=True,
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise GitError(f"git {' '.join(args)} took longer than {GIT_TIMEOUT_S:g} s in {self.path}") from None
        if check and proc.returncode != 0:
            stderr = proc.stderr.decode("utf-8", "replace").strip()
            raise GitError(f"git {' '.join(args)} failed in {self.path}: {stderr}")
        return proc

    def _git_head(self, args: tuple[str, ...], limit: int) -> bytes:
        """The first ``limit`` + 1 bytes of what git prints (more means there was more):
        git is killed once they are read, so a huge output costs no more than its head."""
        config = [item for pair in _GIT_CONFIG for item in ("-c", pair)]
        with tempfile.TemporaryFile() as errors:
            proc = subprocess.Popen(["git", *config, *args], cwd=self.path, env=self._env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=errors)  # fmt: skip
            watchdog = threading.Timer(GIT_TIMEOUT_S, proc.kill)
            watchdog.start()
            try:
                out = proc.stdout.read(limit + 1)
                if len(out) > limit:
                    proc.kill()
                code = proc.wait()
            finally:
                watchdog.cancel()
                proc.stdout.close()
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            if len(out) <= limit and code != 0:
                errors.seek(0)
                raise GitError(f"git {' '.join(args)} failed in {self.path}: {errors.read().decode('utf-8', 'replace').strip()}")
        return out

    def reset(self) -> str:
        """Lay the seed repository; returns the seed commit id."""
        if self._resets % REINIT_EVERY == 0:
            self._init()
        else:
            self.checkout("seed")
        self._resets += 1
        return self._seed_commit

    def _init(self) -> None:
        # The work tree's folder itself stays (emptied, not replaced): a sandbox that holds
        # it mounted, a warm test runner or a docker container, keeps seeing it.
        safetree.rmtree(self.git_dir)
        safetree.rmtree(self.path, keep_root=True)
        self._staged = None
        shutil.copytree(self.seed, self.path, symlinks=True, dirs_exist_ok=True)
        self.git("init", "-q", "--template=", "-b", "main")
        (self.git_dir / "info").mkdir(exist_ok=True)
        (self.git_dir / "info" / "attributes").write_text(_NEUTRAL_ATTRIBUTES, encoding="utf-8")
        self._blobs.clear()
        self.generation += 1
        self.stage()
        seed = self.git("commit-tree", "-m", "seed", self.git("write-tree").stdout.strip()).stdout.strip()
        self.git("update-ref", "HEAD", seed)
        self.git("tag", "seed")
        self._seed_commit = seed

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").stdout.strip()

    def commit(self, message: str, *, stage: bool = True) -> str:
        """Record the work tree as a commit (empty when nothing changed); returns its id,
        the one ``git add -A && git commit`` would give. With ``stage=False``, the index as
        the last ``stage`` left it (the caller knows nothing wrote the tree since)."""
        if stage:
            self.stage()
        tree = self.git("write-tree").stdout.strip()
        commit = self.git("commit-tree", "-p", "HEAD", "-m", message, tree).stdout.strip()
        self.git("update-ref", "HEAD", commit)
        return commit

    def lay_commits(self, patches: list[str], messages: list[str]) -> list[str]:
        """Commit each patch on top of the last, as ``commit`` would after applying it to
        the work tree, but through the index alone (no tree walk per patch); then make the
        work tree the last commit. Returns the commit ids; raises ``PatchError`` on a patch
        that does not apply."""
        commits, parent = [], self.head()
        start = parent
        for patch, message in zip(patches, messages):
            if patch.strip():
                try:
                    self.git("apply", "--cached", "--whitespace=nowarn", "--binary", "-", input=patch)
                except GitError as exc:
                    self.checkout(start)
                    raise PatchError(f"the patch of {message!r} does not apply: {exc}") from None
            tree = self.git("write-tree").stdout.strip()
            parent = self.git("commit-tree", "-p", parent, "-m", message, tree).stdout.strip()
            commits.append(parent)
        if commits:
            self.checkout(commits[-1])  # the branch too
        return commits

    def checkout(self, rev: str) -> None:
        """Make the work tree exactly ``rev`` (a turn's commit or ``seed``), and the
        current branch point at it. The old tree is removed by ``safetree.rmtree`` (no
        depth, permission or file type stops it); git only writes ``rev`` into the empty
        folder, which stays the same folder (a container may have it bind-mounted)."""
        safetree.rmtree(self.path, keep_root=True)
        self._staged = None
        fresh = self.git_dir / "index.checkout"  # one git process: reset from an empty index, then put it in place
        fresh.unlink(missing_ok=True)
        self.git("reset", "-q", "--hard", rev, index=fresh)
        if not fresh.exists():  # an empty tree: git writes no index
            self.git("read-tree", "--empty", index=fresh)
        os.replace(fresh, self.git_dir / "index")

    def diff(self, base: str = "HEAD", *, stage: bool = True, limit: int | None = None) -> str:
        """Unified diff of the work tree (untracked files included) against ``base``;
        with ``stage=False``, of the index as the last ``stage`` left it. With ``limit``
        git is stopped after that many bytes, and a marker says the diff was cut."""
        if stage:
            self.stage()
        args = ("diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", base)
        if limit is None:
            return self.git(*args).stdout
        out = self._git_head(args, limit)
        text = out[:limit].decode("utf-8", "replace")
        return text + "\n[... the diff is cut here ...]" if len(out) > limit else text

    def changed_paths(self, base: str = "HEAD") -> list[str]:
        """Paths whose content differs from ``base``."""
        self.stage()
        out = self.git("diff", "--cached", "--name-only", "-z", "--no-renames", base).stdout
        return [name for name in out.split("\0") if name]

    def numstat(self, base: str = "HEAD") -> dict[str, tuple[int, int]]:
        """Lines added and deleted per file since ``base`` (binary files count 0)."""
        self.stage()
        out = self.git("diff", "--cached", "--numstat", "-z", "--no-renames", base).stdout
        stats = {}
        for record in filter(None, out.split("\0")):
            added, deleted, path = record.split("\t", 2)
            stats[path] = (int(added) if added.isdigit() else 0, int(deleted) if deleted.isdigit() else 0)
        return stats

    # -- staging ------------------------------------------------------------------------

    def stage(self) -> TreeTooLarge | None:
        """Make git's index the work tree, as ``git add -A`` would, without git walking
        it: the regular files and symlinks of ``listing()`` (so no ``.git`` and no caches,
        at most the caps), minus untracked files that a ``.gitignore`` ignores. The env
        hashes the blobs itself and writes a fresh index, so attributes, nested
        repositories and special files have no say. Returns the cap the tree passed, else
        None; past a cap the entries before it are staged and every other path keeps what
        was staged before (what lies past the cap is unknown, so nothing is deleted)."""
        listing = self.listing(special=True)
        walked = (tuple((e.rel, _stat_key(e.stat)) for e in listing.entries), listing.over)
        if walked == self._staged:
            return listing.over
        self._staged = None
        wanted = [e for e in listing.entries if e.kind in ("file", "symlink")]
        ignored = self._ignored(wanted, listing.entries)
        records = []
        if listing.over is not None:  # first, so that an entry walked replaces one it conflicts with
            walked = {os.fsencode(e.rel) for e in wanted}
            for record in self.git_bytes("ls-files", "-s", "-z").stdout.split(b"\0"):
                meta, _, path = record.partition(b"\t")
                if path and path not in walked:
                    mode, blob, _ = meta.split(b" ")
                    records.append(b"%s %s\t%s\0" % (mode, blob, path))
        for entry in wanted:
            if entry.rel not in ignored:
                blob = self._blob(entry)
                if blob is not None:
                    records.append(b"%s %s\t%s\0" % (blob[0], blob[1].encode(), os.fsencode(entry.rel)))
        fresh = self.git_dir / "index.stage"
        fresh.unlink(missing_ok=True)
        self.git_bytes("update-index", "-z", "--index-info", input=b"".join(records), index=fresh)
        if not fresh.exists():  # nothing to stage: git writes no index
            self.git("read-tree", "--empty", index=fresh)
        os.replace(fresh, self.git_dir / "index")
        now = time.time_ns()  # a file changed within the clock's grain may change again unseen
        settled = all(now - e.stat.st_ctime_ns > _SETTLED_NS for e in listing.entries)
        self._staged = walked if settled else None
        return listing.over

    def _ignored(self, wanted: list[Entry], entries: list[Entry]) -> set[str]:
        """The paths of ``wanted`` that are untracked (not in the index) and ignored by a
        ``.gitignore``. git reads every ``.gitignore`` on a path's way, and would block on
        a named pipe, so below one that is not a regular file of at most 1 MiB nothing is
        asked. (``--no-index``: asking git to look up each path in a large index costs
        seconds per thousand paths; the tracked ones are taken back out here.)"""
        unsafe = [e.rel.rpartition("/")[0] for e in entries if e.rel.rpartition("/")[2] == ".gitignore"
                  and (e.kind != "file" or e.stat.st_size > _IN_MEMORY)]  # fmt: skip
        if "" in unsafe:
            return set()
        asked = [e.rel for e in wanted if not any(e.rel.startswith(folder + "/") for folder in unsafe)]
        if not asked:
            return set()
        proc = self.git_bytes("check-ignore", "--no-index", "-z", "--stdin",
                              input=b"".join(os.fsencode(rel) + b"\0" for rel in asked), check=False)  # fmt: skip
        if proc.returncode not in (0, 1) or not proc.stdout:  # 1: nothing ignored
            return set()
        ignored = {os.fsdecode(name) for name in proc.stdout.split(b"\0") if name}
        tracked = self.git_bytes("ls-files", "-z").stdout.split(b"\0")
        return ignored - {os.fsdecode(name) for name in tracked}

    def _blob(self, entry: Entry) -> tuple[bytes, str] | None:
        """(git mode, blob id) of a regular file or symlink, the blob written to the object
        store; None when the file changed under the walk."""
        info = entry.stat
        key = (entry.rel, *_stat_key(info))
        known = self._blobs.get(key)
        if known is not None:
            return known
        try:
            if entry.kind == "symlink":
                target = os.fsencode(os.readlink(entry.path))
                blob = (b"120000", self._write_blob([target], len(target)))
            else:
                mode = b"100755" if info.st_mode & stat.S_IXUSR else b"100644"
                with os.fdopen(safetree.open_regular(entry.path), "rb") as handle:
                    blob = (mode, self._write_blob(iter(lambda: handle.read(1 << 20), b""), info.st_size))
        except (OSError, _ChangedUnderWalk):
            return None
        if time.time_ns() - info.st_ctime_ns > _SETTLED_NS:
            if len(self._blobs) > 4 * self.max_files:
                self._blobs.clear()
            self._blobs[key] = blob
        return blob

    def _write_blob(self, chunks: Iterable[bytes], size: int) -> str:
        """Store the first ``size`` bytes that ``chunks`` yields as a loose git object
        (unless git has it already); returns its id."""
        header = b"blob %d\0" % size
        objects = self.git_dir / "objects"
        if size <= _IN_MEMORY:
            data = b""
            for chunk in chunks:
                data += chunk[: size - len(data)]
                if len(data) == size:
                    break
            if len(data) < size:
                raise _ChangedUnderWalk
            name = hashlib.sha1(header + data).hexdigest()
            if not (objects / name[:2] / name[2:]).exists():
                self._store_object(name, [zlib.compress(header + data, 1)])
            return name
        digest, packer = hashlib.sha1(header), zlib.compressobj(1)

        def packed() -> Iterator[bytes]:
            left = size
            yield packer.compress(header)
            for chunk in chunks:
                chunk = chunk[:left]
                left -= len(chunk)
                digest.update(chunk)
                yield packer.compress(chunk)
                if not left:
                    break
            if left:
                raise _ChangedUnderWalk
            yield packer.flush()

        return self._store_object(lambda: digest.hexdigest(), packed())

    def _store_object(self, name: str | Callable[[], str], parts: Iterable[bytes]) -> str:
        """Write compressed ``parts`` to a temporary file, then move it to the object's
        place, named ``name`` (or by ``name()`` once every part is written)."""
        objects = self.git_dir / "objects"
        fd, tmp = tempfile.mkstemp(prefix="tmp_obj_", dir=objects)
        try:
            with os.fdopen(fd, "wb") as out:
                for part in parts:
                    out.write(part)
            name = name if isinstance(name, str) else name()
            final = objects / name[:2] / name[2:]
            if final.exists():
                os.unlink(tmp)
            else:
                final.parent.mkdir(exist_ok=True)
                os.chmod(tmp, 0o444)
                os.replace(tmp, final)
            return name
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    # -- paths --------------------------------------------------------------------------

    def resolve(self, name: str) -> Path:
        """The host path of a workspace-relative ``name``, refusing any way out."""
        if not isinstance(name, str) or not name.strip():
            raise ToolError("path must be a non-empty string")
        if "\x00" in name:
            raise ToolError("path contains a NUL byte")
        try:
            os.fsencode(name)
        except UnicodeEncodeError:
            raise ToolError(f"{name!r}: not a path this system can name (a lone surrogate)") from None
        if name == REPO_MOUNT or name.startswith(REPO_MOUNT + "/"):
            name = name[len(REPO_MOUNT):].lstrip("/") or "."
        pure = PurePosixPath(name)
        if pure.is_absolute():
            raise ToolError(f"{name}: absolute paths are refused; use a path relative to the repository")
        if ".." in pure.parts:
            raise ToolError(f"{name}: '..' is refused; paths stay inside the repository")
        if ".git" in pure.parts:
            raise ToolError(f"{name}: .git is not part of the workspace")
        full = self.path.joinpath(*pure.parts)
        real = Path(os.path.realpath(full))  # a symlink loop stays unresolved, never an error
        base = Path(os.path.realpath(self.path))
        if real != base and base not in real.parents:
            raise ToolError(f"{name}: leads outside the repository through a symlink; refused")
        return full

    def relative(self, path: Path) -> str:
        return path.relative_to(self.path).as_posix()

    def listing(self, under: Path | None = None, *, special: bool = False) -> Listing:
        """The entries below ``under`` (default: the root), caches and ``.git`` skipped,
        named pipes, sockets and devices only with ``special``. The walk stops at the
        caps: ``over`` then says which (counting every kind of entry)."""
        entries: list[Entry] = []
        try:
            for entry in safetree.walk(under or self.path, _skip_caches, special=special,
                                       max_files=self.max_files, max_bytes=self.max_bytes):  # fmt: skip
                entries.append(entry)
        except TreeTooLarge as over:
            return Listing(entries, over)
        return Listing(entries)

    def line_count(self, entry: Entry) -> int:
        """Newlines in a regular file of the tree (0 for anything else), remembered by the
        file's stat as blob ids are."""
        info = entry.stat
        key = (entry.path, info.st_mode, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        known = self._lines.get(key)
        if known is None:
            known = safetree.count_lines(entry.path)
            if time.time_ns() - info.st_ctime_ns > _SETTLED_NS:
                if len(self._lines) > 4 * self.max_files:
                    self._lines.clear()
                self._lines[key] = known
        return known

    def files(self, under: Path | None = None) -> Iterator[Path]:
        """Every regular file and symlink below ``under`` (default: the root) in walk
        order, caches skipped, up to the caps."""
        for entry in self.listing(under).entries:
            if entry.kind in ("file", "symlink"):
                yield Path(entry.path)

    # -- patches ------------------------------------------------------------------------

    @staticmethod
    def patch_paths(patch: str) -> list[str]:
        """The paths a unified diff names in its file headers, sorted."""
        return sorted({m.group(1) for m in map(_DIFF_PATH.match, patch.splitlines()) if m} - {"/dev/null"})

    def apply_patch(self, patch: str) -> list[str]:
        """Apply a unified diff to the work tree; returns the paths it touched."""
        if not patch.strip():
            raise PatchError("the patch is empty")
        if "GIT binary patch" in patch or re.search(r"^Binary files .* differ$", patch, re.M):
            raise PatchError("binary patches are refused; write text files with write_file")
        paths = self.patch_paths(patch)
        if not paths:
            raise PatchError("no file headers ('--- a/path' / '+++ b/path') found: not a unified diff")
        for name in paths:
            self.resolve(name)
            for folder in [self.path, *(p for p in self.path.joinpath(name).parents if self.path in p.parents)]:
                try:
                    kind = safetree.kind_of((folder / ".gitattributes").lstat().st_mode)
                except OSError:
                    continue
                if kind in safetree.SPECIAL:
                    rel = self.relative(folder / ".gitattributes")
                    raise PatchError(f"{rel} is a {kind}, which git would wait on; delete it, then apply the patch")
        if not patch.endswith("\n"):
            patch += "\n"
        args = ["apply", "--whitespace=nowarn", "--recount"]
        check = self.git(*args, "--check", "-", input=patch, check=False)
        if check.returncode != 0:
            raise PatchError("patch does not apply, nothing was changed:\n" + _clean_git_errors(check.stderr))
        self.git(*args, "-", input=patch)
        return paths


class _ChangedUnderWalk(Exception):
    """A file was shorter than its size when the walk saw it."""


def _skip_caches(_folder: str, names: list[str]) -> set[str]:
    return {name for name in names if name in _SKIP_DIRS}


def _clean_git_errors(stderr: str) -> str:
    lines = [line.removeprefix("error: ") for line in stderr.splitlines() if line.strip()]
    return "\n".join(lines[:20])
