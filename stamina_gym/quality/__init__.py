"""Quality: what a submit is judged on besides the hidden tests. ``measure`` scores a work
tree (pylint, radon, bandit per file, cached by content), ``reference`` keeps the
reference solution's scores per turn, ``review`` puts them together with the consistency
rules and memory probes at each submit; ``analyzers`` runs the tools in a worker with a
time budget, ``constant_sql`` and ``lint_context`` are checks of their own."""
