"""Settings for bench/bench_windows_api.py only: the production settings plus a URLconf with a bare view.

Never used by the app itself; the bare comparison view exists only under bench/urls.py.
"""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
