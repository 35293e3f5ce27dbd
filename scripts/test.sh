#!/usr/bin/env bash
# The test suite, slow tests included (they validate every task and play whole episodes).
# Extra arguments go to pytest, e.g. `scripts/test.sh -m "not slow"` for the fast ones.
set -euo pipefail
cd "$(dirname "$0")/.."
# The trainer extras' tests run too: TRL's (torch, several GB) only where this installs it.
# The docs extra builds the documentation site below.
STAMINA_GYM_EXTRAS="${STAMINA_GYM_EXTRAS:-test,trl,docs}" bash scripts/setup.sh
# Docker tests run wherever an engine answers (the images are built first, once per recipe:
# the default one, and the trixie one that validation compares Python versions with).
if problem=$(.venv/bin/python -c 'from stamina_gym.sandbox.docker import engine_problem as p; print(p() or "")') && [ -z "$problem" ]; then
  echo "test.sh: a Docker engine answers: the docker sandbox tests run" >&2
  .venv/bin/stamina-gym docker-build
  .venv/bin/stamina-gym docker-build --debian trixie
else
  echo "test.sh: docker sandbox tests are SKIPPED: ${problem:-the engine check failed}" >&2
fi
status=0
# The documentation site, every warning an error: a broken link, a page's cross-reference to
# a Python name that no longer exists, a file, test or subcommand it names that is gone. A
# failure fails the script at its end; the tests run all the same.
docs_status=0
if [ -x .venv/bin/mkdocs ]; then
  NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict || docs_status=$?
else
  echo "test.sh: mkdocs is missing: STAMINA_GYM_EXTRAS must include docs" >&2
  docs_status=1
fi
# Two pytest-xdist workers by default (STAMINA_GYM_TEST_WORKERS=0: one process). Each test
# module, the tests of a shared episode and all docker tests keep to one worker each
# (tests/conftest.py). Much of the suite waits on sandboxes: two workers took the suite from
# 1,410 s to 1,040 s on this 2-core machine (docs/speed.md).
workers="${STAMINA_GYM_TEST_WORKERS:-2}"
parallel=()
[ "$workers" != 0 ] && parallel=(-n "$workers" --dist loadgroup)
# The 15 slowest tests are printed at the end, so that growth is seen when it happens.
.venv/bin/python -m pytest "${parallel[@]}" --durations=15 "$@" || status=$?
# pytest exits 5 when it collected no test: report it as a failure, with the reason.
if [ "$status" = 5 ]; then echo "test.sh: pytest collected no tests" >&2; exit 1; fi
if [ "$docs_status" != 0 ]; then
  echo "test.sh: mkdocs build --strict failed (its warnings are above the tests' output)" >&2
  [ "$status" = 0 ] && status=1
fi
exit "$status"
