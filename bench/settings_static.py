"""Settings for bench/bench_static.py only: the production settings, collected into a temporary STATIC_ROOT."""

import os
from pathlib import Path

from config.settings import *  # noqa: F403

STATIC_ROOT = Path(os.environ["BENCH_STATIC_ROOT"])
