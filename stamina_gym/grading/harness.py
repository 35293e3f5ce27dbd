"""The grading harness: the one program the grader starts inside the sandbox.

Run as ``python -I -B /grade/harness.py /grade/job.json /grade /repo`` (the roots of the
grading folder and of the source: the sandbox may show them elsewhere, and a job's pytest
arguments name them as ``{grade}`` and ``{repo}``); standard library and pytest
only (the package itself is not visible inside the sandbox). See ``stamina_gym.grading``
for the threat model this answers; in short:

* The **parent** imports pytest (warm: once per run, not once per shard), never imports a
  test module, the test support or the agent's code, and is the only process that writes
  to the sandbox's stdout: its last line is the report. It makes itself non-dumpable, so
  the graded code (same uid) cannot read or write its memory or its file descriptors.
* Each **child** is forked per shard. Before anything of the agent's is imported it
  points its stdout/stderr at a log pipe, draws a random key, hands the key to the parent
  over its result pipe (``hello``), installs an audit hook (which cannot be removed) and
  registers the harness plugin. From then on every message it sends is
  ``body TAB sha256(key + body)``; the key exists only in default arguments of harness
  functions (reading those raises an audit event the hook treats as tampering).
* A test's outcome comes from the harness's own ``pytest_pyfunc_call``, which calls the
  test function itself, sees whether it raised, and sends ``call`` at once. pytest's own
  reports are sent too (``report``: setup and teardown errors, the call's verdict) and
  collection errors (``collect``). The parent pays a test only when its ``call`` passed
  and no report of it failed; a report that says passed while the harness saw the test
  raise, a test that ran without the harness seeing it, a message that does not verify,
  or a second message for one test is evidence of forgery (``forged``).
* The audit hook ends the child (``alarm``, exit ``ALARM_EXIT``) on ctypes calls, heap
  and frame walking through ``gc``, tracing hooks, hand-made code objects (and code made
  from bytes: a pyc is read only where the graded code cannot have written it), ``__code__``
  swaps, opening ``/proc/*/mem``, and any read or write of the harness's own functions'
  defaults. pytest's, pluggy's and unittest's modules and classes and the builtins are
  fingerprinted before the first product import and compared after collection and at the
  end (``integrity``), since rebinding a module or class attribute raises no audit event.
  The task's test support (``{grade}/support``, first on the path) is read before then:
  a support module from another file, or a function of it whose code is not its file's,
  is a change too, and so is rebinding its attributes after collection.
"""

import io
import os
import select
import signal
import sys
import time
from importlib.util import MAGIC_NUMBER, cache_from_source

ALARM_EXIT = 86
MARKER = "\x1estamina-gym-report "
_LOG_TAIL = 4096
_RESULT_CAP = 32 * 1024 * 1024
_MESSAGE_CAP = 600
#: Sealed judging: the longest observation sent (``seal.OBSERVATION_CAP``), and what one
#: test and one shard may send in all, counted as the messages on the pipe (an observation
#: of ``False`` is 5 characters in a message of about 150 bytes); past any, what is sent
#: fails its test (``{"over": true}``), and a shard's messages stay below ``_RESULT_CAP``
#: with room for its tests' other messages (about 2 KB a test).
_OBSERVATION_CAP = 1 << 20
_OBSERVED_PER_TEST = 16 << 20
_OBSERVED_PER_SHARD = 24 << 20
#: What a message adds to the text it carries: its kind, separators, signature and newline.
_MESSAGE_OVERHEAD = 96
#: Modules whose attributes the graded code must leave alone: the test runner's and the
#: assertion helpers' (unittest's, the builtins), where a rebinding makes failing tests pass.
_WATCHED = ("_pytest", "pytest", "pluggy", "unittest", "builtins")
#: Watched namespaces where honest code may add names (``gettext.install`` adds ``_`` to
#: the builtins): only rebinding or deleting what was there is a change.
_GROWING = frozenset({"builtins"})
#: Attributes pytest itself rebinds during a run (assertion hooks set per test).
_MUTABLE = frozenset({"_pytest.assertion.util._reprcompare", "_pytest.assertion.util._assertion_pass",
                      "_pytest.assertion.util._config"})  # fmt: skip
#: Attributes added during a run by pytest itself (a class attribute set at collection) or by
#: the interpreter: a warning makes a ``__warningregistry__`` in the module of the frame it is
#: blamed on, and a ResourceWarning from the garbage collector is blamed on whatever frame
#: runs, pytest's own included. Rebinding either is still a change.
_ADDED = frozenset({"_pytest_diamond_inheritance_warning_shown", "__warningregistry__"})
#: Import metadata the import system rebinds: a loader that hands back a module under another
#: name (six's ``six.moves.builtins`` is the builtins module) gets it that name's
#: ``__spec__``. It decides no verdict.
_IMPORT_METADATA = frozenset({"__spec__"})
_BAD_EVENTS = frozenset({
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys.settrace", "sys.setprofile",
    "sys._current_frames", "code.__new__", "sys.monitoring.register_callback", "sys.monitoring.set_events",
})  # fmt: skip
#: The error the audit hook raises where it refuses a load from bytes (pytest catches any
#: error of its ``_read_pyc`` and rewrites the test module from its source).
_REFUSED = "code is not loaded from bytes while grading"


# -- the parent -----------------------------------------------------------------------------


def main(argv):
    import hashlib
    import json

    if argv[1] == "--serve":
        return serve({"{grade}": argv[2], "{repo}": argv[3]})
    if argv[1] == "--serve-visible":
        return serve({})
    with open(argv[1], encoding="utf-8") as handle:
        job = json.load(handle)
    import pytest  # warm: the children inherit it

    _preload_code_makers()
    _resolve_lazy_names()
    _no_dump()
    report = run_job(job, {"{grade}": argv[2], "{repo}": argv[3]}, pytest, hashlib.sha256)
    sys.stdout.write("\n" + MARKER + json.dumps(report) + "\n")
    sys.stdout.flush()
    return 0


def serve(roots):
    """The warm runner: import pytest and its plugins once, then run one job per line of
    stdin, answering each with one report line. Between jobs every other process of this
    user in the sandbox is killed and the scratch folders are emptied, so nothing of one
    job's children reaches the next."""
    import hashlib
    import importlib
    import json

    import pytest
    from _pytest.config import default_plugins

    for name in default_plugins:
        try:
            importlib.import_module(f"_pytest.{name}")
        except ImportError:
            pass
    _preload_code_makers()
    _resolve_lazy_names()
    _no_dump()
    sys.stdout.write(MARKER + json.dumps({"ready": True}) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        job = json.loads(line)
        if job.get("kind") == "visible":
            report = _relay(job, lambda out_fd: _visible_child(job, out_fd, pytest))
        elif job.get("kind") == "command":
            report = _relay(job, lambda out_fd: _command_child(job, out_fd))
        else:
            report = run_job(job, roots, pytest, hashlib.sha256)
        _sweep()
        sys.stdout.write(MARKER + json.dumps(report) + "\n")
        sys.stdout.flush()
    return 0


def _sweep():
    """Kill every process this one may signal (all of the sandbox user's but itself; the
    sandbox's init belongs to another user), reap them, remove the user's IPC objects,
    empty /tmp, /dev/shm and /dev/mqueue. Only as
    an unprivileged user whose parent is the PID namespace's init (bubblewrap) or outside
    it (a docker exec): anywhere else ``kill(-1)`` would reach the host's processes."""
    import shutil

    if os.geteuid() == 0 or os.getppid() not in (0, 1):
        return  # not the sandbox's unprivileged user in a PID namespace of its own: kill nothing
    # Until none is left: the killed are reaped by the namespace's init at its own pace,
    # and until then they count against the user's process limit (a fork bomb's would
    # make the next job's fork fail).
    me, give_up = os.getpid(), time.monotonic() + 5
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG) == (0, 0):
                    time.sleep(0.001)
            except ChildProcessError:
                break
        if not _others_alive(me) or time.monotonic() > give_up:
            break
        time.sleep(0.002)
    # System V IPC objects of the user go too, as a cold run's IPC namespace would.
    for ipcrm in ("/usr/bin/ipcrm", "/bin/ipcrm"):
        if os.path.exists(ipcrm):
            try:
                quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
                os.waitpid(os.posix_spawn(ipcrm, [ipcrm, "--all"], {"PATH": "/usr/bin:/bin"}, file_actions=quiet), 0)
            except OSError:
                pass
            break
    mounts = _mount_points()
    for folder in ("/tmp", "/dev/shm", "/dev/mqueue"):
        _empty(folder, mounts, shutil.rmtree)


def _mount_points():
    """Every mount point of this process's view (``/proc/self/mountinfo``'s fifth field,
    its octal escapes undone)."""
    import re

    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return frozenset()
    fields = [line.split(" ") for line in lines]
    escape = re.compile(r"\\([0-7]{3})")
    return frozenset(escape.sub(lambda match: chr(int(match.group(1), 8)), f[4]) for f in fields if len(f) > 4)


def _empty(folder, mounts, rmtree):
    """Remove what ``folder`` holds, but not a mount point in it nor the folders leading to
    one: a folder the sandbox shows under the host's /tmp (a checkout or virtualenv there)
    is read-only, and walking it to fail at every file would cost every call."""
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for name in entries:
        path = os.path.join(folder, name)
        if path in mounts:
            continue
        if any(mount.startswith(path + "/") for mount in mounts):
            _empty(path, mounts, rmtree)
        elif os.path.isdir(path) and not os.path.islink(path):
            rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def _others_alive(me):
    """Whether a process of this user other than ``me`` is still in this PID namespace."""
    uid = str(os.getuid())
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:  # status names the real uid even of a process that is not dumpable
            with open(f"/proc/{name}/status", encoding="ascii", errors="replace") as handle:
                line = next((line for line in handle if line.startswith("Uid:")), "")
        except OSError:
            continue  # gone meanwhile
        if line.split()[1:2] == [uid]:
            return True
    return False


def _fork():
    """``os.fork``, tried again for a while when the user's process limit is reached: the
    processes of the last job may still be on their way out."""
    give_up = time.monotonic() + 5
    while True:
        try:
            return os.fork()
        except BlockingIOError:
            if time.monotonic() > give_up:
                raise
            time.sleep(0.01)


def run_job(job, roots, pytest, sha256):
    """Fork one child per shard, let them run once every one has said hello, collect and
    judge their messages; the report of the whole job."""
    deadline = time.monotonic() + float(job["timeout_s"])
    shards = []
    for shard in job["shards"]:
        shard = {**shard, "args": [_place(arg, roots) for arg in shard["args"]]}
        result_r, result_w = os.pipe()
        log_r, log_w = os.pipe()
        go_r, go_w = os.pipe()
        pid = _fork()
        if pid == 0:
            for other in shards:
                for fd in (other["result"], other["log"], other["go"]):
                    os.close(fd)
            for fd in (result_r, log_r, go_w, 0):
                os.close(fd)
            if job.get("cpu_s"):
                import resource

                resource.setrlimit(resource.RLIMIT_CPU, (int(job["cpu_s"]), int(job["cpu_s"])))
            os._exit(_child(shard, result_w, log_w, go_r, pytest, sha256, roots.get("{grade}")))
        for fd in (result_w, log_w, go_r):
            os.close(fd)
        shards.append({"pid": pid, "result": result_r, "log": log_r, "go": go_w, "lines": [], "buffer": b"",
                       "tail": b"", "timed_out": False})  # fmt: skip
    # Every child says hello (hands over its key) before any of them imports the agent's
    # code, so no graded code can stop a sibling from saying it.
    for shard in shards:
        _read_line(shard, deadline)
    for shard in shards:
        try:
            os.write(shard["go"], b"g")
        except OSError:
            pass
        os.close(shard["go"])
    _collect(shards, deadline)
    report = {"id": job.get("id"), "shards": [], "outcomes": {}, "observations": {}}
    for shard in shards:
        _, status = os.waitpid(shard["pid"], 0)
        verdict = _judge(shard["lines"], sha256)
        verdict.update(
            exit=os.waitstatus_to_exitcode(status),
            timed_out=shard["timed_out"],
            log=shard["tail"].decode("utf-8", "replace"),
        )
        report["outcomes"].update(verdict.pop("outcomes"))
        report["observations"].update(verdict.pop("observations"))
        report["shards"].append(verdict)
    return report


def _relay(job, child):
    """One of the agent's calls in a forked child (``child(out_fd)`` returns its exit
    status): the agent's own tests (``kind: visible``), as ``python -m pytest ARGS`` in the
    working folder would run them, its configuration, conftest files and plugins counting
    (they are the agent's business); or a command (``kind: command``) exec'd as the
    sandbox would start it cold. The reply is the exit status and the combined output:
    the parent keeps the first and last ``max_bytes // 2`` bytes of it; past ``hard_bytes``
    or the deadline the child's process group is killed (and then every process of the
    user, by the sweep that follows each job). The call ends when the child does, as a
    cold sandbox ends with its command: what its leftover processes still hold open is
    not waited for (the sweep kills them)."""
    import base64

    deadline = time.monotonic() + float(job["timeout_s"])
    out_r, out_w = os.pipe()
    pid = _fork()
    if pid == 0:
        os.close(out_r)
        os._exit(child(out_w))
    os.close(out_w)
    try:
        exited = os.pidfd_open(pid)  # readable once the child has ended
    except (AttributeError, OSError):
        exited = None  # no pidfd here: the child is polled
    half, hard = max(int(job["max_bytes"]) // 2, 1), int(job["hard_bytes"])
    out = {"head": bytearray(), "tail": bytearray(), "total": 0}

    def feed(chunk):
        """Keep what is shown of ``chunk``; True once the hard limit is passed."""
        out["total"] += len(chunk)
        if len(out["head"]) < half:
            take = half - len(out["head"])
            out["head"] += chunk[:take]
            chunk = chunk[take:]
        if chunk:
            out["tail"] += chunk
            del out["tail"][:-half]
        return out["total"] > hard

    killed, status, ended, reading = None, None, False, True
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            killed = "timeout"
            break
        watched = ([out_r] if reading else []) + ([exited] if exited is not None else [])
        ready = select.select(watched, [], [], remaining if exited is not None else min(remaining, 0.02))[0]
        if exited is not None:
            ended = exited in ready
        else:
            reaped, code = os.waitpid(pid, os.WNOHANG)
            status, ended = (code, True) if reaped == pid else (None, False)
        if reading and out_r in ready and not ended:
            chunk = os.read(out_r, 65536)
            if not chunk:
                reading = False  # its output is closed: now wait for it to end
            elif feed(chunk):
                killed = "output"
                break
        if ended:
            # All it wrote is in the pipe already; leftovers may hold the pipe open for ever.
            os.set_blocking(out_r, False)
            try:
                while reading and (chunk := os.read(out_r, 65536)) and not feed(chunk):
                    pass
            except BlockingIOError:
                pass
            break
    if killed:
        _kill(pid)
    else:  # it ended: what it left running in its group ends with it, as in a cold sandbox
        _kill_group(pid)
    os.close(out_r)
    if exited is not None:
        os.close(exited)
    if status is None:
        _, status = os.waitpid(pid, 0)
    return {"id": job.get("id"), "exit": os.waitstatus_to_exitcode(status), "killed": killed, "total": out["total"],
            "head": base64.b64encode(bytes(out["head"])).decode(), "tail": base64.b64encode(bytes(out["tail"])).decode()}  # fmt: skip


def _call_io(job, out_fd):
    """A call's child: stdin empty, stdout and stderr into the parent's pipe, the call's
    CPU-time limit."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    for fd in (null, out_fd):
        os.close(fd)
    if job.get("cpu_s"):
        import resource

        resource.setrlimit(resource.RLIMIT_CPU, (int(job["cpu_s"]), int(job["cpu_s"])))


def _visible_child(job, out_fd, pytest):
    """``python -m pytest`` in this forked child: the working folder first on the path, the
    arguments as given, output to the parent's pipe; the exit status pytest's own."""
    os.setpgid(0, 0)
    _call_io(job, out_fd)
    sys.stdin = open(0, encoding="utf-8", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)
    sys.path.insert(0, os.getcwd())
    sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py"), *job["args"]]
    try:
        code = int(pytest.main())
        sys.stdout.flush()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int) and exc.code is not None:
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - what the interpreter does with an uncaught exception
        import traceback

        traceback.print_exc()
        code = 1
    try:
        import atexit

        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - the status is pytest's, whatever the cleanup did
        pass
    return code & 0xFF


def _command_child(job, out_fd):
    """Exec ``job["argv"]`` in this forked child as a cold sandbox run starts a command: a
    session of its own, stdin empty, stdout and stderr into the parent's pipe, the signals
    Python ignores back at their defaults, the sandbox's environment without the keys
    the warm process alone has (``unset``), its own CPU-time limit. Returns only when the
    exec fails (127, as a shell says for a command not found)."""
    os.setsid()
    _call_io(job, out_fd)
    for name in ("SIGPIPE", "SIGXFSZ", "SIGXFZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    environment = {key: value for key, value in os.environ.items() if key not in job.get("unset", ())}
    argv = list(job["argv"])
    try:
        os.chdir(job.get("cwd") or os.getcwd())
        os.execvpe(argv[0], argv, environment)
    except OSError as exc:
        os.write(2, f"{argv[0]}: {exc.strerror}\n".encode("utf-8", "replace"))
    return 127


def _place(arg, roots):
    for token, root in roots.items():
        arg = arg.replace(token, root)
    return arg


def _no_dump():
    """PR_SET_DUMPABLE 0: no process of the same uid may ptrace this one or open its
    /proc files (mem, fd). Best effort where prctl cannot be reached."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _collect(shards, deadline):
    """Read every child's result and log pipes until they close or the deadline passes;
    at the deadline the children's process groups are killed."""
    owner = {}
    for shard in shards:
        owner[shard["result"]] = (shard, "result")
        owner[shard["log"]] = (shard, "log")
    while owner:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            for shard in shards:
                if shard["result"] in owner or shard["log"] in owner:
                    shard["timed_out"] = True
                    _kill(shard["pid"])
            for fd in list(owner):
                os.close(fd)
            return
        ready, _, _ = select.select(list(owner), [], [], remaining)
        for fd in ready:
            shard, kind = owner[fd]
            chunk = os.read(fd, 65536)
            if not chunk:
                del owner[fd]
                os.close(fd)
                continue
            if kind == "log":
                shard["tail"] = (shard["tail"] + chunk)[-_LOG_TAIL:]
                continue
            shard["bytes"] = shard.get("bytes", 0) + len(chunk)
            if shard["bytes"] > _RESULT_CAP:
                shard["lines"].append(b"flooded")  # fails verification: counted as forged
                _kill(shard["pid"])
                del owner[fd]
                os.close(fd)
                continue
            data = shard["buffer"] + chunk
            *lines, shard["buffer"] = data.split(b"\n")
            shard["lines"].extend(lines)


def _read_line(shard, deadline):
    """Block until the first line of a child's result pipe (or its end, or the deadline)."""
    while b"\n" not in shard["buffer"]:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([shard["result"]], [], [], remaining)[0]:
            return
        chunk = os.read(shard["result"], 65536)
        if not chunk:
            return
        shard["buffer"] += chunk
    line, shard["buffer"] = shard["buffer"].split(b"\n", 1)
    shard["lines"].append(line)


def _kill(pid):
    for target in (-pid, pid):
        try:
            os.kill(target, signal.SIGKILL)
        except OSError:
            pass


def _kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def _judge(lines, sha256):
    """Verify one child's messages and turn them into outcomes (test id relative to the
    tests folder -> [status, message]) plus what the run says about itself."""
    verdict = {"hello": False, "done": None, "alarm": None, "integrity": [], "forged": [], "notes": [], "dropped": [],
               "outcomes": {}, "observations": {}}  # fmt: skip
    if not lines or not lines[0].startswith(b"hello "):
        return verdict
    key = bytes.fromhex(lines[0][6:].decode("ascii", "replace").strip() or "00")
    verdict["hello"] = True
    calls, reports, collected, subtests = {}, {}, {}, {}
    for raw in lines[1:]:
        body, _, mac = raw.rpartition(b"\t")
        if not body or sha256(key + body).hexdigest().encode() != mac:
            verdict["forged"].append("a message on the result pipe did not come from the harness")
            continue
        kind, *fields = body.decode("utf-8", "replace").split("\x1f")
        if verdict["done"] is not None and kind != "alarm":
            verdict["forged"].append(f"a {kind} message came after the run ended")
        elif kind == "call" and len(fields) == 3:
            nodeid, status, message = fields
            if nodeid in calls:
                verdict["forged"].append(f"{nodeid} was reported twice")
            calls[nodeid] = (status, message)
        elif kind == "report" and len(fields) == 4:
            nodeid, when, outcome, message = fields
            if when in reports.setdefault(nodeid, {}):
                verdict["forged"].append(f"the {when} of {nodeid} was reported twice")
            reports[nodeid][when] = (outcome, message)
        elif kind == "collect" and len(fields) == 2:
            collected[fields[0]] = fields[1]
        elif kind == "observe" and len(fields) == 4 and fields[2].isdigit():
            nodeid, module, point, text = fields
            verdict["observations"].setdefault(_relative(nodeid), []).append([module, int(point), text])
        elif kind == "subtest" and len(fields) == 2:
            subtests.setdefault(fields[0], fields[1])
        elif kind == "note":
            verdict["notes"].extend(fields)
        elif kind == "dropped":
            verdict["dropped"].extend(fields)
        elif kind == "forged":
            verdict["forged"].extend(fields)
        elif kind == "integrity":
            verdict["integrity"].extend(f for f in fields if f)
        elif kind == "alarm":
            verdict["alarm"] = fields[0] if fields else "alarm"
        elif kind == "done" and fields:
            verdict["done"] = int(fields[0])
        else:
            verdict["forged"].append(f"an unknown message kind {kind!r}")
    outcomes = verdict["outcomes"]
    for nodeid, message in collected.items():
        outcomes[_relative(nodeid)] = ["error", message]
    for nodeid in {*calls, *reports}:
        phases = reports.get(nodeid, {})
        call = calls.get(nodeid)
        said = phases.get("call", (None, ""))[0]
        if call is None and said == "passed":
            verdict["forged"].append(f"{nodeid} passed without the harness seeing it run")
        if call is not None and call[0] != "passed" and said == "passed":
            verdict["forged"].append(f"{nodeid} raised but was reported as passed")
        failed = [(when, m) for when, (o, m) in phases.items() if o == "failed"]
        if phases.get("setup", ("passed",))[0] == "failed":
            outcomes[_relative(nodeid)] = ["error", phases["setup"][1]]
        elif call is None:
            status = "skipped" if any(o == "skipped" for o, _ in phases.values()) else "missing"
            outcomes[_relative(nodeid)] = [status, ""]
        elif call[0] != "passed":
            outcomes[_relative(nodeid)] = [call[0], call[1]]
        elif failed:
            outcomes[_relative(nodeid)] = ["error" if failed[0][0] != "call" else "failed", failed[0][1]]
        elif nodeid in subtests:
            outcomes[_relative(nodeid)] = ["failed", "a subtest failed: " + subtests[nodeid]]
        else:
            outcomes[_relative(nodeid)] = ["passed", ""]
    return verdict


def _relative(nodeid):
    return nodeid[len("tests/"):] if nodeid.startswith("tests/") else nodeid


# -- sealed judging: what a probe sends -----------------------------------------------------
# (``stamina_gym.grading.seal`` compiles the probes and judges what they send; this side
# only turns values into plain data. It runs beside the graded code, so nothing here is
# trusted: a forger may send whatever it likes, and earns what it guesses.)

_ENCODE_DEPTH, _ENCODE_ITEMS, _ENCODE_TEXT = 32, 100_000, 1 << 20


class _TooBig(Exception):
    pass


def _exact_number(value):
    """A ``Fraction`` or ``Decimal`` (or a subclass, by its base value) as plain data, else
    None. Only where the graded code has imported the module: nothing is imported here."""
    fractions, decimal = sys.modules.get("fractions"), sys.modules.get("decimal")
    if fractions is not None and isinstance(value, fractions.Fraction):
        fraction = fractions.Fraction
        return {"q": [str(int(fraction.numerator.fget(value))), str(int(fraction.denominator.fget(value)))]}
    if decimal is not None and isinstance(value, decimal.Decimal):
        return {"dec": decimal.Decimal.__str__(value)}
    return _exact_time(value)


def _exact_time(value):
    """A ``datetime``, ``date``, ``time`` or ``timedelta`` (or a subclass, by its base
    value: its fields read from the C type, never from a property the subclass defines) as
    plain data, else None; an aware value carries its UTC offset in microseconds (None
    when its ``tzinfo`` fails to give one)."""
    dt = sys.modules.get("datetime")
    if dt is None or not isinstance(value, (dt.date, dt.time, dt.timedelta)):
        return None
    field = (lambda kind, name: next(k.__dict__[name] for k in kind.__mro__ if name in k.__dict__).__get__(value))
    if isinstance(value, dt.timedelta):
        return {"td": [field(dt.timedelta, "days"), field(dt.timedelta, "seconds"), field(dt.timedelta, "microseconds")]}
    if isinstance(value, dt.datetime):
        kind, names = dt.datetime, ("year", "month", "day", "hour", "minute", "second", "microsecond")
    elif isinstance(value, dt.date):
        return {"date": [field(dt.date, name) for name in ("year", "month", "day")]}
    else:
        kind, names = dt.time, ("hour", "minute", "second", "microsecond")
    fields = [field(kind, name) for name in names]
    if field(kind, "tzinfo") is not None:
        try:
            offset = kind.utcoffset(value)  # the tzinfo's own method: it may be the graded code's
            fields.append(None if offset is None else int(dt.timedelta.__truediv__(offset, dt.timedelta(microseconds=1))))
        except Exception:  # noqa: BLE001 - a tzinfo that fails: the value then equals nothing
            fields.append("?")
    return {"dt" if kind is dt.datetime else "time": fields}


def _set_members(value, budget):
    """The members of a set of the graded code's own class (a ``collections.abc.Set``, as
    marshmallow's ``OrderedSet`` is), by its own iteration, else None. Such a set equals a
    builtin set when their members do (``Set.__eq__``), so the host compares members; the
    set's own ``__eq__`` is never called, and one whose iteration fails equals nothing. Only
    where the graded code has imported ``collections.abc``: nothing is imported here."""
    abc = sys.modules.get("collections.abc")
    if abc is None or not isinstance(value, abc.Set):
        return None
    members = []
    try:
        for member in value:
            budget[0] -= 1
            if budget[0] < 0:
                raise _TooBig
            members.append(member)
    except _TooBig:
        raise
    except Exception:  # noqa: BLE001 - the set's own iteration failed
        return None
    return members


def _encode(value, _depth=0, _budget=None):
    """``value`` as plain JSON data that ``seal.decode`` reads: builtins by exact type, a
    subclass of a builtin by its base value, a ``Fraction`` or ``Decimal`` by its value, a
    set of the graded code's own class by its members,
    any other object as its class's names up the MRO and its truth. Bounded in depth, items and text (``_TooBig`` past them)."""
    budget = [_ENCODE_ITEMS, _ENCODE_TEXT] if _budget is None else _budget
    budget[0] -= 1
    if _depth > _ENCODE_DEPTH or budget[0] < 0:
        raise _TooBig
    inner = (lambda item: _encode(item, _depth + 1, budget))
    kind = type(value)
    if value is None or kind is bool:
        return value
    for base in (bool, int, float, str, bytes, bytearray, list, tuple, set, frozenset, dict):
        if isinstance(value, base):
            break
    else:
        exact = _exact_number(value)
        if exact is not None:
            return exact
        members = _set_members(value, budget)
        if members is not None:
            return {"s": [inner(item) for item in members]}
        try:
            truth = bool(value)
        except Exception:  # noqa: BLE001 - the object's own __bool__ failed
            truth = True
        return {"obj": [f"{c.__module__}.{c.__qualname__}" for c in kind.__mro__], "truth": truth}
    if base is int:
        number = int.__index__(value)
        return number if -(1 << 53) < number < (1 << 53) else {"i": str(number)}
    if base is float:
        return {"f": repr(float.__float__(value))}
    if base is str:
        text = str.__str__(value)
        budget[1] -= len(text)
        if budget[1] < 0:
            raise _TooBig
        return text
    if base in (bytes, bytearray):
        import base64

        data = bytes(value)
        budget[1] -= len(data)
        if budget[1] < 0:
            raise _TooBig
        return {"b": base64.b64encode(data).decode("ascii")}
    if base is dict:
        return {"d": [[inner(key), inner(item)] for key, item in list(dict.items(value))]}
    tag = {list: "l", tuple: "t", set: "s", frozenset: "fs"}[base]
    return {tag: [inner(item) for item in list(base.__iter__(value))]}


class _ProbeRaises:
    """What ``with _stamina_observe.raises(N) as info:`` is: it swallows an exception as
    ``pytest.raises`` would (``info.value`` is the exception) and sends what was raised,
    or that nothing was. The judge decides whether it was the one expected. With
    ``base`` it also swallows the ``BaseException``s a test can expect (``SystemExit``)."""

    def __init__(self, point, sink, base=False):
        self.point, self.sink, self.base = point, sink, base
        self.value = self.type = self.tb = None

    def __enter__(self):
        return self

    # What tests read of pytest's ExceptionInfo besides value, type and tb; checked here,
    # in the sandbox, as pytest would (an open check).
    @property
    def typename(self):
        return self.type.__name__

    @property
    def exception(self):  # what unittest's assertRaises context gives
        return self.value

    def errisinstance(self, kind):
        return isinstance(self.value, kind)

    def match(self, pattern):
        import re

        if re.search(pattern, str(self.value)) is None:
            raise AssertionError(f"the raised message does not match {pattern!r}")
        return True

    def __exit__(self, kind, exc, tb):
        if kind is None:
            self.sink(self.point, {"raised": None})
            return False
        caught = (Exception, SystemExit, KeyboardInterrupt, GeneratorExit) if self.base else Exception
        if not issubclass(kind, caught):
            return False  # a skip, an exit, an interrupt: not what a raises block catches
        self.value, self.type, self.tb = exc, kind, tb
        try:
            message = str(exc)[:_MESSAGE_CAP]
        except Exception:  # noqa: BLE001 - a message that cannot be read matches no pattern
            message = ""
        self.sink(self.point, {"raised": [f"{c.__module__}.{c.__qualname__}" for c in kind.__mro__], "msg": message})
        return True


def _probe_module(sink, made=None, guarded=None, module=None):
    """The ``_stamina_probe`` module a probe imports: ``bind(key)`` gives the module whose
    key that is its ``observe(N, value)`` and ``raises(N)``, each handing ``(key, N, JSON
    text)`` to ``sink``; a value past the bounds is sent as ``{"over": true}``, which
    fails its test. Code that drops what a probe observes can pass a check in a loop or a
    branch, so the path is guarded: the functions ``bind`` gives hold their state in
    default arguments only (no closure cell, which a write raises no audit event for), their
    ids go into ``guarded`` (the audit hook ends the run on a write to their defaults or
    code), and each is recorded in ``made`` with the module globals it went into, which
    ``_probes_changed`` checks. (``module``: the module object to fill, made before.)"""
    import json
    import types

    module = types.ModuleType("_stamina_probe") if module is None else module

    def bind(key, _sink=sink, _made=made, _guarded=guarded, _frame=sys._getframe, _encode=_encode, _big=_TooBig,
             _dumps=json.dumps, _raises=_ProbeRaises, _id=id):  # fmt: skip
        def emit(point, data, _key=key, _sink=_sink, _dumps=_dumps):
            # Plain data of exact types only (``_encode`` makes nothing else): no code of
            # the graded module runs in the sink, which sends.
            _sink(_key, point, _dumps(data, ensure_ascii=True, separators=(",", ":")))

        def observe(point, value, _emit=emit, _encode=_encode, _big=_big):
            try:
                encoded = _encode(value)
            except (_big, RecursionError):
                encoded = {"over": True}
            _emit(point, encoded)

        def raises(point, base=False, _emit=emit, _raises=_raises):
            return _raises(point, _emit, base)

        if _made is not None:
            _guarded.update((_id(emit), _id(observe), _id(raises)))
            _made.append((_frame(1).f_globals, observe, raises))
        return observe, raises

    module.bind = bind
    return module


def _probes_changed(made, store, module, methods):
    """How the probes' path was changed since ``bind`` made it: a probe module whose
    observer is not the one it was given, a grading module that observes through something
    ``bind`` did not give it (a ``_stamina_probe`` put in its place), the module replaced,
    or ``_ProbeRaises`` (whose methods ``methods`` recorded) rebound."""
    changed = []
    given = set()
    for namespace, observe, raises in made:
        given.add(id(namespace))
        if namespace.get("_stamina_observe") is not observe or namespace.get("_stamina_raises") is not raises:
            changed.append(f"the probe of {namespace.get('__name__')!s:.100} observes through another function")
    for _, prints in list(store.values()):
        label, namespace, _ = prints[0]
        if "_stamina_observe" in namespace and id(namespace) not in given:
            changed.append(f"{label} observes through what the harness did not give it")
    if sys.modules.get("_stamina_probe") is not module:
        changed.append("_stamina_probe was replaced")
    for name, value in methods.items():
        if _ProbeRaises.__dict__.get(name) is not value:
            changed.append(f"_ProbeRaises.{name} was rebound")
    return changed


# -- the child ------------------------------------------------------------------------------


def _child(shard, result_fd, log_fd, go_fd, pytest, sha256, grade=None):
    """Run one shard's tests; returns the exit status. Nothing of the agent's has been
    imported when this starts."""
    os.setpgid(0, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False, buffering=1)
    sys.stderr = sys.stdout
    key = os.urandom(32)
    os.write(result_fd, b"hello " + key.hex().encode() + b"\n")
    send, senders = _signer(result_fd, key, sha256)
    del key
    if os.read(go_fd, 1) != b"g":
        return 1
    os.close(go_fd)
    plugin, finish = _arm(send, senders, shard, pytest, grade)
    del send, senders  # no frame below the tests holds the signer, who may use it, or the hook's switch
    sys.argv = ["pytest"]
    try:
        code = int(pytest.main(list(shard["args"]), plugins=[plugin]))
    except BaseException as exc:  # noqa: BLE001 - whatever the graded code raised, the run ends here
        finish(3, f"pytest.main raised {_describe(exc)[1]}")
        return 0
    finish(code, "")
    return 0


def _arm(send, senders, shard, pytest, grade):
    """Build the plugin and install the audit hook; returns the plugin and ``finish(code,
    note)``, which sends the note and ``done`` once. The signer and the hook's switch stay
    in default arguments (an audited read), never in a frame the tests run above."""
    import types

    armed = [False]
    support = _support_code(os.path.join(grade, "support")) if grade else {}
    made, guarded = [], set()  # the probes' functions and where they went; what the hook guards
    probe = types.ModuleType("_stamina_probe")  # filled in below, once the plugin's sink exists
    plugin, ours, observed, watched = _plugin(send, armed, frozenset(shard.get("keep") or ()), bool(shard.get("keep")), pytest,
                                     support, bool(shard.get("report_dropped")), os.path.join(grade, "") if grade else "",
                                     (made, probe, dict(_ProbeRaises.__dict__)))  # fmt: skip
    _probe_module(observed, made, guarded, probe)
    guarded.update(map(id, [*ours, probe.bind, *watched]))  # watched: the import hook's objects

    def finish(code, note, _send=send, _ended=[False], _type=type, _int=int, _str=str):
        if _ended[0]:
            return
        _ended[0] = True
        if note:
            _send("note", note)
        _send("done", _str(code) if _type(code) is _int else "3")

    _imports_from_sources()
    hook, hooked = _audit_hook(send, armed, guarded, grade)
    guarded.add(id(finish))
    codes = [function.__code__ for function in (*ours, finish, hook) if function is not send]
    senders.update(codes)
    hooked.update(codes)  # a function made of these, or these run by exec, is tampering
    sys.addaudithook(hook)
    sys.modules["_stamina_probe"] = probe  # what the staged probes observe through
    return plugin, finish


def _signer(fd, key, sha256):
    """``send(kind, *fields)``, which signs with ``key``, and the set of code objects that
    may call it (``_arm`` fills it with the harness's own): a message sent from any other
    code, a graded function that found the signer in a frame, is signed as forgery."""
    callers = set()

    def send(kind, *fields, _fd=fd, _key=key, _sha=sha256, _write=os.write, _type=type, _text=str,
             _frame=sys._getframe, _callers=callers):  # fmt: skip
        # Fields are exact strings: nothing of the graded code (a __str__) runs while this
        # frame, which holds the key, is on the stack.
        if _frame(1).f_code not in _callers:
            kind, fields = "forged", ("a message was sent from outside the harness",)
        parts = [kind]
        cap = _OBSERVATION_CAP if kind == "observe" else _MESSAGE_CAP
        for field in fields:
            text = (field if _type(field) is _text else "(not text)")[:cap]
            parts.append(text.replace("\n", "\\n").replace("\t", " ").replace("\x1f", " "))
        body = "\x1f".join(parts).encode("utf-8", "replace")
        _write(_fd, body + b"\t" + _sha(_key + body).hexdigest().encode() + b"\n")

    return send, callers


def _plugin(send, armed, keep, filtering, pytest, support, report_dropped=False, grade="", probes=None):
    """The harness's pytest plugin: a module object of hook functions whose state sits in
    their default arguments (reading those is an audited event). ``support`` is what
    ``_support_code`` read of the task's test support; with ``report_dropped`` the tests
    collected but not kept are named (``dropped``), for a validator. Every module of the
    grading folder (``grade``: hidden test modules, their helpers, the support) has its
    functions and classes fingerprinted as soon as a test module is collected, and
    compared after collection and at the end: a helper a test calls cannot be rebound."""
    import types
    import unittest

    from _pytest.outcomes import Skipped
    from _pytest.unittest import TestCaseFunction

    state = {"snapshot": None}
    hidden = {}  # the grading modules' prints, by module name
    imports, import_kinds = _grading_imports(hidden, grade)

    def pytest_collection(session, _state=state, _armed=armed, _fingerprint=_fingerprint, _imports=imports,
                          _grade=grade, _insert=sys.meta_path.insert, _resolve=_resolve_lazy_names):  # fmt: skip
        _resolve()  # the watched modules pytest imported since the parent's
        _state["snapshot"] = _fingerprint()  # configured, and not one test module imported yet
        if _grade:
            _insert(0, _imports)
        _armed[0] = True

    functions = {}

    def pytest_collection_modifyitems(session, config, items, _keep=keep, _filtering=filtering, _base=_base_id,
                                      _functions=functions, _unwrap=_unwrap, _send=send, _report=report_dropped):  # fmt: skip
        if _filtering:
            chosen = [item for item in items if _base(item.nodeid) in _keep]
            dropped = [item for item in items if _base(item.nodeid) not in _keep]
            if dropped:
                config.hook.pytest_deselected(items=dropped)
            if _report:
                for name in dict.fromkeys(_base(item.nodeid) for item in dropped):
                    _send("dropped", name)
            items[:] = chosen
        for item in items:
            _functions[id(item)] = (item, _unwrap(getattr(item, "obj", None)))

    #: Which harness functions may call ``before`` and ``after`` (filled in below).
    callers = {"before": set(), "after": set()}

    def pytest_make_collect_report(collector, _state=state, _hidden=hidden, _grade=grade, _take=_take_hidden_prints):
        yield
        if _state["snapshot"] is not None and _grade:
            _take(_hidden, _grade, collector)

    def probes_changed(_hidden=hidden, _probes=probes, _changed=_probes_changed):
        return _changed(_probes[0], _hidden, _probes[1], _probes[2]) if _probes else []

    def pytest_collection_finish(session, _state=state, _send=send, _diff=_changed, _support=support,
                                 _check=_support_changed, _prints=_support_prints, _hidden=hidden,
                                 _rebound=_callables_rebound, _probes=probes_changed):  # fmt: skip
        if _state["snapshot"] is not None:
            _send("integrity", *_diff(_state["snapshot"]), *_check(_support), *_rebound(_hidden), *_probes())
            _state["support"] = _prints(_support)

    def pytest_sessionfinish(session, _state=state, _send=send, _diff=_changed, _support=support,
                             _check=_support_changed, _hidden=hidden, _rebound=_callables_rebound,
                             _probes=probes_changed):  # fmt: skip
        if _state["snapshot"] is not None:  # before pytest unconfigures (and undoes its own patches)
            _send("integrity", *_diff(_state["snapshot"]), *_check(_support), *_diff(_state.get("support") or ()),
                  *_rebound(_hidden), *_probes())  # fmt: skip

    running = {"item": None}
    #: The test whose setup, call or teardown is under way, and what it may still send.
    current = {"nodeid": "", "left": 0, "shard": _OBSERVED_PER_SHARD, "over": False}

    def pytest_runtest_setup(item, _current=current, _left=_OBSERVED_PER_TEST):
        _current["nodeid"], _current["left"], _current["over"] = item.nodeid, _left, False

    def observed(key, point, text, _send=send, _current=current, _type=type, _str=str, _int=int, _overhead=_MESSAGE_OVERHEAD):
        """Send one probe observation, tagged with the test under way (the sink of
        ``_probe_module``). Anything but what ``bind`` makes is dropped. Past what a test
        may send, ``{"over": true}`` is sent once, which fails the test, nothing more is
        sent for it, and the test is stopped as a failing ``assert`` would stop it: an
        ``assert False`` in a loop over an iterator that never ends (tinydb's
        ``LRUCache`` before its fix) observes without raising, and its observations had
        filled the result pipe, which voided an honest run as forged."""
        if _type(key) is not _str or _type(point) is not _int or _type(text) is not _str:
            return
        size = len(text) + len(key) + len(_current["nodeid"]) + _overhead
        _current["left"] -= size
        _current["shard"] -= size
        if _current["left"] >= 0 and _current["shard"] >= 0:
            _send("observe", _current["nodeid"], key, _str(point), text)
            return
        if not _current["over"]:
            _current["over"] = True
            _send("observe", _current["nodeid"], key, _str(point), '{"over":true}')
        raise AssertionError("the test observed more than a test may send")

    def before(item, _functions=functions, _send=send, _unwrap=_unwrap, _id=id, _running=running,
               _frame=sys._getframe, _callers=callers):  # fmt: skip
        """The test function to call, after checking it is the one collected, called by
        the harness's own hook; from now on ``item`` is the running test."""
        recorded = _functions.get(_id(item))
        if _frame(1).f_code not in _callers["before"]:
            _send("forged", "the harness's test call was started from outside the harness")
            return None
        function = item.obj
        if recorded is None or recorded[0] is not item or recorded[1] is not _unwrap(function):
            _send("forged", "a test function was replaced after collection")
        _running["item"] = item
        return function

    def after(item, status, message, _send=send, _running=running, _frame=sys._getframe, _callers=callers,
              _probes=probes_changed):  # fmt: skip
        """Send the running test's outcome, once, from the harness's own call of it: an
        outcome sent from anywhere else, or for a test that is not running, is forgery.
        The probes' path is checked as each test returns (a swap undone later is seen)."""
        if _frame(1).f_code not in _callers["after"] or _running["item"] is not item:
            _running["item"] = None
            _send("forged", "a test outcome was sent from outside the harness's call of it")
            return
        _running["item"] = None
        _send("call", item.nodeid, status, message)
        changed = _probes()
        if changed:
            _send("integrity", *changed)

    # While a test runs, this frame is below it: it holds only functions whose state sits
    # in their defaults (an audited read) and which check who calls them. What the test
    # raised is described here (its __str__ is the graded code's), not beside the signer.
    def pytest_pyfunc_call(pyfuncitem, _before=before, _after=after, _describe=_describe):
        function = _before(pyfuncitem)
        arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
        try:
            function(**arguments)
        except BaseException as exc:
            _after(pyfuncitem, *_describe(exc))
            raise
        _after(pyfuncitem, "passed", "")
        return True

    # A unittest test method is called by unittest's machinery, not by pytest_pyfunc_call:
    # the harness hands it a wrapper in the method's place, which sees the call itself.
    def pytest_runtest_call(item, _before=before, _after=after, _describe=_describe, _kind=TestCaseFunction,
                            _isinstance=isinstance):  # fmt: skip
        if not _isinstance(item, _kind):
            return
        method = _before(item)

        def called(_method=method, _item=item, _after=_after, _describe=_describe):
            try:
                _method()
            except BaseException as exc:
                _after(_item, *_describe(exc))
                raise
            _after(_item, "passed", "")

        called.__dict__.update(getattr(method, "__dict__", {}))  # unittest's skip and expected-failure marks
        item.obj = called

    # A subtest (unittest's subTest, pytest's subtests fixture) reports on its own, beside
    # its test's one call report: a failed one fails the test.
    try:
        from _pytest.subtests import SubtestReport
    except ImportError:  # an older pytest, which reports no subtests
        SubtestReport = ()

    def pytest_runtest_logreport(report, _send=send, _sub=SubtestReport, _isinstance=isinstance):
        if _isinstance(report, _sub):
            if report.outcome == "failed":
                _send("subtest", report.nodeid, _failure_text(report))
        elif report.when == "call" or report.outcome != "passed":
            _send("report", report.nodeid, report.when, report.outcome, _failure_text(report))

    def pytest_collectreport(report, _send=send):
        if report.outcome == "failed":
            _send("collect", report.nodeid, _failure_text(report))

    callers["before"].update((pytest_pyfunc_call.__code__, pytest_runtest_call.__code__))
    callers["after"].update((pytest_pyfunc_call.__code__, *(code for code in pytest_runtest_call.__code__.co_consts
                                                             if getattr(code, "co_name", None) == "called")))
    hooks = {name: value for name, value in locals().items() if name.startswith("pytest_")}
    hooks["pytest_sessionfinish"] = pytest.hookimpl(trylast=True)(hooks["pytest_sessionfinish"])
    hooks["pytest_make_collect_report"] = pytest.hookimpl(hookwrapper=True)(hooks["pytest_make_collect_report"])
    for name in ("pytest_collection_modifyitems", "pytest_collection_finish",
                 "pytest_runtest_logreport", "pytest_collectreport"):  # fmt: skip
        hooks[name] = pytest.hookimpl(hooks[name])
    for name in ("pytest_pyfunc_call", "pytest_collection", "pytest_runtest_call", "pytest_runtest_setup"):
        hooks[name] = pytest.hookimpl(tryfirst=True)(hooks[name])
    plugin = types.ModuleType("stamina_gym_harness_plugin")  # hashable, as old pluggy wants; not in sys.modules
    plugin.__dict__.update(hooks)
    return plugin, [*hooks.values(), send, before, after, observed, probes_changed], observed, [imports, *import_kinds]


def _unwrap(function, _method=type(_place.__get__(0))):
    """A bound method's function (pytest binds test methods to a fresh instance per test).
    By exact type: any other object's ``__func__`` is whatever its maker put there."""
    return function.__func__ if type(function) is _method else function


def _describe(exc):
    """``(status, message)`` of what a test raised. Its ``__str__`` is the graded code's:
    this runs in no frame that holds the signer."""
    import unittest

    from _pytest.outcomes import Skipped

    status = "skipped" if isinstance(exc, (Skipped, unittest.SkipTest)) else "failed"
    try:
        text = type(exc).__name__ + ": " + str(exc)[:300]
    except BaseException:  # noqa: BLE001 - a message that cannot be shown is no reason to stop
        text = "(an exception whose message could not be read)"
    return status, text


def _failure_text(report):
    """The last lines of a failure (where ImportError and friends are named)."""
    try:
        text = report.longreprtext
    except Exception:  # noqa: BLE001 - a report's repr is the graded code's output
        text = ""
    return text[-_MESSAGE_CAP:]


def _base_id(nodeid):
    head, bracket, _ = nodeid.partition("[")
    return _relative(head if bracket else nodeid)


def _audit_hook(send, armed, ours, grade=None):
    """Ends the child on events only tampering needs. Everything it uses is bound now, and
    it never calls into an object the graded code may have made (a ``__getattr__``, an
    ``__eq__``, a ``__class__`` property would run beside its switch): it looks at exact
    types only.

    Code objects made and swapped in are honest when they run what the function ran:
    ``types.coroutine`` marks a generator's code awaitable (``asyncio`` does so when
    imported), hypothesis gives a function another file name and line. A new code object
    passes when ``types.coroutine`` or hypothesis makes it (``_code_makers``) and its frame
    holds a function with the same bytecode and frame layout; a swap passes when
    only the code's name, place and coroutine flags differ (``_same_behaviour``). Hand-made
    bytecode, a swap of what a function runs, and a function made of the harness's own code
    (or that code run by ``exec``) end it. The harness's code objects go into the set the
    hook is made with, once they exist (``_arm``).

    A code object with no bytecode at all runs nothing: ``whatever``'s placeholders carry
    one as a description of their arguments (funcy reads it). Making one passes; making a
    function of it or running it ends the child.

    Code is never made from bytes once the tests may run: ``marshal`` builds a code object
    from whatever bytecode its input holds, with no ``code.__new__`` event. The import
    system compiles sources, or reads a pyc the graded code cannot have written
    (``_imports_from_sources``). Any other ``marshal.loads`` is refused (an error raised in
    its caller), and ends the child where the data holds code: the event carries a copy of
    the input, which another thread may rewrite before the load itself reads it, so data
    that looked harmless is refused too. ``marshal.load`` reads a file the hook cannot see,
    and is refused except where pytest's ``_read_pyc`` reads a pyc of the read-only grading
    folder, the env's own rewriting of the hidden tests."""
    import marshal

    codes = set()
    grade = os.path.realpath(grade) + os.sep if grade else None
    try:
        from _pytest.assertion.rewrite import _read_pyc

        reader = _read_pyc.__code__
    except ImportError:  # another pytest: no pyc of the grading folder is read
        reader = None

    def hook(event, args, _send=send, _armed=armed, _ours=ours, _codes=codes, _makers=_code_makers(), _bad=_BAD_EVENTS,
             _id=id, _type=type, _str=str, _exit=os._exit, _frame=sys._getframe, _same=_same_behaviour,
             _remade=_remade_from_local, _code=type(_place.__code__), _bytes=bytes, _loads=marshal.loads,
             _holds=_holds_code, _reader=reader, _grade=grade, _pyc=_grading_pyc, _refused=_REFUSED,
             _file=(io.BufferedReader, io.FileIO), _loaders=_LOADERS):  # fmt: skip
        if not _armed[0]:
            return
        reason = None
        if event == "code.__new__" and (_type(args[0]) is _bytes and not args[0] or _remade(args, _frame(1), _makers)):
            return
        if event == "marshal.load":
            if _pyc(_frame(1), _reader, _grade, _file):
                return
            raise ValueError(_refused)
        if event == "marshal.loads" and _frame(1).f_code not in _loaders:
            try:  # the look raises this event again, from this frame, which passes (``_LOADERS``)
                held = _holds(_loads(args[0]), _code)
            except Exception:  # noqa: BLE001 - what marshal cannot read, it cannot make code of
                held = False
            if not held:  # refused all the same: its input may be a buffer another thread rewrites
                raise ValueError(_refused)  # between this look and the load
            reason = "code made from bytes (marshal.loads)"
        name = args[1] if len(args) > 1 and _type(args[1]) is _str else None
        if event == "object.__setattr__" and name == "__code__" and _same(args[0], args[2]):
            return
        if event in _bad:
            reason = event
        elif event.startswith("ctypes.") and event != "ctypes.dlopen":
            reason = event
        elif event.startswith("object.__"):
            if args and _id(args[0]) in _ours:
                reason = f"{event} on the harness ({name or ''})"
            elif event == "object.__setattr__" and name == "__code__":
                reason = "a function's code was swapped"
        elif event in ("function.__new__", "exec") and args and args[0] in _codes:
            reason = f"{event} of the harness's own code"
        elif event in ("function.__new__", "exec") and args and _type(args[0]) is _code and not args[0].co_code:
            reason = f"{event} of code with no bytecode"
        elif event == "open" and args and _type(args[0]) is _str and args[0].startswith("/proc/"):
            if "/mem" in args[0]:
                reason = f"opened {args[0]}"
        if reason is not None:
            _armed[0] = False
            try:
                _send("alarm", reason)
            finally:
                _exit(ALARM_EXIT)

    _LOADERS.add(hook.__code__)
    return hook, codes


#: Code flags a swap may change: a generator marked awaitable (types.coroutine).
_FREE_FLAGS = 0x100


def _holds_code(value, code_type):
    """``value``, as ``marshal`` made it (builtin containers only), is or holds a code object."""
    stack = [value]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is code_type:
            return True
        if kind in (tuple, list, set, frozenset):
            stack.extend(value)
        elif kind is dict:
            stack.extend(value.keys())
            stack.extend(value.values())
    return False


def _grading_pyc(frame, reader, grade, file_types):
    """The frame calling ``marshal.load`` is pytest's ``_read_pyc`` reading a file of the
    grading folder: the file the kernel says its descriptor is, never a name the graded
    code could have made."""
    if reader is None or grade is None or frame.f_code is not reader:
        return False
    handle = frame.f_locals.get("fp")
    if type(handle) is not file_types[0] or type(handle.raw) is not file_types[1]:
        return False
    try:
        return _opened(handle.raw.fileno()).startswith(grade)
    except OSError:
        return False


def _imports_from_sources():
    """From now on the import system compiles a module from its source, and reads a pyc
    only where the graded code cannot have put it (``_system_pyc``: root's file in root's
    folder, which this unprivileged process may not write: the standard library's, the
    installed packages'), through the loader's own bound functions, whose ``marshal.loads``
    is one the audit hook lets make code (``_LOADERS``). Any other pyc, beside a
    module or without a source, would be code made from bytes. Modules imported before the
    tests run keep their code."""
    import marshal
    from importlib import machinery

    compiled = machinery.SourceFileLoader.get_code

    class SourceOnly(machinery.SourceFileLoader):
        def get_code(self, fullname, _compiled=compiled, _system=_system_pyc, _loads=marshal.loads):
            data = _system(self.path)
            if data is None:
                return _compiled(self, fullname)  # never reads a pyc: path_stats refuses
            return _loads(data)

        def path_stats(self, path):
            raise OSError("a pyc is read only from where the graded code cannot write")

    _LOADERS.add(SourceOnly.get_code.__code__)
    hook = machinery.FileFinder.path_hook((machinery.ExtensionFileLoader, machinery.EXTENSION_SUFFIXES),
                                          (SourceOnly, machinery.SOURCE_SUFFIXES))  # fmt: skip
    sys.path_hooks[:] = [hook if getattr(each, "__name__", "") == "path_hook_for_FileFinder" else each
                         for each in sys.path_hooks]  # fmt: skip
    sys.path_importer_cache.clear()


#: The code whose ``marshal.loads`` the audit hook lets through: the import hook's loader,
#: of root's pycs (``_imports_from_sources``), and the hook's own look at marshal's input.
_LOADERS = set()


def _opened(fd, _readlink=os.readlink):
    """The path the kernel says descriptor ``fd`` is open on: never a name the graded code
    could have made."""
    return _readlink(f"/proc/self/fd/{fd}")


def _system_pyc(source, _open=io.open_code, _cache=cache_from_source, _magic=MAGIC_NUMBER, _stat=os.stat,
                _fstat=os.fstat, _opened=_opened, _access=os.access, _writable=os.W_OK, _uid=os.geteuid,
                _dirname=os.path.dirname, _str=str, _type=type, _int=int, _flags=b"\0\0\0\0"):  # fmt: skip
    """The marshalled code of ``source``'s timestamp pyc when the file the kernel opened and
    its folder belong to root, this process is not root and may write neither (a file of
    the graded code's own, made read-only, is still its own: it could have written any
    bytes there), and the pyc is of this interpreter and of the source as it is; else None.
    Whatever names the path, only such a file is read."""
    if _type(source) is not _str or _uid() == 0:
        return None
    try:
        handle = _open(_cache(source))
    except (OSError, ValueError, NotImplementedError):
        return None
    with handle:
        try:
            real = _opened(handle.fileno())
            if _fstat(handle.fileno()).st_uid != 0 or _stat(_dirname(real)).st_uid != 0:
                return None
            if _access(real, _writable) or _access(_dirname(real), _writable):
                return None
            header, stat = handle.read(16), _stat(source)
            if (header[:4] != _magic or header[4:8] != _flags
                    or _int.from_bytes(header[8:12], "little") != _int(stat.st_mtime) & 0xFFFFFFFF
                    or _int.from_bytes(header[12:16], "little") != stat.st_size & 0xFFFFFFFF):  # fmt: skip
                return None
            return handle.read()
        except OSError:
            return None


def _same_behaviour(function, code, _function=type(_place), _code=type(_place.__code__), _flags=_FREE_FLAGS):
    """``code`` runs what ``function``'s code runs: only its name, file, lines and the
    awaitable mark differ. Exact types only: nothing of the graded code runs here."""
    if type(function) is not _function or type(code) is not _code:
        return False
    old = function.__code__
    fields = ("co_code", "co_consts", "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_argcount",
              "co_posonlyargcount", "co_kwonlyargcount", "co_nlocals", "co_stacksize", "co_exceptiontable")  # fmt: skip
    if any(getattr(old, name, None) != getattr(code, name, None) for name in fields):
        return False
    return (old.co_flags | _flags) == (code.co_flags | _flags)


def _resolve_lazy_names():
    """Bind, before any graded code runs, the names a watched module lists in ``__all__``
    but makes only when first read (a module ``__getattr__``, PEP 562): ``unittest``'s
    ``IsolatedAsyncioTestCase``, which imports ``unittest.async_case``, and ``pluggy``'s
    ``__version__``. Read later by an honest import (freezegun's, mock's), such a name was
    an attribute added to a watched module, which voided the run; bound now it is
    fingerprinted with the rest, and so is the module it came from."""
    import unittest  # noqa: F401 - every child's plugin imports it

    for name, module in list(sys.modules.items()):
        namespace = getattr(module, "__dict__", None)
        if not name.startswith(_WATCHED) or not isinstance(namespace, dict) or not callable(namespace.get("__getattr__")):
            continue
        names = namespace.get("__all__", ())
        for attr in [attr for attr in names if isinstance(attr, str) and attr not in namespace] if isinstance(names, (list, tuple)) else ():
            try:
                getattr(module, attr)
            except Exception:  # noqa: BLE001 - a name it cannot make: reading it later fails the same way
                pass


def _preload_code_makers():
    """Import hypothesis's code makers where hypothesis is installed, before any child runs
    graded code, so that the audit hook knows their code (``_code_makers``)."""
    import importlib

    for name in ("hypothesis.internal.reflection", "hypothesis.internal.lambda_sources"):
        try:
            importlib.import_module(name)
        except ImportError:
            return


def _code_makers():
    """The code objects that may copy a code object with new names: ``types.coroutine``'s
    and hypothesis's (``impersonate``, its lambda reprs) where hypothesis is already
    imported (the warm parent imports it when present). Read before the graded code runs."""
    import types

    found = [types.coroutine.__code__]
    for name in ("hypothesis.internal.reflection", "hypothesis.internal.lambda_sources"):
        module = sys.modules.get(name)
        if module is not None:
            found.extend(_codes_of(vars(module), types.FunctionType, types.CodeType))
    return frozenset(found)


def _remade_from_local(args, frame, makers, _function=type(_place), _code=type(_place.__code__), _flags=_FREE_FLAGS):
    """A ``code.__new__`` event (bytecode, file, name, argument counts, locals, stack size,
    flags) raised by one of ``makers`` (``_code_makers``) for bytecode some function in its
    frame's locals already runs, with its frame layout: a copy with new names, not new
    bytecode. The event does not show the new code's constants (a shorter tuple would let
    the copied bytecode read past its end), so no other code may copy code at all."""
    if len(args) < 9 or frame.f_code not in makers:
        return False
    bytecode, _, _, argcount, posonly, kwonly, nlocals, stacksize, flags = args[:9]
    for value in list(frame.f_locals.values()):
        code = value.__code__ if type(value) is _function else value if type(value) is _code else None
        if code is not None and code.co_code == bytecode and (
                code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_nlocals, code.co_stacksize
        ) == (argcount, posonly, kwonly, nlocals, stacksize) and (code.co_flags | _flags) == (flags | _flags):  # fmt: skip
            return True
    return False


def _codes_of(namespace, function_type, code_type):
    """Every code object of the functions a module's namespace holds (and of their methods
    in its classes, and of the functions nested in them), by exact type."""
    found, stack = [], []
    for value in list(namespace.values()):
        if type(value) is type:
            stack.extend(inner.__code__ for inner in list(vars(value).values()) if type(inner) is function_type)
        elif type(value) is function_type:
            stack.append(value.__code__)
    while stack:
        code = stack.pop()
        found.append(code)
        stack.extend(const for const in code.co_consts if type(const) is code_type)
    return found


def _fingerprint():
    """Identity of every attribute of the watched modules (pytest's, pluggy's, unittest's,
    the builtins) and of their classes."""
    prints = []
    for name, module in list(sys.modules.items()):
        if module is not None and name.startswith(_WATCHED):
            prints.extend(_prints_of(name, module))
    return tuple(prints)


def _prints_of(name, module):
    namespace = getattr(module, "__dict__", None)
    if namespace is None:
        return []
    prints = [(name, namespace, tuple(namespace), tuple(namespace.values()))]
    for attr, value in list(namespace.items()):
        if isinstance(value, type) and getattr(value, "__module__", None) == name:
            prints.append((f"{name}.{attr}", value.__dict__, tuple(value.__dict__), tuple(value.__dict__.values())))
    return prints


def _support_code(root):
    """What the task's test support under ``root`` defines, read and compiled from its
    files before anything of the agent's runs: module name -> (its file, name -> the code
    of each undecorated top-level function, ``Class.method`` -> each undecorated method's)."""
    import ast

    found = {}
    if not os.path.isdir(root):
        return found
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d.isidentifier())
        for name in sorted(files):
            if not name.endswith(".py") or not name[:-3].isidentifier():
                continue
            path = os.path.join(folder, name)
            parts = os.path.relpath(path, root)[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts.pop()
            if not parts:
                continue
            try:
                with open(path, "rb") as handle:
                    source = handle.read()
                tree = ast.parse(source, filename=path)
                module = compile(tree, path, "exec", dont_inherit=True)
            except (OSError, SyntaxError, ValueError):
                continue  # the module cannot import: its tests fail on their own
            codes = {code.co_name: code for code in module.co_consts if hasattr(code, "co_code")}
            expected = {}
            bound = _bindings(ast, tree.body)
            for node in tree.body:
                if bound.get(node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else "", 0) > 1:
                    continue  # the file rebinds or deletes the name itself: pytz's ``UTC = UTC()``, dateutil's ``del __get_gettz``
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.decorator_list and node.name in codes:
                    expected[node.name] = codes[node.name]
                elif isinstance(node, ast.ClassDef) and not node.decorator_list and node.name in codes:
                    inner = {code.co_name: code for code in codes[node.name].co_consts if hasattr(code, "co_code")}
                    for item in node.body:
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.decorator_list and item.name in inner:
                            expected[f"{node.name}.{_mangled(node.name, item.name)}"] = inner[item.name]
            found[".".join(parts)] = (path, expected)
    return found


def _mangled(owner, name):
    """The name a method is bound under in its class: ``__construct_byset`` of dateutil's
    ``rrule`` is ``_rrule__construct_byset`` (Python's private-name mangling)."""
    if name.startswith("__") and not name.endswith("__") and owner.strip("_"):
        return f"_{owner.lstrip('_')}{name}"
    return name


def _bindings(ast, body):
    """How often each name is bound or deleted by the module-level statements ``body``
    (``if``, ``try``, ``with`` and loop blocks included, not function or class bodies)."""
    counts = {}

    def count(name):
        counts[name] = counts.get(name, 0) + 1

    def targets(node):  # ``a``, ``a, b``, ``*a``: not ``a.b`` nor ``a[0]``, which leave ``a`` bound as it was
        if isinstance(node, ast.Name):
            count(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for element in node.elts:
                targets(element)
        elif isinstance(node, ast.Starred):
            targets(node.value)

    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            count(node.name)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                count(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                targets(target)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets(node.target)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                targets(target)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            targets(node.target)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    targets(item.optional_vars)
        for block in ("body", "orelse", "finalbody"):
            for name, times in _bindings(ast, getattr(node, block, None) or []).items():
                counts[name] = counts.get(name, 0) + times
        for handler in getattr(node, "handlers", None) or []:
            for name, times in _bindings(ast, handler.body).items():
                counts[name] = counts.get(name, 0) + times
    return counts


def _support_changed(support):
    """How the imported support modules differ from the task's: a module of that name
    from another file (the agent's, or made by hand), or a function or method whose code
    is not the one its file defines."""
    changed = []
    for name, (path, expected) in support.items():
        module = sys.modules.get(name)
        if module is None:
            continue  # not imported (yet)
        if getattr(module, "__file__", None) != path:
            changed.append(f"the support module {name} is not the task's ({getattr(module, '__file__', None)!r})")
            continue
        namespace = getattr(module, "__dict__", {})
        for qualified, code in expected.items():
            owner, _, attr = qualified.rpartition(".")
            holder = namespace if not owner else getattr(namespace.get(owner), "__dict__", {})
            value = holder.get(attr)
            value = getattr(value, "__func__", value)
            if getattr(value, "__code__", None) != code:
                changed.append(f"{name}.{qualified} is not the function the support file defines")
    return changed


def _support_prints(support):
    """``_fingerprint``'s prints of the imported support modules and their classes."""
    return tuple(print_ for name in support if sys.modules.get(name) is not None for print_ in _prints_of(name, sys.modules[name]))


def _grading_imports(store, grade):
    """A meta path finder the harness puts first on ``sys.meta_path`` as collection starts,
    and its loader class. A module from the grading folder (``grade``) found by any finder
    behind it loads through the loader, which fingerprints the module (``_print_module``,
    into ``store``) the moment its own code has run: graded code that imported it first
    and rebound a helper (a name bound to a bound method, which no file defines) is seen.
    A grading module that appears without that print was imported around this finder
    (``_take_hidden_prints`` marks it, and ``_callables_rebound`` says so).

    The loader a ``GradingLoader`` wraps is never on the instance: it sits in ``loaders``,
    which only the harness's functions hold (in their defaults, whose reading the audit hook
    ends the child for). Graded code that patches the class (which raises no audit event)
    cannot hand the real method a loader of its own to run first, nor a loader it made: the
    print then never comes, and the module counts as imported around the hook."""
    loaders = {}  # id of a GradingLoader -> (it, the loader it wraps): the instance is kept, so the id is never reused

    def wrapped(loader, _loaders=loaders, _id=id):
        """The loader ``loader`` wraps (ImportError for one the harness did not make)."""
        entry = _loaders.get(_id(loader))
        if entry is None or entry[0] is not loader:
            raise ImportError("a grading module's loader the harness did not make")
        return entry[1]

    class GradingLoader:
        __slots__ = ()

        def create_module(self, spec, _wrapped=wrapped):
            return _wrapped(self).create_module(spec)

        def exec_module(self, module, _store=store, _print=_print_module, _namespace=type(sys).__dict__["__dict__"].__get__,
                        _wrapped=wrapped):  # fmt: skip
            inner = _wrapped(self)
            try:
                inner.exec_module(module)
            finally:  # a module whose code raised stays in sys.modules too (pytest leaves it there)
                if issubclass(type(module), type(sys)):
                    name = _namespace(module).get("__name__")
                    if type(name) is str:
                        _print(_store, name, module, "imported")

        def __getattr__(self, name, _wrapped=wrapped):  # get_source, get_data, is_package...: the wrapped loader's
            try:
                inner = _wrapped(self)
            except ImportError:
                raise AttributeError(name) from None
            return getattr(inner, name)

    class GradingImports:
        __slots__ = ()

        def find_spec(self, name, path=None, target=None, _grade=grade, _loader=GradingLoader, _meta=sys.meta_path,
                      _package=_package_spec, _loaders=loaders, _id=id):  # fmt: skip
            for finder in list(_meta):
                find = None if finder is self else getattr(finder, "find_spec", None)
                spec = find(name, path, target) if find is not None else None
                if spec is not None:
                    break
            else:
                spec = _package(name, path, _grade)
                if spec is None:
                    return None
            origin = getattr(spec, "origin", None)
            if type(origin) is str and origin.startswith(_grade) and getattr(spec, "loader", None) is not None:
                loader = _loader()
                _loaders[_id(loader)] = (loader, spec.loader)
                spec.loader = loader
            return spec

        def invalidate_caches(self):
            pass

    return GradingImports(), (GradingImports, GradingLoader, wrapped, GradingLoader.create_module, GradingLoader.exec_module,
                              GradingLoader.__getattr__, GradingImports.find_spec)  # fmt: skip


def _package_spec(name, path, grade):
    """The spec of a grading package that pytest (``--import-mode=importlib``) asks for by
    its own folder (``path`` is ``[<the package's folder>]``), which no path finder finds
    there: pytest would load its ``__init__.py`` by file, around the import hook."""
    import importlib.util

    if not (isinstance(path, list) and len(path) == 1 and isinstance(path[0], str) and path[0].startswith(grade)):
        return None
    folder = path[0]
    init = os.path.join(folder, "__init__.py")
    if os.path.basename(folder.rstrip(os.sep)) != name.rpartition(".")[2] or not os.path.isfile(init):
        return None
    return importlib.util.spec_from_file_location(name, init, submodule_search_locations=[folder])


def _print_module(store, name, module, how, _namespace=type(sys).__dict__["__dict__"].__get__):
    """Fingerprint a grading module's callables (functions, classes, bound methods,
    anything callable) and its classes' members into ``store`` under ``name`` (once);
    ``how`` says when: ``imported`` (as its code finished) or ``late`` (first seen after)."""
    import types

    members = (types.FunctionType, staticmethod, classmethod, property)
    namespace = _namespace(module)
    prints = [(name, namespace, {a: v for a, v in list(namespace.items()) if callable(v)})]
    for attr, value in list(namespace.items()):
        if isinstance(value, type) and getattr(value, "__module__", None) == name:
            prints.append((f"{name}.{attr}", value.__dict__, {a: v for a, v in value.__dict__.items() if isinstance(v, members)}))
    store.setdefault(name, (how, prints))


def _take_hidden_prints(store, grade, collector=None, _namespace=type(sys).__dict__["__dict__"].__get__):
    """Fingerprint the callables and classes of every module from the grading folder
    (``grade`` ends with a separator) that is new: in ``sys.modules``, and the module
    ``collector`` (a pytest Module) imported, with the grading modules its globals hold,
    whatever ``sys.modules`` holds by then (graded code can put something else there).
    One the harness's loader did not print as it was imported is marked ``late``."""
    found = list(sys.modules.items())
    imported = getattr(collector, "__dict__", {}).get("_obj")  # set by pytest, not looked up by name
    if issubclass(type(imported), type(sys)):
        for module in (imported, *(v for v in list(_namespace(imported).values()) if issubclass(type(v), type(sys)))):
            found.append((_namespace(module).get("__name__"), module))
    seen = {id(prints[0][1]): how for how, prints in list(store.values())}  # a module under a second name
    for name, module in found:
        if not isinstance(name, str) or name in store or not str(_module_file(module) or "").startswith(grade):
            continue
        late = "imported" if name == "__main__" else "late"  # the harness itself, run as a script
        _print_module(store, name, module, seen.get(id(_namespace(module)), late))


def _module_file(module, _namespace=type(sys).__dict__["__dict__"].__get__):
    """A module's ``__file__`` read from its own namespace, so that a lazy module's
    ``__getattr__`` (six's moves import on any missing attribute, and may raise) never runs;
    None for an object in ``sys.modules`` that is no module (six 1.5 puts its lazy
    descriptors there): pytest imports the hidden tests as modules."""
    if issubclass(type(module), type(sys)):
        return _namespace(module).get("__file__")
    return None


def _callables_rebound(store, _namespace=type(sys).__dict__["__dict__"].__get__):
    """The callables and classes of the fingerprinted grading modules that are not the
    objects they were, those modules that ``sys.modules`` no longer holds under their names
    (a swap that hid a module from fingerprinting), and those imported around the harness's
    loader (``_grading_imports``)."""
    changed = []
    for name, (how, prints) in list(store.items()):
        held = sys.modules.get(name)
        if held is not None and not (issubclass(type(held), type(sys)) and _namespace(held) is prints[0][1]):
            changed.append(f"the grading module {name} was replaced in sys.modules")
        if how == "late":
            changed.append(f"the grading module {name} was imported around the harness's import hook")
    for _, prints in list(store.values()):
        for label, namespace, recorded in prints:
            for attr, old in recorded.items():
                if namespace.get(attr) is not old:
                    changed.append(f"{label}.{attr} was rebound")
    return changed


def _is_submodule(label, attr, value):
    """A package's submodule, bound in the package when first imported (``assertLogs``
    imports ``unittest._log``)."""
    return getattr(value, "__name__", None) == f"{label}.{attr}" and type(value).__name__ == "module"


def _changed(prints):
    """Labels of the fingerprinted namespaces whose attributes are not what they were."""
    changed = []
    for label, namespace, keys, values in prints:
        now = dict(namespace)
        for attr in set(now).symmetric_difference(keys) - _ADDED:
            if attr in now and (label in _GROWING or _is_submodule(label, attr, now[attr])):
                continue
            changed.append(f"{label}.{attr} was {'added' if attr in now else 'deleted'}")
        for attr, old in zip(keys, values):
            if attr in now and now[attr] is not old and f"{label}.{attr}" not in _MUTABLE and attr not in _IMPORT_METADATA:
                changed.append(f"{label}.{attr} was rebound")
    return changed


if __name__ == "__main__":
    sys.exit(main(sys.argv))
