#!/usr/bin/env bash
# The main job: the oracle agent through StaminaTodo-v2 on the local sandbox. Prints a
# per-turn table and writes the run's records under runs/. Extra arguments go to
# `stamina-gym run` (for example --agent null, --seed 3, --turns 5).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/stamina-gym run --agent oracle --env StaminaTodo-v2 "$@"
