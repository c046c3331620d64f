"""Started by Python in a test's child process (tests/clock.py `child_env`): travel to the test's instant.

With DOCKET_TEST_NOW unset this does nothing, so a process that inherits PYTHONPATH by chance runs as usual.
"""

import os

_now = os.environ.get("DOCKET_TEST_NOW")
if _now:
    from datetime import datetime

    import time_machine

    time_machine.travel(datetime.fromisoformat(_now), tick=True).start()
