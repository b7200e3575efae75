"""TrainResult's staleness summary, on histories written by hand."""

from a3c_course.training.config import TrainConfig
from a3c_course.training.run_record import TrainResult


def loss(worker, staleness, rollouts):
    return {"kind": "loss", "worker": worker, "steps": 0, "elapsed_s": 0.0,
            "staleness": staleness, "rollouts": rollouts}  # fmt: skip


def test_the_mean_staleness_weighs_each_record_by_its_rollouts():
    result = TrainResult(TrainConfig(game="CartPole-v1", workers=2), [loss(0, 1.0, 3), loss(1, 2.0, 1)])
    assert result.mean_staleness() == (1.0 * 3 + 2.0 * 1) / 4


def test_the_steady_mean_leaves_out_the_records_before_every_worker_reported():
    # Worker 2 starts late: until then workers 0 and 1 see only each other's updates.
    history = [loss(0, 1.0, 5), loss(1, 1.0, 5), loss(0, 1.0, 5), loss(2, 2.0, 5),
               loss(0, 2.0, 4), {"kind": "episode", "worker": 1, "steps": 0, "elapsed_s": 0.0,
               "score": 1.0, "length": 9}, loss(1, 2.5, 4)]  # fmt: skip
    result = TrainResult(TrainConfig(game="CartPole-v1", workers=3), history)
    assert result.mean_staleness(steady=True) == (2.0 * 4 + 2.5 * 4) / 8
    assert result.mean_staleness() == (1.0 * 15 + 2.0 * 5 + 2.0 * 4 + 2.5 * 4) / 28
    short = TrainResult(TrainConfig(game="CartPole-v1", workers=3), history[:3])
    assert short.mean_staleness(steady=True) is None  # worker 2 never reported
    assert TrainResult(TrainConfig(game="CartPole-v1")).mean_staleness() is None


def test_training_score_is_machado_et_als_last_100_training_episodes_at_a_budget():
    """Against a hand count: episodes k = 0..249 finish at step 10 * k with score k."""
    from a3c_course.training.run_record import training_score

    history = [{"kind": "episode", "steps": 10 * k, "score": float(k)} for k in range(250)]
    history += [{"kind": "eval", "steps": 1_000, "mean": 99.0}, {"kind": "loss", "steps": 5}]
    assert training_score(history, 2_490) == sum(range(150, 250)) / 100  # the last 100
    assert training_score(history, 1_000) == sum(range(1, 101)) / 100  # those done by step 1,000
    assert training_score(history, 50) == sum(range(6)) / 6  # fewer than 100: all of them
    assert training_score(history, 50, window=2) == 4.5
    assert training_score([{"kind": "eval", "steps": 0, "mean": 1.0}], 10) is None
