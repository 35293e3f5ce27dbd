import os
import subprocess
import sys
import tempfile

home = tempfile.mkdtemp()
db = os.path.join(home, "todo.db")
todo = [sys.executable, "-m", "todo", "--db", db]
subprocess.run([*todo, "add", "Renew passport"], check=True, capture_output=True)

# ~/backups hasn't been created on this machine yet
result = subprocess.run([*todo, "export", "-o", os.path.join(home, "backups", "todos.json")],
                        capture_output=True, text=True, check=False)
print("exit code:", result.returncode)
print(result.stdout + result.stderr)
sys.exit(1 if "Traceback" in result.stderr else 0)
