"""Where mined history comes from: the commits of a local git repository, or the releases
of a package on the package index (its sdists, downloaded into a cache by pip, so the
machine's own index configuration applies). Either way the result is a list of
``Snapshot``s, oldest first: text files only, each a path -> text map."""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

from stamina_gym.errors import ConfigError
from stamina_gym.task import glob_matches

#: Where release sdists are downloaded to and kept.
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "stamina-gym" / "sdists"

#: A file larger than this is left out of a snapshot (data, not code).
MAX_FILE_BYTES = 512 * 1024
#: Build and packaging leftovers that are no part of a project's history.
NOISE = ("*.egg-info/*", "PKG-INFO", "*.pyc", "*/__pycache__/*", ".git/*", ".github/*", ".hg*", ".tox/*")


@dataclass(frozen=True)
class Snapshot:
    ref: str
    """A commit's hash, or a release's version."""
    title: str
    """The commit's subject, or ``Release <version>``."""
    message: str = ""
    """The commit's body, or the release's changelog entry where one is found."""
    files: dict[str, str] = field(default_factory=dict, repr=False)
    digest: str = ""
    """The sha256 of a release's sdist (empty for a commit)."""


def _keep(rel: str, data: bytes) -> str | None:
    """The text of a file worth keeping, with its line ends made ``\n`` (a task's patches
    are read as text, which folds ``\r\n``), else None."""
    if len(data) > MAX_FILE_BYTES or any(glob_matches(rel, pattern) for pattern in NOISE):
        return None
    try:
        return data.decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError:
        return None


def write_tree(root: Path, files: Mapping[str, str]) -> None:
    """``files`` (path -> text, a snapshot's or a part of it) written under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


# -- git ------------------------------------------------------------------------------------


def git_snapshots(repo: Path, *, seed: str, until: str | None = None, commits: Sequence[str] = ()) -> list[Snapshot]:
    """``seed`` and then each commit after it up to ``until`` (default HEAD) along the
    first-parent line, or the ``commits`` named, in the order given."""
    import git  # gitpython, a main dependency

    try:
        handle = git.Repo(repo)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise ConfigError(f"{repo}: not a git repository") from None
    try:
        start = handle.commit(seed)
        if commits:
            chosen = [handle.commit(ref) for ref in commits]
        else:
            end = handle.commit(until or "HEAD")
            chosen = list(reversed(list(handle.iter_commits(f"{start.hexsha}..{end.hexsha}", first_parent=True))))
    except (git.BadName, ValueError) as exc:
        raise ConfigError(f"{repo}: {exc}") from None
    except (git.GitCommandError, BrokenPipeError) as exc:  # git itself refused the folder
        raise ConfigError(f"{repo}: git cannot read it ({getattr(exc, 'stderr', '') or exc}); a clone of it may be read") from None
    snapshots = []
    for commit in [start, *chosen]:
        files = {}
        for blob in commit.tree.traverse():
            if blob.type == "blob":
                data = _as_checked_out(commit.tree, blob)
                text = _keep(blob.path, data) if data is not None else None
                if text is not None:
                    files[blob.path] = text
        snapshots.append(Snapshot(commit.hexsha, *_title_and_message(handle, commit), files))
    return snapshots


#: git's mode of a symbolic link, whose blob holds the path it points to.
_LINK = 0o120000


def _as_checked_out(tree, blob, hops: int = 8) -> bytes | None:
    """A blob's content; a symbolic link's is the file it points to in the same tree, as a
    checkout reads it (semver's ``tests/coerce.py`` is ``../docs/advanced/coerce.py``), or
    None where that is outside the tree, a folder, missing, or a loop."""
    for _ in range(hops):
        if blob.mode != _LINK:
            return blob.data_stream.read()
        target = posixpath.normpath(posixpath.join(posixpath.dirname(blob.path), blob.data_stream.read().decode("utf-8", "replace")))
        if target.startswith("../") or target == ".." or posixpath.isabs(target):
            return None
        try:
            blob = tree / target
        except KeyError:
            return None
        if blob.type != "blob":
            return None
    return None


#: The subject git or a forge gives a merge: it names a branch, not the change.
_MERGE = re.compile(r"^Merge (pull request #\d+ from \S+|(remote-tracking )?branch '[^']*'( of \S+)?( into \S+)?)\s*$")


def _title_and_message(handle, commit) -> tuple[str, str]:
    """A commit's title and message. A merge's subject names a branch, not the change: its
    title is the pull request's (the body's first line) and its message lists the subjects
    of the commits it merges, so the prompt says what was done."""
    subject, _, body = commit.message.strip().partition("\n")
    subject, body = subject.strip(), body.strip()
    if len(commit.parents) < 2 or not _MERGE.match(subject):
        return subject, body
    title, _, rest = body.partition("\n")
    merged = [c.summary.strip() for c in handle.iter_commits(f"{commit.parents[0].hexsha}..{commit.parents[1].hexsha}", max_count=50)]
    merged = [line for line in dict.fromkeys(reversed(merged)) if line and line != title.strip() and not _MERGE.match(line)][:20]
    message = "\n".join(filter(None, [rest.strip(), "\n".join(f"- {line}" for line in merged)]))
    return (title.strip() or subject), message


# -- the package index ----------------------------------------------------------------------


def index_versions(name: str) -> list[str]:
    """The versions of ``name`` on the index pip is configured with, oldest first."""
    from packaging.version import InvalidVersion, Version

    run = subprocess.run([sys.executable, "-m", "pip", "index", "versions", name, "--disable-pip-version-check"],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    found = re.search(r"Available versions: (.*)", run.stdout)
    if run.returncode != 0 or not found:
        raise ConfigError(f"pypi:{name}: the index lists no versions: {(run.stderr or run.stdout).strip()[-300:]}")
    versions = []
    for text in found.group(1).split(","):
        try:
            versions.append(Version(text.strip()))
        except InvalidVersion:
            continue
    return [str(v) for v in sorted(v for v in versions if not v.is_prerelease)]


def pypi_snapshots(name: str, versions: Sequence[str], cache: Path, progress: Callable[[str], None] = lambda line: None,
                   digests: Mapping[str, str] | None = None) -> list[Snapshot]:  # fmt: skip
    """One snapshot per release, from its sdist (downloaded once into ``cache``); the
    sdist's top folder (``name-1.2/``) is stripped. A release without a usable sdist is
    skipped and said so through ``progress``. With ``digests`` (version -> sha256, a corpus
    manifest's), each sdist must have its digest: a ConfigError names any that differs."""
    from concurrent.futures import ThreadPoolExecutor

    cache.mkdir(parents=True, exist_ok=True)
    snapshots = []
    # A pip download is mostly waiting (the index, a build backend preparing metadata):
    # four at once.
    def fetch(version: str) -> Path | ConfigError:
        try:
            return _sdist(name, version, cache)
        except ConfigError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=4) as pool:
        for number, (version, archive) in enumerate(zip(versions, pool.map(fetch, versions)), 1):
            if isinstance(archive, ConfigError):  # a release without a usable sdist: the history skips it
                progress(f"sdist {number}/{len(versions)}: SKIPPED {version}: {str(archive)[-200:]}")
                continue
            progress(f"sdist {number}/{len(versions)}: {archive.name}")
            digest = hashlib.sha256(archive.read_bytes()).hexdigest()
            if digests is not None and digests.get(version) != digest:
                raise ConfigError(f"pypi:{name} {version}: the sdist {archive.name} has sha256 {digest}, "
                                  f"the manifest pins {digests.get(version) or 'none'}")  # fmt: skip
            files = _unpack(archive)
            snapshots.append(Snapshot(version, f"Release {version}", release_notes(files, version), files, digest))
    if len(snapshots) < 2:
        raise ConfigError(f"pypi:{name}: {len(snapshots)} of {len(versions)} release(s) have a usable sdist; mining needs two")
    return borrow_notes(snapshots)


def borrow_notes(snapshots: Sequence[Snapshot]) -> list[Snapshot]:
    """``snapshots``, each release whose sdist gives no changelog entry given the one a later
    release's changelog holds for it: packaging 23.1's sdist ships a ``docs/changelog.rst``
    that includes a ``CHANGELOG.rst`` it leaves out, and its prompt had no notes at all."""
    out = list(snapshots)
    for number, snapshot in enumerate(out):
        if not snapshot.message.strip():
            entry = next(filter(None, (release_notes(later.files, snapshot.ref) for later in out[number + 1 :])), "")
            out[number] = replace(snapshot, message=entry)
    return out


def _sdist(name: str, version: str, cache: Path) -> Path:
    folder = cache / f"{name}-{version}"
    found = sorted(p for p in folder.glob("*") if p.suffix in (".gz", ".zip", ".bz2") or p.name.endswith(".tar.gz"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    try:
        return _from_simple_index(name, version, folder)
    except (OSError, ValueError, KeyError):
        pass  # an index without the JSON simple API: pip fetches it
    # pip prepares an sdist's metadata with its build backend: this environment's where it
    # has it (setuptools), else one pip installs from the index for the purpose.
    for isolation in (["--no-build-isolation"], []):
        run = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", *isolation,
                              "-q", "-d", str(folder), f"{name}=={version}"], capture_output=True, text=True, timeout=900)  # fmt: skip
        if run.returncode == 0:
            break
    found = sorted(p for p in folder.glob("*") if p.is_file())
    if not found:
        raise ConfigError(f"pypi:{name}=={version}: no sdist could be downloaded: {(run.stderr or run.stdout).strip()[-400:]}")
    return found[0]


def index_url() -> str:
    """The index pip is configured with: PIP_INDEX_URL, pip's configuration files, else
    pip's own default."""
    configured = os.environ.get("PIP_INDEX_URL")
    if not configured:
        run = subprocess.run([sys.executable, "-m", "pip", "config", "list", "--disable-pip-version-check"],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
        found = re.search(r"^[\w:.-]*index-url\s*=\s*'?([^'\n]+)'?$", run.stdout, re.MULTILINE)
        configured = found.group(1) if found else ""
    if not configured:
        from pip._internal.models.index import PyPI  # pip's default, not written here

        configured = PyPI.simple_url
    return configured.rstrip("/")


def _from_simple_index(name: str, version: str, folder: Path) -> Path:
    """The release's sdist straight from the index's JSON simple API (PEP 691), its hash
    checked: pip would first build its metadata, which some old sdists fail (a version read
    from the installed package). Raises OSError, ValueError or KeyError when it cannot."""
    import json
    import urllib.parse
    import urllib.request

    from packaging.utils import canonicalize_name, parse_sdist_filename

    request = urllib.request.Request(f"{index_url()}/{canonicalize_name(name)}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=120) as answer:
        listing = json.load(answer)
    for entry in listing["files"]:
        filename = entry["filename"]
        if not filename.endswith((".tar.gz", ".zip")) or entry.get("yanked"):
            continue
        try:
            _, found = parse_sdist_filename(filename)
        except ValueError:
            continue
        if str(found) != version:
            continue
        with urllib.request.urlopen(urllib.parse.urljoin(answer.url, entry["url"]), timeout=300) as download:
            data = download.read()
        expected = entry.get("hashes", {}).get("sha256")
        if expected and hashlib.sha256(data).hexdigest() != expected:
            raise ValueError(f"{filename}: the download does not match the index's sha256")
        (folder / filename).write_bytes(data)
        return folder / filename
    raise KeyError(f"{name}=={version}: no sdist in the index's listing")


def _unpack(archive: Path) -> dict[str, str]:
    members: dict[str, bytes] = {}
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as bundle:
            for info in bundle.infolist():
                if not info.is_dir():
                    members[info.filename] = bundle.read(info)
    else:
        with tarfile.open(archive) as bundle:
            for member in bundle.getmembers():
                if member.isfile():
                    handle = bundle.extractfile(member)
                    if handle is not None:
                        members[member.name] = handle.read()
    tops = {name.split("/", 1)[0] for name in members}
    strip = len(tops) == 1 and all("/" in name for name in members)
    files = {}
    for name, data in members.items():
        rel = name.split("/", 1)[1] if strip else name
        text = _keep(rel, data)
        if rel and text is not None:
            files[rel] = text
    return files


_CHANGELOGS = re.compile(r"^(docs?/)?(CHANGE|CHANGES|CHANGELOG|HISTORY|NEWS|RELEASE|README)", re.IGNORECASE)


#: A release's date in words (``Feb 29, 2020``, ``29 February 2020``), which says nothing of its changes.
_DATE = r"\(?(\w{3,9}\.? \d{1,2}(st|nd|rd|th)?,? \d{4}|\d{1,2} \w{3,9}\.? \d{4})\)?"


#: A note that a release carries another's fixes: "Includes bug fixes from 2.19.4 and 2.19.5."
_INCLUDES = re.compile(r"(?i)\b(?:bug\s*)?fix(?:es)?\s+from\s+(?:releases?\s+|versions?\s+)?(v?\d+\.\d+(?:\.\d+)*(?:(?:\s*,\s*|\s+and\s+)v?\d+\.\d+(?:\.\d+)*)*)")
#: The most such releases whose entries one release's notes carry.
MAX_INCLUDED = 4


def release_notes(files: dict[str, str], version: str) -> str:
    """The changelog entry of ``version`` (``_changelog_entry``), and after it the entries of
    the releases it says it includes the fixes of, from the same changelog: marshmallow
    3.0.1's "Includes bug fix from 2.20.3." names no behaviour, and 2.20.3's own entry, in
    the same file, says which (a ``TypeError`` from ``on_bind_field`` is no longer swallowed)."""
    entry = _changelog_entry(files, version)
    included = []
    for found in _INCLUDES.finditer(entry):
        included += [v.lstrip("v") for v in re.findall(r"v?\d+\.\d+(?:\.\d+)*", found.group(1))]
    parts = [entry]
    for other in list(dict.fromkeys(v for v in included if v != version))[:MAX_INCLUDED]:
        own = _changelog_entry(files, other, heading_only=True)
        if own:
            parts.append(f"The fixes of {other}, which this release includes:\n{own}")
    return "\n\n".join(parts)


def _changelog_entry(files: dict[str, str], version: str, heading_only: bool = False) -> str:
    """The section of the project's changelog about ``version`` (a changelog, history or
    news file, else the README's version history, where the version starts its line): from
    the line that names it, with that line's own text after the version, to the next line
    that names another version. With ``heading_only``, only a line the version starts
    opens it anywhere (not a note that names it: "Includes bug fix from 2.20.3")."""
    heading = re.compile(rf"(^|[^\w.])v?{re.escape(version)}($|[^\w.])")
    starts = re.compile(rf"^\W{{0,4}}v?{re.escape(version)}($|[^\w.])")
    # Another release's line: a version at its start, unindented (``  2.4.`` is a wrapped line).
    other = re.compile(r"^(?!\s)\W{0,4}v?\d+\.\d+(\.\d+)*\b")
    readme_last = sorted((rel for rel in files if _CHANGELOGS.match(rel) and rel.count("/") <= 1),
                         key=lambda rel: ("README" in rel.upper(), rel.count("/"), len(rel)))  # fmt: skip
    for rel in readme_last:
        lines = files[rel].splitlines()
        # A README names versions in prose and tables too: only a line its version starts
        # (``- 1.9.0 We now honor ...``) opens an entry there.
        opens = heading.search if "README" not in rel.upper() and not heading_only else starts.match
        for start, line in enumerate(lines):
            found = opens(line)
            if not found or len(line) > 100:
                continue
            own = line[found.end() :].strip(" -:*)(").strip()
            entry = [own] if own and not re.fullmatch(r"[\W\d-]*|\(?[\d-]{8,}\)?|" + _DATE, own) else []
            # The next release's heading: a version at a line's start, or after the words
            # this one's has before its version (sqlparse's ``Release 0.3.0 (Mar 11, 2019)``).
            words = line[: line.index(version, found.start())].rstrip("v")
            same = re.compile(rf"^{re.escape(words)}v?\d+\.\d+") if words.strip(" \t#*-=[") else other
            for follow in lines[start + 1 :]:
                if (other.match(follow) or same.match(follow)) and version not in follow:
                    break
                entry.append(follow)
            text = "\n".join(line for line in entry if not set(line.strip()) <= set("=-~^*#+")).strip()
            if text:
                return _whole_lines(text, MAX_ENTRY)
    return ""


#: The most characters of one release's changelog entry a prompt carries. An entry ends at
#: the next release's heading, so only one whose end is not found runs on this far.
MAX_ENTRY = 8000


def _whole_lines(text: str, limit: int) -> str:
    """``text``, or its lines that fit in ``limit`` characters and a last line saying it
    goes on: never a cut word (validators 0.36.0's notes ended in "feat(uri): add t")."""
    if len(text) <= limit:
        return text
    kept = text[: limit + 1].rsplit("\n", 1)[0] if "\n" in text[:limit] else ""
    return (kept + "\n" if kept else "") + f"[the entry goes on: {len(text) - len(kept):,} more characters]"
