"""Grading: turn what the hidden tests did into a grade. Pure: this package never imports
the sandbox or a task; it reads captured results.

In the order a submit uses them: ``stamina_gym.hidden_runner`` (above the sandbox, outside
this package) stages a copy of the work tree, the hidden tests and canaries
(``canaries.py`` plans them), each test module compiled by ``seal.py`` into a probe whose
points stay on the host, and starts ``harness.py`` in the sandbox; ``harness.py`` is the
program that runs there (it imports nothing of ours); its report comes back, the probes'
observations judged by ``seal.judge_run``, as a ``hidden.HiddenRun``, which ``cache.py``
may store and replay; ``grade.py`` turns it into a grade (pure, like the harness's
``_judge``).

Threat model
------------
The agent is paid for passing tests and writes the code the tests import, so its code runs
in the same interpreter as the tests that grade it. It can patch pytest, pluggy and the
standard library, rebind module and class attributes (no audit event is raised for that),
walk the stack, write to any file descriptor it finds, kill processes of its own uid, read
every file of the grading copy (the hidden tests and the harness included), and stop the
run whenever it likes. It cannot change the host, the trusted parent's memory, or what the
parent writes.

How an outcome reaches the grade
--------------------------------
* **Sealed judging** (``seal.py``): what a test expects never enters the sandbox. Each
  hidden module is staged as a probe, the test with its expectations taken out (``assert
  X == 5`` becomes ``observe(N, X)``; a parametrize table loses its expected column); the
  harness sends each observed value as plain data, tagged with the test under way, and the
  host fails a test the harness saw pass unless every observation meets its point and
  every point of the test's own body was reached as often as its place says (once straight
  in the body, once per item of a loop over the test's literal, at least once in a loop
  over the product's data). Code that forges observations earns only what it guesses;
  code that drops them (to pass a point under a branch) is caught by the check, as each
  test returns, that every probe observes through what ``bind`` gave it.
  Everything below still stands, for what the sandbox computes.
* The harness **parent** never imports a test module or anything of the agent's. It forks
  one **child** per shard, each with a result pipe, a log pipe (its stdout and stderr) and
  a go pipe. A child draws a random key and hands it to the parent (``hello``) before any
  child imports the agent's code; only then does the parent let them run. The parent is
  the only writer of the sandbox's stdout, where its report is the last line, and it is not
  dumpable, so no child can read its memory or open its descriptors.
* Every message a child sends is signed with its key (``sha256(key + body)``); the key
  lives in default arguments of harness functions, whose reading raises an audit event.
  The signer signs only when the harness's own code calls it (its caller's code object is
  checked): a graded function that finds it in a frame signs only its own forgery. A line
  that does not verify, a second message for one test, or a message after the end is
  proof of forgery. No frame below the tests holds the signer or the audit hook's switch,
  and neither the signer nor the hook ever calls into an object the graded code made (a
  ``__str__``, ``__eq__`` or ``__getattr__`` would run beside them): they test exact types.
* A test's outcome is what the harness's own ``pytest_pyfunc_call`` saw: it calls the
  test function (checked, by exact type, to be the one collected: an object carrying the
  real function in ``__func__`` is not it) and sends the result at once, so no later
  rewriting (an ``atexit`` hook, a patched report) can change it. An outcome is accepted
  only from that call, for the test that is running, once. pytest's own reports are sent
  beside it; a report that says passed where the harness saw the test raise, or a test
  reported without the harness seeing it, is proof of forgery.
* An **audit hook** (``sys.addaudithook``, which cannot be removed), installed before the
  first product import, ends the child on ctypes, ``gc`` heap walks, tracing hooks, hand
  made code objects (a copy of a code object is allowed to ``types.coroutine`` and
  hypothesis only: the event does not show the copy's constants, and a shorter tuple lets
  copied bytecode read past it), ``__code__`` swaps, functions made of the harness's own
  code, ``/proc/*/mem`` and any read of the harness's defaults. pytest's and pluggy's
  modules and classes are fingerprinted after configuration and compared after collection
  and at the end of the session, since rebinding an attribute raises no audit event.
* **Canaries** (``canaries.py``) catch what slips past all that: each shard has two
  modules of tests that must fail (several tests each, as real modules hold) and one test
  that must pass, written among the hidden tests with names, folders, modification times,
  planted pycs and source taken from the task's own tests. A must-fail canary that passes
  is proof of forgery. (A must-pass canary can be told by its shape; telling it gains a
  forger nothing, as it passes whatever the forger does.)

What each outcome pays
----------------------
Proof of forgery is the failure class ``violation`` and pays less than the worst honest
outcome of the turn (``RewardConfig.tamper``). A run that cannot be trusted but shows no
proof (the process exited early, was killed, timed out, hit a limit, or a must-pass canary
failed) counts every selected test as failed, full regression included: stopping the run
after forging its first tests, before a canary runs, pays nothing. A module that does not
import fails the tests that import it (``build``), and the regressions it causes count.
Only a sandbox that fails before the agent's code runs is ``infrastructure`` and voids the
sample.

Not defended
------------
* A forger that tells canaries from real tests by analysing their source (a must-fail
  canary ends with the negation of a real assertion) and forges only the others, through a
  path none of the checks above sees.
* Guessing. A forger that answers every point with a first guess (``True``, a status
  code, a small count, a value the test sent, an exception of every kind in a ``raises``
  block) passes every test whose points are all such, or open (computed in the sandbox);
  ``guess.py`` is one such forger, and ``scripts/seal_report.py`` counts per task what it
  passes and what a forger that always guessed right would. The
  graded code can also walk the stack (``logging.currentframe()``, then ``f_back`` and
  ``f_locals``, none audited) and change fixture values or a test module's globals in
  place, which can pass open points.
* Timing and other low-bandwidth channels out of the grading run.
"""

from pathlib import Path

#: The program that runs in the sandbox (it imports nothing of this package): each runner
#: copies it where the sandbox can read it.
HARNESS_PROGRAM = Path(__file__).with_name("harness.py")
