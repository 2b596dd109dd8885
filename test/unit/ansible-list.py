# ansible-inventory --list for many inventories in one Python process (the test's reference).
# Each job is one ansible-inventory command line; it runs ansible-core's own InventoryCLI (the
# code behind the ansible-inventory command, run() included) and its JSON output is written to
# the job's output file. Starting ansible-inventory costs ~1 s; hundreds of cases in one process
# cost a few seconds. Input (stdin): JSON [{"args": [...], "out": "/path"}]; stdout: one line per
# job, "ok" or the error.
import io
import json
import sys

from ansible.cli.inventory import InventoryCLI
from ansible.utils.context_objects import GlobalCLIArgs

jobs = json.load(sys.stdin)
results = []
for job in jobs:
    # the parsed command line is a process-wide singleton: forget the last job's
    GlobalCLIArgs._Singleton__instance = None
    cli = InventoryCLI(['ansible-inventory', *job['args'], '--list', '--output', job['out']])
    err = io.StringIO()
    old = sys.stderr
    sys.stderr = err
    try:
        try:
            cli.run()
        except SystemExit as e:
            if e.code not in (0, None):
                raise RuntimeError('exit %s' % e.code)
        results.append('ok')
    except Exception as e:  # noqa: BLE001 - every failure is reported to the test
        results.append('error: %s %s' % (type(e).__name__, e))
    finally:
        sys.stderr = old
    if err.getvalue().strip():
        results[-1] += ' | stderr: ' + err.getvalue().strip().replace('\n', ' ')[:400]
print(json.dumps(results))
