"""benchmarks/ray_backend.py's report: the medians, their ratio and the scaling model, from the
measurements it is given (the measuring itself is trainer_speed's and measure_server_costs')."""

from types import SimpleNamespace

import pytest
from benchmark_scripts import load


@pytest.fixture(scope="module")
def ray_backend():
    return load("ray_backend")


def runs(speeds, staleness):
    return [{"steps_per_s": s, "staleness": t} for s, t in zip(speeds, staleness, strict=True)]


def test_the_report_gives_medians_their_ratio_and_where_one_server_saturates(ray_backend):
    result = {
        "date": "2026-12-06 13:00 UTC", "host": "a test host", "raw_before": 5_000, "raw_after": 5_100,
        "runs": {
            "hogwild-2": runs([3_000, 2_800, 3_100], [0.9, 1.0, 1.1]),
            "ray-2": runs([2_400, 2_000, 2_500], [1.0, 1.2, 0.8]),
        },
        "costs": {"apply_s": 2e-3, "reply_s": 1e-3, "round_trip_s": 8e-3, "server_push_s": 5e-3,
                  "model_bytes": 600_000},
    }  # fmt: skip
    args = SimpleNamespace(game="pong", workers=[2])
    report = ray_backend.table(args, result)
    assert "Raw emulator speed (2 processes): 5,000 -> 5,100 agent steps/s" in report
    # medians 3,000 and 2,400: Ray at 0.80 of Hogwild; spreads (3,100 - 2,800) / 3,000 and 500 / 2,400
    assert "| 2 | 3,000 (spread 10%) | 2,400 (spread 21%) | 0.80 | 1.00 | 1.00 |" in report
    assert (
        "round trip of one push on this machine 8.00 ms, of which the server's own CPU time 5.00 ms"
        in report
    )
    # the server: 2 ms to apply, 1 to copy, so 5 - 3 = 2 ms for Ray's part, 5 ms an update: 200 updates/s
    assert "2.00 ms to apply, 1.00 ms to copy, 2.00 ms for Ray's part" in report
    # a worker at 1,200 steps/s sends 7.5 updates/s of 160 steps; a 1 Gbit/s link carries 208.3 updates/s,
    # more than the server's 200: its time binds first, at 200 / 7.5 = 26.7 workers, 32,000 steps/s
    assert "a worker at 1,200 agent steps/s" in report and "7.5 updates/s each" in report
    assert "| one server | 1 Gbit/s | compute | 27 | 32,000 |" in report
