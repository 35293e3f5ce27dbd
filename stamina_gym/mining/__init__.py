"""Tasks from real project history (``stamina-gym mine``): ``sources`` reads snapshots
from a git repository or a package's sdists, ``mine`` turns them into a task whose turns
are the project's own steps, each with the tests that fail before it and pass after."""
