#!/usr/bin/env bash
# Build the docker sandbox image (minimal Debian + python3 + pytest, bootstrapped with
# mmdebstrap from this machine's apt sources and imported; no registry). Skipped when the
# tag of the current recipe (stamina_gym/sandbox/image.py) is present. Extra arguments go
# to `stamina-gym docker-build`: --force, --mirror URI, --print-tag.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/stamina-gym docker-build "$@"
