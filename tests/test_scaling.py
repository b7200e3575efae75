"""The scaling model's arithmetic, against numbers worked out by hand."""

import pytest

from a3c_course.measure.scaling import ScalingModel

# 3 ms of server time per update (2 to apply, 1 to copy the weights), a 600 kB model, workers of
# 1,400 agent steps/s sending one update per 160 steps: 8.75 updates/s each.
MODEL = ScalingModel(
    apply_s=2e-3, reply_s=1e-3, model_bytes=600_000, worker_steps_per_s=1_400, steps_per_update=160
)


def test_one_server_saturates_at_the_smaller_of_its_two_limits():
    assert MODEL.updates_per_worker == pytest.approx(8.75)
    assert MODEL.compute_limit == pytest.approx(1 / 3e-3)  # 333.3 updates/s
    assert MODEL.network_limit(1.0) == pytest.approx(125e6 / 600_000)  # 208.3 updates/s
    # 1 Gbit/s: the link binds first; 10 Gbit/s: the server's own time does.
    assert MODEL.bottleneck(1.0) == "network" and MODEL.bottleneck(10.0) == "compute"
    assert MODEL.max_workers(1.0) == pytest.approx(208.333 / 8.75, rel=1e-4)  # 23.8
    assert MODEL.max_steps_per_s(1.0) == pytest.approx(208.333 * 160, rel=1e-4)  # 33,333
    assert MODEL.max_workers(10.0) == pytest.approx(333.333 / 8.75, rel=1e-4)  # 38.1
    assert MODEL.max_steps_per_s(10.0) == pytest.approx(333.333 * 160, rel=1e-4)  # 53,333


def test_shards_raise_both_limits_and_sparser_weights_only_the_compute_one():
    four_shards = MODEL.sharded(4)
    assert four_shards.compute_limit == pytest.approx(4 / 3e-3)
    assert four_shards.network_limit(1.0) == pytest.approx(4 * 125e6 / 600_000)
    sparse = MODEL.sending_weights_every(4)
    assert sparse.compute_limit == pytest.approx(1 / 2.25e-3)  # 444.4: a quarter of the copies
    assert sparse.network_limit(1.0) == MODEL.network_limit(1.0)  # the gradients still arrive
    assert sparse.max_workers(1.0) == MODEL.max_workers(1.0)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"apply_s": 0.0}, "apply_s must be positive, got 0.0"),
        ({"model_bytes": 0}, "model_bytes must be an integer >= 1, got 0"),
        ({"shards": 1.5}, "shards must be an integer >= 1, got 1.5"),
    ],
)
def test_bad_inputs_name_the_field(changes, message):
    values = dict(apply_s=1e-3, reply_s=1e-3, model_bytes=1, worker_steps_per_s=1.0)
    with pytest.raises(ValueError, match=message):
        ScalingModel(**{**values, "steps_per_update": 1, **changes})
    with pytest.raises(ValueError, match="gbit_per_s must be positive, got 0"):
        MODEL.network_limit(0)


def test_a_model_from_measured_costs_counts_a_rollout_of_every_environment():
    from a3c_course.training.config import TrainConfig

    costs = {"apply_s": 2e-3, "reply_s": 1e-3, "model_bytes": 600_000.0}
    model = ScalingModel.from_costs(costs, 1_400, TrainConfig(envs_per_worker=4, rollout_steps=5))
    assert model == ScalingModel(2e-3, 1e-3, 600_000, 1_400, steps_per_update=20)
    # with the server's time per push through Ray, Ray's part is what it spends beyond the two
    through_ray = ScalingModel.from_costs({**costs, "server_push_s": 7e-3}, 1_400, TrainConfig())
    assert through_ray.ray_s == pytest.approx(4e-3)


def test_rays_part_of_a_push_lowers_the_compute_limit_only():
    with_ray = ScalingModel(2e-3, 1e-3, 600_000, 1_400, steps_per_update=160, ray_s=2e-3)
    assert with_ray.compute_limit == pytest.approx(1 / 5e-3)  # 200 updates/s
    assert with_ray.network_limit(1.0) == MODEL.network_limit(1.0)  # 208.3: now the server binds
    assert with_ray.bottleneck(1.0) == "compute"
    assert with_ray.max_workers(1.0) == pytest.approx(200 / 8.75)  # 22.9
    # weights every 4th update save a quarter of the copies; Ray's part stays
    assert with_ray.sending_weights_every(4).compute_limit == pytest.approx(1 / 4.25e-3)
    with pytest.raises(ValueError, match="ray_s must be >= 0, got -1"):
        ScalingModel(2e-3, 1e-3, 600_000, 1_400, steps_per_update=160, ray_s=-1)
