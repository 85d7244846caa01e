"""A ``prometheus_client`` collector of a wheel's metrics: ``pip install
'timerwheel[prometheus]'``.

    from prometheus_client import REGISTRY, start_http_server
    from timerwheel.prometheus import WheelCollector

    REGISTRY.register(WheelCollector(wheel))   # or WheelCollector() for the default wheel
    start_http_server(9100, addr="127.0.0.1")

It gives what ``Wheel.metrics_text()`` gives, the exposition the library writes for every
interface (docs/metrics.md), parsed by prometheus_client: the same names, types, help
texts and histogram buckets. One collector per wheel and registry: two wheels' metrics
share their names.
"""

from typing import Iterator, Optional

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from ._default import default_wheel
from ._wheel import Wheel

__all__ = ["WheelCollector"]


class WheelCollector(Collector):
    """Collects the metrics of ``wheel`` (the shared default wheel when None) at each
    scrape. A closed wheel still gives its last figures."""

    def __init__(self, wheel: Optional[Wheel] = None) -> None:
        self._wheel = wheel

    def collect(self) -> Iterator[Metric]:
        """The wheel's metrics now, as prometheus_client's metric families."""
        wheel = self._wheel if self._wheel is not None else default_wheel()
        return text_string_to_metric_families(wheel.metrics_text())
