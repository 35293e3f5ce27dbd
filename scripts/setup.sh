#!/usr/bin/env bash
# Prepare this checkout: system packages (as root, when missing), a virtual environment in
# .venv and the package with its test extras. Safe to run again: it skips what is done.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v setpriv >/dev/null 2>&1 || need_apt+=(util-linux)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
# The HTML report of `stamina-gym eval` is checked in a real headless browser.
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
# The docker sandbox image is bootstrapped with mmdebstrap, wanted only where an engine runs.
if command -v docker >/dev/null 2>&1 && timeout 20 docker info >/dev/null 2>&1; then
  command -v mmdebstrap >/dev/null 2>&1 || need_apt+=(mmdebstrap)
fi
if ((${#need_apt[@]})); then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${need_apt[*]} with apt-get" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "setup: WARNING: missing ${need_apt[*]}; install them with your package manager" >&2
    echo "setup: without bubblewrap the sandbox falls back to rlimits only (no filesystem or network isolation)" >&2
    echo "setup: without chromium the browser test of the evaluation report is skipped (it fails on CI)" >&2
  fi
fi

python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "setup: Python >= 3.10 is required" >&2; exit 1; }
[ -x .venv/bin/python ] || python3 -m venv .venv
# STAMINA_GYM_EXTRAS: the extras to install (default test; scripts/test.sh adds trl, whose
# torch is several GB).
extras="${STAMINA_GYM_EXTRAS:-test}"
stamp=".venv/.stamina-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1) $extras"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing stamina-gym[$extras] into .venv" >&2
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e ".[$extras]"
  echo "$want" > "$stamp"
fi
