"""The actor-critic network: shapes, parameters, initialisation, recurrence, gradients, sampling.

References are computed independently of a3c_course.a3c.model: parameter counts from the layer
formulas, probabilities and entropies from torch.log_softmax by hand, per-sample forwards for the
batched one.
"""

import io
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from a3c_course.a3c.envs import make_env
from a3c_course.a3c.model import (
    COURSE_NETWORK,
    ORIGINAL_NETWORK,
    ActorCritic,
    greedy_action,
    reset_state_where,
    sample_action,
    standardize_frames,
)

PONG_ACTIONS = 6


@pytest.fixture(scope="module")
def pong_frames():
    """32 real preprocessed Pong frames (1, 42, 42), from random play, as one (32, 1, 42, 42) batch."""
    env = make_env("pong", seed=0)
    obs, _ = env.reset(seed=0)
    frames = []
    for _ in range(32 * 4):  # keep every fourth frame so that the batch is varied
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        frames.append(obs)
        if terminated or truncated:
            obs, _ = env.reset()
    env.close()
    batch = torch.from_numpy(np.stack(frames[::4]))
    assert batch.shape == (32, 1, 42, 42)
    return batch


@pytest.fixture
def model():
    torch.manual_seed(0)
    return ActorCritic((1, 42, 42), PONG_ACTIONS)


def random_state(batch_size, hidden_size=128, seed=1):
    generator = torch.Generator().manual_seed(seed)
    h = torch.rand(batch_size, hidden_size, generator=generator) * 2 - 1
    c = torch.randn(batch_size, hidden_size, generator=generator)
    return h, c


# ---------------------------------------------------------------- shapes


@pytest.mark.parametrize("batch_size", [1, 5, 32])
def test_output_shapes(model, pong_frames, batch_size):
    obs = pong_frames[:batch_size]
    out = model(obs, model.initial_state(batch_size))
    assert out.value.shape == (batch_size, 1)
    assert out.logits.shape == (batch_size, PONG_ACTIONS)
    h, c = out.state
    assert h.shape == c.shape == (batch_size, 128)
    for tensor in (out.value, out.logits, h, c):
        assert tensor.dtype == torch.float32 and torch.isfinite(tensor).all()


def test_the_conv_body_halves_42_down_to_3(model, pong_frames):
    # out = floor((in + 2 * padding - kernel) / stride) + 1, with kernel 3, stride 2, padding 1
    size, sizes = 42, []
    for _ in range(4):
        size = (size + 2 * 1 - 3) // 2 + 1
        sizes.append(size)
    assert sizes == [21, 11, 6, 3]

    x, seen = pong_frames[:2], []
    for layer in model.body:
        x = layer(x)
        if isinstance(layer, torch.nn.Conv2d):
            seen.append(tuple(x.shape[1:]))
    assert seen == [(16, s, s) for s in sizes]
    assert x.shape == (2, 16 * 3 * 3)
    assert model.lstm.input_size == 144


def test_initial_state_is_zero_and_h_c_are_separate_tensors(model):
    h, c = model.initial_state(3)
    assert h.shape == c.shape == (3, 128)
    assert not h.any() and not c.any()
    h += 1
    assert not c.any(), "h and c must not share memory"
    assert model.initial_state().__getitem__(0).shape == (1, 128)


def test_no_state_means_the_zero_state(model, pong_frames):
    obs = pong_frames[:4]
    with torch.no_grad():
        a = model(obs)
        b = model(obs, model.initial_state(4))
    torch.testing.assert_close(a.logits, b.logits, rtol=0, atol=0)
    torch.testing.assert_close(a.value, b.value, rtol=0, atol=0)


# ---------------------------------------------------------------- parameters


def conv_params(c_in, c_out, k):
    return c_out * c_in * k * k + c_out


def lstm_cell_params(n_in, n_hidden):
    # four gates (input, forget, cell, output), each with an input and a recurrent matrix and two biases
    return 4 * n_hidden * (n_in + n_hidden) + 2 * 4 * n_hidden


def linear_params(n_in, n_out):
    return n_out * n_in + n_out


@pytest.mark.parametrize(
    "network, counts, total",
    [
        (COURSE_NETWORK, (7_120, 140_288, 129, 774), 148_311),
        (ORIGINAL_NETWORK, (28_064, 559_104, 257, 1_542), 588_967),
    ],
)
def test_parameter_count_by_the_layer_formulas(network, counts, total):
    model = ActorCritic((1, 42, 42), PONG_ACTIONS, **network)
    f, hidden = network["conv_filters"], network["hidden_size"]
    conv = conv_params(1, f, 3) + 3 * conv_params(f, f, 3)
    lstm = lstm_cell_params(f * 3 * 3, hidden)
    critic = linear_params(hidden, 1)
    actor = linear_params(hidden, PONG_ACTIONS)
    assert (conv, lstm, critic, actor) == counts

    def count(module):
        return sum(p.numel() for p in module.parameters())

    assert count(model.body) == conv
    assert count(model.lstm) == lstm
    assert count(model.critic) == critic
    assert count(model.actor) == actor
    assert count(model) == conv + lstm + critic + actor == total
    # the LSTM holds most of the network: about 95 % of it
    assert count(model.lstm) / count(model) > 0.94


# ---------------------------------------------------------------- initialisation


def test_initial_policy_is_nearly_uniform(model, pong_frames):
    """The small actor init makes the first policy's entropy close to log(n_actions), on real frames."""
    state = model.initial_state(len(pong_frames))
    with torch.no_grad():
        for _ in range(3):  # also after a few recurrent steps, where h is no longer zero
            out = model(pong_frames, state)
            state = out.state
    log_p = torch.log_softmax(out.logits, dim=-1)
    entropy = -(log_p.exp() * log_p).sum(-1)
    assert entropy.max() <= math.log(PONG_ACTIONS) + 1e-6
    assert entropy.min() > math.log(PONG_ACTIONS) - 1e-3
    assert out.logits.abs().max() < 0.1
    # a uniform-ish policy, but the network is not constant: different frames give different outputs
    assert out.logits.std(0).max() > 0 and out.value.std() > 0


def test_small_actor_init_bounds_the_logits_for_any_lstm_output(model):
    """h = o * tanh(c) lies in (-1, 1)^128: with rows of norm 0.01 every logit stays below 0.12.

    On fresh frames h is small anyway; the small init is what keeps the policy nearly uniform when
    h is large (here the extreme corners of the LSTM's range).
    """
    hidden = model.hidden_size
    corners = torch.randint(0, 2, (1000, hidden), generator=torch.Generator().manual_seed(0)) * 2.0 - 1
    with torch.no_grad():
        logits = model.actor(corners)
    assert logits.abs().max() <= 0.01 * math.sqrt(hidden) + 1e-6
    log_p = torch.log_softmax(logits, dim=-1)
    entropy = -(log_p.exp() * log_p).sum(-1)
    assert entropy.min() > math.log(PONG_ACTIONS) - 0.02
    # with the critic's scale (norm 1) instead, the same h would give a far-from-uniform policy
    with torch.no_grad():
        big = torch.log_softmax(corners @ (model.actor.weight * 100).T, dim=-1)
    assert (-(big.exp() * big).sum(-1)).min() < 0.5 * math.log(PONG_ACTIONS)


def test_initial_policy_is_nearly_uniform_for_many_seeds(pong_frames):
    for seed in range(5):
        torch.manual_seed(seed)
        net = ActorCritic((1, 42, 42), PONG_ACTIONS)
        with torch.no_grad():
            probs = torch.softmax(net(pong_frames).logits, -1)
        assert (probs - 1 / PONG_ACTIONS).abs().max() < 0.01


def test_initial_weight_statistics(model):
    torch.testing.assert_close(
        model.actor.weight.norm(dim=1), torch.full((PONG_ACTIONS,), 0.01), rtol=1e-5, atol=0
    )
    torch.testing.assert_close(model.critic.weight.norm(dim=1), torch.ones(1), rtol=1e-5, atol=0)
    zero_biases = [
        model.actor.bias,
        model.critic.bias,
        model.lstm.bias_ih,
        model.lstm.bias_hh,
        *(m.bias for m in model.body if isinstance(m, torch.nn.Conv2d)),
    ]
    for bias in zero_biases:
        assert not bias.any()

    convs = [m for m in model.body if isinstance(m, torch.nn.Conv2d)]
    for conv in convs:
        c_out, c_in, kh, kw = conv.weight.shape
        bound = math.sqrt(6 / (c_in * kh * kw + c_out * kh * kw))  # Glorot uniform
        w = conv.weight
        assert w.abs().max() <= bound
        assert w.abs().max() > 0.95 * bound  # spread over the whole interval, not a narrower one
        assert abs(w.std().item() - bound / math.sqrt(3)) < 0.1 * bound / math.sqrt(3)

    # the LSTM keeps PyTorch's default uniform(-1/sqrt(hidden), 1/sqrt(hidden)) weights
    lstm_bound = 1 / math.sqrt(model.hidden_size)
    for w in (model.lstm.weight_ih, model.lstm.weight_hh):
        assert w.abs().max() <= lstm_bound and w.abs().max() > 0.99 * lstm_bound


def test_mlp_linear_layers_use_glorot_uniform():
    torch.manual_seed(0)
    net = ActorCritic((4,), 2, hidden_size=64)
    for layer in (m for m in net.body if isinstance(m, torch.nn.Linear)):
        fan_out, fan_in = layer.weight.shape
        bound = math.sqrt(6 / (fan_in + fan_out))
        assert layer.weight.abs().max() <= bound and layer.weight.abs().max() > 0.9 * bound
        assert not layer.bias.any()


# ---------------------------------------------------------------- recurrence


def test_recurrent_state_is_carried(model, pong_frames):
    """The same frame gives different outputs after some history than from a zero state."""
    obs = pong_frames[:4]
    with torch.no_grad():
        state = model.initial_state(4)
        for t in range(5):
            state = model(pong_frames[4 + 4 * t : 8 + 4 * t], state).state
        carried = model(obs, state)
        fresh = model(obs, model.initial_state(4))
    assert (carried.logits - fresh.logits).abs().max() > 1e-6
    assert (carried.value - fresh.value).abs().max() > 1e-4
    assert (carried.state[1] - fresh.state[1]).abs().max() > 1e-3
    # and the new state is not the old one
    assert (carried.state[0] - state[0]).abs().max() > 1e-3


def test_reset_state_where_zeroes_exactly_the_done_rows():
    h, c = random_state(4)
    for done in (
        torch.tensor([False, True, False, True]),
        np.array([False, True, False, True]),
        [False, True, False, True],
        torch.tensor([0.0, 1.0, 0.0, 1.0]),
    ):
        new_h, new_c = reset_state_where((h, c), done)
        for old, new in ((h, new_h), (c, new_c)):
            assert not new[[1, 3]].any()
            assert torch.equal(new[[0, 2]], old[[0, 2]])
    assert torch.equal(reset_state_where((h, c), torch.zeros(4, dtype=torch.bool))[0], h)
    assert not reset_state_where((h, c), torch.ones(4, dtype=torch.bool))[1].any()


def test_reset_state_where_keeps_the_graph_of_the_other_rows():
    h = torch.randn(3, 8, requires_grad=True)
    c = torch.randn(3, 8, requires_grad=True)
    new_h, new_c = reset_state_where((h, c), torch.tensor([True, False, False]))
    (new_h.sum() + new_c.sum()).backward()
    expected = torch.ones(3, 8)
    expected[0] = 0
    assert torch.equal(h.grad, expected) and torch.equal(c.grad, expected)


def test_reset_state_where_rejects_a_wrong_number_of_flags():
    with pytest.raises(ValueError, match="done must have shape \\(4,\\)"):
        reset_state_where(random_state(4), torch.tensor([True, False]))


def test_batched_forward_equals_per_sample_forwards(model, pong_frames):
    obs = pong_frames[:6]
    h, c = random_state(6)
    with torch.no_grad():
        batched = model(obs, (h, c))
        for i in range(6):
            single = model(obs[i : i + 1], (h[i : i + 1], c[i : i + 1]))
            torch.testing.assert_close(single.value, batched.value[i : i + 1])
            torch.testing.assert_close(single.logits, batched.logits[i : i + 1])
            torch.testing.assert_close(single.state[0], batched.state[0][i : i + 1])
            torch.testing.assert_close(single.state[1], batched.state[1][i : i + 1])


# ---------------------------------------------------------------- gradients and saving


def test_gradients_reach_every_parameter(model, pong_frames):
    # Two steps: from a zero state the recurrent matrix weight_hh gets no gradient on the first step.
    state = model.initial_state(4)
    loss = 0
    for t in range(2):
        out = model(pong_frames[4 * t : 4 * t + 4], state)
        state = out.state
        sample = sample_action(out.logits)
        loss = (
            loss + out.value.pow(2).mean() - sample.log_prob.mean() - 0.01 * sample.entropy.mean()
        )
    loss.backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None, f"{name} got no gradient"
        assert parameter.grad.abs().sum() > 0, f"{name} got a zero gradient"
        assert torch.isfinite(parameter.grad).all(), name


def test_state_dict_round_trip(model, pong_frames):
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    torch.manual_seed(123)
    other = ActorCritic((1, 42, 42), PONG_ACTIONS)
    state = random_state(8)
    with torch.no_grad():
        assert not torch.equal(
            other(pong_frames[:8], state).logits, model(pong_frames[:8], state).logits
        )
        other.load_state_dict(torch.load(buffer, weights_only=True))
        a, b = model(pong_frames[:8], state), other(pong_frames[:8], state)
    assert torch.equal(a.logits, b.logits) and torch.equal(a.value, b.value)
    assert torch.equal(a.state[0], b.state[0]) and torch.equal(a.state[1], b.state[1])
    assert list(model.state_dict()) == list(other.state_dict())


# ---------------------------------------------------------------- actions


def test_sample_action_log_prob_and_entropy_match_log_softmax():
    torch.manual_seed(0)
    logits = torch.tensor(
        [[0.0, 0.0, 0.0, 0.0], [2.0, -1.0, 0.5, 0.0], [50.0, 0.0, -50.0, 1.0], [1e4, 0.0, 0.0, 0.0]]
    )
    sample = sample_action(logits)
    assert sample.action.shape == sample.log_prob.shape == sample.entropy.shape == (4,)
    assert sample.action.dtype == torch.long
    log_p = torch.log_softmax(logits, dim=-1)
    torch.testing.assert_close(sample.log_prob, log_p.gather(1, sample.action[:, None]).squeeze(1))
    torch.testing.assert_close(sample.entropy, -(log_p.exp() * log_p).sum(-1))
    assert sample.entropy[0].item() == pytest.approx(math.log(4))
    assert torch.isfinite(sample.log_prob).all() and torch.isfinite(sample.entropy).all()
    assert sample.action[3] == 0  # a policy that is (numerically) sure


def test_sampled_actions_follow_the_policy():
    torch.manual_seed(0)
    probs = torch.tensor([0.1, 0.2, 0.3, 0.4])
    logits = probs.log().expand(100_000, 4)
    actions = sample_action(logits).action
    frequencies = torch.bincount(actions, minlength=4).float() / len(actions)
    # standard error sqrt(p (1 - p) / n) <= 0.0016: allow about 4 of them
    torch.testing.assert_close(frequencies, probs, atol=0.007, rtol=0)


def test_sample_action_gradient_flows_to_the_logits():
    logits = torch.randn(3, 5, requires_grad=True)
    sample = sample_action(logits)
    (sample.log_prob.sum() + sample.entropy.sum()).backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0


def test_greedy_action_picks_the_largest_logit_per_row():
    logits = torch.tensor([[0.1, 2.0, -1.0], [5.0, 4.9, 0.0], [-3.0, -2.0, -1.0]])
    assert torch.equal(greedy_action(logits), torch.tensor([1, 0, 2]))
    assert greedy_action(logits[:1]).shape == (1,)


# ---------------------------------------------------------------- vector observations


def test_mlp_variant_for_cartpole():
    env = make_env("CartPole-v1", seed=0)
    torch.manual_seed(0)
    net = ActorCritic.for_env(env)
    assert net.obs_shape == (4,) and net.n_actions == 2
    assert not any(isinstance(m, torch.nn.Conv2d) for m in net.modules())
    body_size = net.lstm.input_size
    hidden = net.hidden_size
    expected = (
        linear_params(4, body_size)
        + linear_params(body_size, body_size)
        + lstm_cell_params(body_size, hidden)
        + linear_params(hidden, 1)
        + linear_params(hidden, 2)
    )
    assert sum(p.numel() for p in net.parameters()) == expected

    observations = [env.reset(seed=0)[0]]
    for _ in range(7):
        observations.append(env.step(env.action_space.sample())[0])
    obs = torch.from_numpy(np.stack(observations))
    out = net(obs, net.initial_state(8))
    assert out.value.shape == (8, 1) and out.logits.shape == (8, 2)
    assert out.state[0].shape == (8, hidden)
    entropy = sample_action(out.logits).entropy
    assert entropy.min() > math.log(2) - 1e-3
    (out.value.sum() + out.logits.sum()).backward()
    assert all(p.grad is not None for p in net.body.parameters())


def test_for_env_picks_the_conv_body_for_frames():
    net = ActorCritic.for_env(make_env("breakout"))
    assert net.obs_shape == (1, 42, 42) and net.n_actions == 4 and net.hidden_size == 128
    assert (net.activation, net.conv_filters) == ("relu", 16)
    assert isinstance(net.body[0], torch.nn.Conv2d)


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "obs_shape",
    [(42, 42), (1, 1, 42, 42), (), (1, 0, 42), (-4,), (1.5,)],
)
def test_bad_obs_shape_is_rejected_clearly(obs_shape):
    with pytest.raises(ValueError, match="obs_shape must be"):
        ActorCritic(obs_shape, 6)


@pytest.mark.parametrize("n_actions", [0, -1, 2.5, True, None])
def test_bad_n_actions_is_rejected_clearly(n_actions):
    with pytest.raises(
        ValueError, match=f"n_actions must be a positive integer, got {n_actions!r}"
    ):
        ActorCritic((1, 42, 42), n_actions)


def test_bad_hidden_size_is_rejected_clearly():
    with pytest.raises(ValueError, match="hidden_size must be a positive integer, got 0"):
        ActorCritic((4,), 2, hidden_size=0)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"activation": "tanh"}, "activation must be one of 'relu', 'elu', 'leaky_relu', got 'tanh'"),
        ({"conv_filters": 0}, "conv_filters must be a positive integer, got 0"),
    ],
)
def test_bad_network_options_are_rejected_clearly(options, message):
    with pytest.raises(ValueError, match=message):
        ActorCritic((1, 42, 42), 6, **options)


@pytest.mark.parametrize("activation", ["relu", "elu", "leaky_relu"])
def test_the_conv_body_uses_the_chosen_activation_and_filters(pong_frames, activation):
    net = ActorCritic((1, 42, 42), 6, 32, activation=activation, conv_filters=16)
    convs = [m for m in net.body if isinstance(m, torch.nn.Conv2d)]
    assert [c.out_channels for c in convs] == [16] * 4 and net.lstm.input_size == 16 * 3 * 3
    reference = {
        "relu": torch.relu,
        "elu": torch.nn.functional.elu,
        "leaky_relu": lambda x: torch.where(x > 0, x, 0.01 * x),  # by hand
    }[activation]
    x = standardize_frames(pong_frames[:4])
    with torch.no_grad():
        for conv in convs:
            x = reference(conv(x))
        torch.testing.assert_close(net.body(standardize_frames(pong_frames[:4])), x.flatten(1))
    assert ActorCritic(**net.architecture).architecture == net.architecture


def test_numpy_integers_are_accepted():
    net = ActorCritic(tuple(np.array([1, 42, 42])), np.int64(6))
    assert net.obs_shape == (1, 42, 42) and net.n_actions == 6


def test_an_unbatched_observation_gets_a_helpful_error(model, pong_frames):
    with pytest.raises(ValueError, match=r"obs must have shape \(B, 1, 42, 42\).*unsqueeze"):
        model(pong_frames[0], model.initial_state(1))
    with pytest.raises(ValueError, match="got \\(2, 1, 84, 84\\)"):
        model(torch.zeros(2, 1, 84, 84))


def test_for_env_rejects_continuous_actions():
    env = gym.make("Pendulum-v1")
    with pytest.raises(ValueError, match="discrete action space"):
        ActorCritic.for_env(env)


# ---------------------------------------------------------------- frame standardisation


def test_standardize_frames_matches_numpy_per_frame_statistics(pong_frames):
    frames = pong_frames.numpy().astype(np.float64)
    mean = frames.mean(axis=(2, 3), keepdims=True)
    std = np.sqrt(frames.var(axis=(2, 3), keepdims=True) + 1e-8)
    expected = (frames - mean) / std
    np.testing.assert_allclose(standardize_frames(pong_frames).numpy(), expected, atol=1e-4)
    instance_norm = torch.nn.InstanceNorm2d(1, eps=1e-8)  # the library's equivalent
    torch.testing.assert_close(standardize_frames(pong_frames), instance_norm(pong_frames))


def test_standardized_pong_objects_stand_out_from_the_background(pong_frames):
    frame = pong_frames[-1:]
    background = frame.flatten().mode().values
    objects = frame != background
    assert objects.float().mean() < 0.05  # paddles and ball: a few percent of the screen
    scaled = standardize_frames(frame)
    assert scaled[~objects].abs().max() < 0.5  # the background lands near 0
    assert scaled[objects].abs().max() > 8.0  # the objects stand many standard deviations out
    assert (frame[objects] - background).abs().max() < 0.25  # while on the [0, 1] scale: < 0.25


def test_the_network_sees_a_frame_the_same_whatever_its_brightness_and_contrast(model, pong_frames):
    state = random_state(32)
    out = model(pong_frames, state)
    shifted = model(3.0 * pong_frames - 0.7, state)
    torch.testing.assert_close(shifted.logits, out.logits, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(shifted.value, out.value, atol=1e-5, rtol=1e-4)


def test_a_flat_frame_standardizes_to_zeros_not_nan():
    flat = torch.full((2, 1, 42, 42), 0.34)
    assert standardize_frames(flat).abs().max() < 1e-3


@pytest.mark.parametrize("batch", [1, 16, 5000])
def test_sample_action_is_torch_categorical_written_out(batch):
    """The reference: torch.distributions.Categorical, from the same random state."""
    logits = torch.randn(batch, 6, generator=torch.Generator().manual_seed(batch)) * 3
    logits[0, 2] = -math.inf  # an impossible action: entropy stays finite, never sampled
    logits.requires_grad_(True)
    torch.manual_seed(1)
    sample = sample_action(logits)
    torch.manual_seed(1)
    policy = torch.distributions.Categorical(logits=logits)
    action = policy.sample()
    assert torch.equal(sample.action, action)
    torch.testing.assert_close(sample.log_prob, policy.log_prob(action), rtol=0, atol=0)
    torch.testing.assert_close(sample.entropy, policy.entropy(), rtol=0, atol=0)
    ours = torch.autograd.grad((sample.log_prob + sample.entropy).sum(), logits)[0]
    theirs = torch.autograd.grad((policy.log_prob(action) + policy.entropy()).sum(), logits)[0]
    torch.testing.assert_close(ours, theirs)
