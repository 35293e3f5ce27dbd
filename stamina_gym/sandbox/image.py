"""The Docker sandbox image: a minimal Debian with Python and pytest, built without any
container registry.

``mmdebstrap`` lays Debian's essential packages plus the recipe's packages into a tarball
from the apt sources this machine already uses (``/etc/apt``), and the tarball is imported
as an image. The tag is a hash of the recipe, so the image is rebuilt only when the recipe
changes, and the env can tell at start whether the right image is present.

One recipe per Debian release in ``SUITES``, which differ in their Python: the default,
bookworm, has 3.11; trixie has 3.13 (``sandbox.docker_debian``), so a task can be
validated on both (``stamina-gym validate --sandbox docker:trixie``). A release this
machine's apt has no source for is fetched from the mirror its own release comes from.

    stamina-gym docker-build                    # or scripts/build_image.sh
    stamina-gym docker-build --debian trixie
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

from stamina_gym.errors import SandboxError

REPOSITORY = "stamina-gym-sandbox"

SUITES = ("bookworm", "trixie")
"""Debian releases there is a recipe for; the first is the default."""

_BASE_RECIPE: dict = {
    "variant": "essential",
    # python-is-python3 makes `python` work inside, as it does in the local sandbox.
    "packages": ["python3", "python3-pytest", "python-is-python3"],
    "dpkg_exclude": ["/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*", "/usr/share/locale/*"],
    "changes": [
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "ENV LANG=C.UTF-8",
        'CMD ["sleep", "infinity"]',
    ],
}


def recipe(suite: str = SUITES[0]) -> dict:
    """What goes into the image of Debian ``suite``. Any change gives a new tag, hence a rebuild."""
    if suite not in SUITES:
        raise SandboxError(f"no sandbox image recipe for Debian {suite!r}; there is one for {', '.join(SUITES)}")
    return {**_BASE_RECIPE, "suite": suite}


RECIPE = recipe()
"""The default image's recipe."""

BUILD_COMMAND = "stamina-gym docker-build (or scripts/build_image.sh in a checkout)"
_APT = Path("/etc/apt")


def recipe_hash(recipe: dict = RECIPE) -> str:
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def image_tag(recipe: dict = RECIPE) -> str:
    """``stamina-gym-sandbox:<hash of the recipe>``."""
    return f"{REPOSITORY}:{recipe_hash(recipe)}"


# -- apt sources of this machine ---------------------------------------------------------


def _suite_matches(suite: str, codename: str) -> bool:
    return suite == codename or suite.startswith(codename + "-")


def apt_sources(codename: str, apt_dir: Path = _APT) -> str:
    """The ``deb`` entries for ``codename`` (and its -updates/-security) among the sources
    apt uses on this machine, in deb822 form; empty when there is none."""
    stanzas: list[str] = []
    files = [apt_dir / "sources.list"] + sorted((apt_dir / "sources.list.d").glob("*"))
    for path in files:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".sources":
            stanzas += _deb822_entries(text, codename)
        elif path.name == "sources.list" or path.suffix == ".list":
            stanzas += _one_line_entries(text, codename)
    return "\n\n".join(stanzas) + ("\n" if stanzas else "")


def sources_for(suite: str, apt_dir: Path = _APT, os_release: Path = Path("/etc/os-release")) -> str:
    """This machine's apt entries for ``suite``; when it has none, its entries for its own
    Debian release with the release renamed in their ``Suites`` (same mirror, same
    keyring). Empty when neither exists."""
    text = apt_sources(suite, apt_dir)
    own = _own_codename(os_release)
    if text or not own or own == suite:
        return text
    lines = apt_sources(own, apt_dir).splitlines(keepends=True)
    return "".join(re.sub(rf"\b{own}\b", suite, line) if line.startswith("Suites:") else line for line in lines)


def _own_codename(os_release: Path) -> str | None:
    try:
        text = os_release.read_text(encoding="utf-8")
    except OSError:
        return None
    match = re.search(r"^VERSION_CODENAME=\"?([a-z]+)", text, re.M)
    return match[1] if match else None


def _deb822_entries(text: str, codename: str) -> list[str]:
    out = []
    for block in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        key = None
        for line in block.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if line[0] in " \t" and key:
                fields[key] += "\n" + line
                continue
            key, _, value = line.partition(":")
            key = key.strip()
            fields[key] = value.strip()
        if fields.get("Enabled", "yes").lower() == "no" or "deb" not in fields.get("Types", "").split():
            continue
        suites = [s for s in fields.get("Suites", "").split() if _suite_matches(s, codename)]
        if not suites or not fields.get("URIs"):
            continue
        fields["Types"], fields["Suites"] = "deb", " ".join(suites)
        out.append("\n".join(f"{k}: {v}" for k, v in fields.items()))
    return out


def _one_line_entries(text: str, codename: str) -> list[str]:
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        match = re.match(r"^deb\s+(?:\[(?P<opts>[^\]]*)\]\s+)?(?P<uri>\S+)\s+(?P<suite>\S+)\s+(?P<comps>.+)$", line)
        if not match or not _suite_matches(match["suite"], codename):
            continue
        fields = {"Types": "deb", "URIs": match["uri"], "Suites": match["suite"], "Components": match["comps"]}
        for opt in (match["opts"] or "").split():
            name, _, value = opt.partition("=")
            if name == "signed-by":
                fields["Signed-By"] = value
        out.append("\n".join(f"{k}: {v}" for k, v in fields.items()))
    return out


# -- build --------------------------------------------------------------------------------


def image_present(client, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def build(
    *, suite: str = SUITES[0], mirror: str | None = None, force: bool = False,
    progress: Callable[[str], None] | None = None,
) -> str:  # fmt: skip
    """Build the image of Debian ``suite`` unless it is present; returns its tag."""
    import docker

    progress = progress or (lambda line: print(f"docker-build: {line}", file=sys.stderr, flush=True))
    spec = recipe(suite)
    tag = image_tag(spec)
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        raise SandboxError(f"no Docker engine answers ({exc}); start one or use the local sandbox") from None
    if image_present(client, tag) and not force:
        progress(f"{tag} is present; nothing to build")
        return tag
    exe = shutil.which("mmdebstrap")
    if exe is None:
        raise SandboxError("mmdebstrap is not installed: apt-get install mmdebstrap (scripts/setup.sh does it as root)")
    with tempfile.TemporaryDirectory(prefix="stamina-gym-image-") as tmp:
        sources = Path(tmp) / "host.sources"
        if mirror:
            sources.write_text(f"Types: deb\nURIs: {mirror}\nSuites: {suite} {suite}-updates\nComponents: main\n")
        else:
            text = sources_for(suite)
            if not text:
                raise SandboxError(
                    f"no apt source for Debian {suite} found under {_APT}; pass --mirror URI of a Debian mirror"
                )
            sources.write_text(text, encoding="utf-8")
        rootfs = Path(tmp) / "rootfs.tar"
        argv = [
            exe, f"--variant={spec['variant']}", f"--include={','.join(spec['packages'])}",
            *(f"--dpkgopt=path-exclude={p}" for p in spec["dpkg_exclude"]),
            suite, str(rootfs), str(sources),
        ]  # fmt: skip
        progress(f"building {tag}: mmdebstrap {suite} + {', '.join(spec['packages'])} (about a minute)")
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=sys.stderr, stderr=sys.stderr, check=False)
        if proc.returncode != 0:
            raise SandboxError(f"mmdebstrap failed with exit code {proc.returncode} (its log is above)")
        progress(f"importing {rootfs.stat().st_size // 2**20} MiB rootfs as {tag}")
        repository, _, version = tag.partition(":")
        client.api.import_image_from_file(
            str(rootfs), repository=repository, tag=version, changes=[*spec["changes"], f"LABEL org.stamina-gym.recipe={version}"]
        )
    if not image_present(client, tag):
        raise SandboxError(f"docker import ended but {tag} is not listed")
    progress(f"built {tag}")
    return tag
