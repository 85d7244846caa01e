"""What an operator reads: the slow-callback counter, the last-minute view, the Prometheus
text and the prometheus_client collector, against ``stats()``."""

import time

import pytest

import timerwheel


def ran(wheel, sleeps):
    """Runs one callback per entry of ``sleeps`` (seconds each) on the manual ``wheel``."""
    for seconds in sleeps:
        wheel.call_later(0, time.sleep, seconds)
    time.sleep(0.003)
    assert wheel.poll() == len(sleeps)
    return wheel


# The thresholds are far above the quick callbacks' length: time.sleep(0) gives the CPU
# up, and on a loaded machine one took longer than a 5 ms threshold (2 slow callbacks
# counted of 1).
SLOW = 0.1


def test_slow_callbacks_are_counted_from_the_threshold():
    with timerwheel.Wheel(manual=True, slow_callback=SLOW) as watched:
        assert ran(watched, [0, SLOW + 0.01, 0.001, SLOW + 0.03]).stats()["slow_callbacks"] == 2
    with timerwheel.Wheel(manual=True) as unwatched:
        assert ran(unwatched, [0, 0.04]).stats()["slow_callbacks"] == 0
    with pytest.raises(ValueError, match="slow_callback"):
        timerwheel.Wheel(slow_callback=-1)
    assert timerwheel.defaults()["slow_callback"] is None


def test_a_recent_view_counts_since_the_start_while_the_wheel_is_younger():
    with timerwheel.Wheel(manual=True) as wheel:
        ran(wheel, [0, 0])
        minute = wheel.stats_recent()
        since_start = wheel.stats()
        assert set(minute) == set(since_start)
        assert minute["fired"] == 2 and minute["added"] == 2
        assert minute["span_ms"] <= since_start["span_ms"]
        assert minute["late_p50_us"] >= 3000
        for window in (0.5, 61, float("nan")):
            with pytest.raises(ValueError, match="window"):
                wheel.stats_recent(window)
        assert wheel.stats_recent(1)["fired"] == 2


def families(text):
    parser = pytest.importorskip("prometheus_client.parser")
    return {family.name: family for family in parser.text_string_to_metric_families(text)}


def test_the_text_parses_and_its_figures_are_the_stats():
    with timerwheel.Wheel(manual=True, slow_callback=SLOW) as wheel:
        ran(wheel, [0, 0, SLOW + 0.01])
        wheel.call_later(60, print)
        parsed = families(wheel.metrics_text())
        stats = wheel.stats()
    value = {name: family.samples[0].value for name, family in parsed.items()
             if family.type != "histogram"}
    assert value["timerwheel_timers_added"] == stats["added"] == 4
    assert value["timerwheel_timers_fired"] == stats["fired"] == 3
    assert value["timerwheel_timers_pending"] == stats["pending"] == 1
    assert value["timerwheel_slow_callbacks"] == stats["slow_callbacks"] == 1
    assert value["timerwheel_backlog"] == stats["queue_depth"]
    assert all(parsed[name].type == "counter" for name in value if name.endswith(
        ("added", "fired", "cancelled", "panics")))
    lateness = parsed["timerwheel_lateness_seconds"]
    assert lateness.type == "histogram"
    buckets = [(float(s.labels["le"]), s.value) for s in lateness.samples
               if s.name.endswith("_bucket")]
    bounds = [le for le, _ in buckets]
    assert bounds == sorted(bounds) and bounds[0] == 0.00005 and bounds[-2] == 10.0
    counts = [count for _, count in buckets]
    assert counts == sorted(counts), "cumulative"
    assert buckets[-1] == (float("inf"), 3)
    count = next(s.value for s in lateness.samples if s.name.endswith("_count"))
    assert count == stats["fired"]


def test_the_collector_serves_the_wheels_figures():
    pytest.importorskip("prometheus_client")
    from prometheus_client import CollectorRegistry, generate_latest

    from timerwheel.prometheus import WheelCollector

    with timerwheel.Wheel(manual=True) as wheel:
        registry = CollectorRegistry()
        registry.register(WheelCollector(wheel))
        ran(wheel, [0, 0])
        assert registry.get_sample_value("timerwheel_timers_fired_total") == 2
        assert registry.get_sample_value(
            "timerwheel_lateness_seconds_bucket", {"le": "+Inf"}) == 2
        text = generate_latest(registry).decode()
    assert families(text)["timerwheel_lateness_seconds"].type == "histogram"
    default = CollectorRegistry()
    default.register(WheelCollector())
    assert default.get_sample_value("timerwheel_workers") is not None
