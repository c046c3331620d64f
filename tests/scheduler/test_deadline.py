"""Every request of the scheduler package has one deadline for the whole answer (issue 27, point 3): to Docket, to
the Kubernetes API server and to Prometheus. A proxy that answers nothing, or trickles a byte at a time (which
never trips a per-read timeout), ends the request at its deadline with the program's own error."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from docket_scheduler.client import DocketClient, DocketError
from docket_scheduler.kube_api import KubeClient, KubeConfig, KubeError
from docket_scheduler.prometheus_usage import Prometheus, PrometheusError
from tests.allocations.fault_proxy import FaultProxy


@pytest.fixture
def proxy() -> Iterator[FaultProxy]:
    faulty = FaultProxy("http://127.0.0.1:9", trickle_s=0.2)  # never forwards in these modes
    yield faulty
    faulty.close()


CALLS: dict[str, tuple[type[Exception], Callable[[str], object]]] = {
    "docket": (DocketError, lambda url: DocketClient(url, "t", "atlas", timeout_s=0.5).fetch_windows()),
    "kubernetes": (KubeError, lambda url: KubeClient(KubeConfig(server=url, context=None), timeout_s=0.5)
                   .list("kueue.x-k8s.io/v1beta2", "ClusterQueue", label_selector="a=b")),
    "prometheus": (PrometheusError, lambda url: Prometheus(url, timeout_s=0.5).query_range("up", start=0, end=60,
                                                                                           step_s=60)),
}


@pytest.mark.parametrize("mode", ["stall", "trickle"])
@pytest.mark.parametrize("server", sorted(CALLS))
def test_a_request_ends_at_its_deadline_with_the_programs_error(proxy: FaultProxy, server: str, mode: str) -> None:
    error, call = CALLS[server]
    proxy.mode = mode
    with pytest.raises(error):
        call(proxy.url)
    assert [served_mode for served_mode, _method, _path in proxy.served] == [mode]
