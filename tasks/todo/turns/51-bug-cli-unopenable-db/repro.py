import os
import subprocess
import sys
import tempfile

home = tempfile.mkdtemp()
db = os.path.join(home, "todos", "todo.db")  # the todos/ folder doesn't exist yet
result = subprocess.run(
    [sys.executable, "-m", "todo", "--db", db, "add", "Buy milk"],
    capture_output=True,
    text=True,
    check=False,
)
print("exit code:", result.returncode)
print(result.stdout + result.stderr)
sys.exit(1 if "Traceback" in result.stderr else 0)
