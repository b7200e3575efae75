"""Returns, GAE and the A3C loss against independent references.

The references below share no code with a3c_course.a3c.returns: they are explicit sums over the
trajectory, in plain Python floats, one (t, environment) at a time:

    A_t = sum_{k >= 0} (gamma * lam)^k * delta_{t+k}   walking forward from t, stopping after the
                                                         step that ends the episode or the rollout
    R_t = sum_k gamma^k r_{t+k} + gamma^n * (0 after termination, else V(final observation))

Rollouts are drawn by hypothesis with terminations, truncations (and both at once) at random places.
The loss is checked against the analytic gradient of -A log softmax(z)_a - beta * H(softmax z).
"""

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from a3c_course.a3c.returns import A3CLoss, a3c_loss, gae, n_step_returns, td_errors

EXAMPLES = settings(max_examples=60, deadline=None)
FLOATS = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)
UNIT = st.floats(0.0, 1.0)


# ------------------------------------------------------------------ random rollouts (hypothesis)


@st.composite
def rollouts(draw, consistent=None, max_steps=12, max_envs=4):
    """A (T, B) rollout as float64 / bool numpy arrays.

    Each step ends the episode with probability about 1/4: terminated, truncated or (rarely) both.
    In a consistent rollout next_values[t] == values[t + 1] inside an episode, as a real rollout has
    (needed for lam = 1 == returns - values); otherwise every next value is drawn freely.
    """
    steps, envs = draw(st.integers(1, max_steps)), draw(st.integers(1, max_envs))
    size = steps * envs

    def grid(elements):
        return np.array(draw(st.lists(elements, min_size=size, max_size=size))).reshape(steps, envs)

    ends = grid(st.sampled_from(["none"] * 6 + ["terminated", "truncated", "both"]))
    terminated = (ends == "terminated") | (ends == "both")
    truncated = (ends == "truncated") | (ends == "both")
    rewards, values, free_next = grid(FLOATS), grid(FLOATS), grid(FLOATS)
    if consistent is None:
        consistent = draw(st.booleans())
    if consistent:
        next_values = np.empty_like(values)
        next_values[:-1] = values[1:]
        next_values[-1] = free_next[-1]  # the bootstrap value V(s_T)
        episode_ended = terminated | truncated
        next_values[episode_ended] = free_next[episode_ended]  # V(final observation)
    else:
        next_values = free_next
    return {
        "rewards": rewards,
        "values": values,
        "next_values": next_values,
        "terminated": terminated,
        "truncated": truncated,
    }


def tensors(rollout, *names):
    return [torch.as_tensor(rollout[name]) for name in names]


# ------------------------------------------------------------------ brute-force references


def reference_delta(ro, t, b, gamma):
    bootstrap = 0.0 if ro["terminated"][t, b] else gamma * ro["next_values"][t, b]
    return ro["rewards"][t, b] + bootstrap - ro["values"][t, b]


def reference_gae(ro, gamma, lam):
    steps, envs = ro["rewards"].shape
    out = np.zeros((steps, envs))
    for b in range(envs):
        for t in range(steps):
            total = 0.0
            for u in range(t, steps):
                total += (gamma * lam) ** (u - t) * reference_delta(ro, u, b, gamma)
                if ro["terminated"][u, b] or ro["truncated"][u, b]:
                    break
            out[t, b] = total
    return out


def reference_returns(ro, gamma):
    steps, envs = ro["rewards"].shape
    out = np.zeros((steps, envs))
    for b in range(envs):
        for t in range(steps):
            total = 0.0
            for u in range(t, steps):
                total += gamma ** (u - t) * ro["rewards"][u, b]
                if ro["terminated"][u, b]:
                    break  # game over: nothing follows
                if ro["truncated"][u, b] or u == steps - 1:
                    total += gamma ** (u - t + 1) * ro["next_values"][u, b]  # V(s reached)
                    break
            out[t, b] = total
    return out


def assert_close(got, expected):
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-10, atol=1e-9)


# ------------------------------------------------------------------ GAE and returns


@EXAMPLES
@given(rollouts(), UNIT, UNIT)
def test_gae_matches_the_explicit_sum(ro, gamma, lam):
    got = gae(
        *tensors(ro, "rewards", "values", "next_values", "terminated", "truncated"), gamma, lam
    )
    assert got.shape == ro["rewards"].shape and got.dtype == torch.float64
    assert_close(got, reference_gae(ro, gamma, lam))


@EXAMPLES
@given(rollouts(), UNIT)
def test_n_step_returns_match_the_explicit_sum(ro, gamma):
    got = n_step_returns(*tensors(ro, "rewards", "next_values", "terminated", "truncated"), gamma)
    assert got.shape == ro["rewards"].shape
    assert_close(got, reference_returns(ro, gamma))


@EXAMPLES
@given(rollouts(), UNIT)
def test_td_errors_match_the_definition(ro, gamma):
    got = td_errors(*tensors(ro, "rewards", "values", "next_values", "terminated"), gamma)
    steps, envs = ro["rewards"].shape
    expected = [[reference_delta(ro, t, b, gamma) for b in range(envs)] for t in range(steps)]
    assert_close(got, np.array(expected))


@EXAMPLES
@given(rollouts(), UNIT)
def test_lambda_zero_gives_the_td_errors(ro, gamma):
    args = tensors(ro, "rewards", "values", "next_values", "terminated", "truncated")
    deltas = td_errors(*args[:4], gamma)
    assert_close(gae(*args, gamma, 0.0), deltas.numpy())


@EXAMPLES
@given(rollouts(consistent=True), UNIT)
def test_lambda_one_gives_the_n_step_advantages(ro, gamma):
    rewards, values, next_values, terminated, truncated = tensors(
        ro, "rewards", "values", "next_values", "terminated", "truncated"
    )
    returns = n_step_returns(rewards, next_values, terminated, truncated, gamma)
    advantages = gae(rewards, values, next_values, terminated, truncated, gamma, 1.0)
    np.testing.assert_allclose(advantages.numpy(), (returns - values).numpy(), atol=1e-8)


@EXAMPLES
@given(rollouts(), UNIT)
def test_gamma_zero_gives_reward_minus_value(ro, lam):
    args = tensors(ro, "rewards", "values", "next_values", "terminated", "truncated")
    assert_close(gae(*args, 0.0, lam), ro["rewards"] - ro["values"])
    assert_close(n_step_returns(args[0], args[2], args[3], args[4], 0.0), ro["rewards"])


@EXAMPLES
@given(rollouts(), UNIT, UNIT)
def test_batched_and_single_environment_calls_agree(ro, gamma, lam):
    names = ("rewards", "values", "next_values", "terminated", "truncated")
    batched_gae = gae(*tensors(ro, *names), gamma, lam)
    batched_returns = n_step_returns(
        *tensors(ro, "rewards", "next_values", "terminated", "truncated"), gamma
    )
    for b in range(ro["rewards"].shape[1]):
        column = {name: ro[name][:, b] for name in names}
        single_gae = gae(*tensors(column, *names), gamma, lam)
        single_returns = n_step_returns(
            *tensors(column, "rewards", "next_values", "terminated", "truncated"), gamma
        )
        assert single_gae.shape == single_returns.shape == (ro["rewards"].shape[0],)
        torch.testing.assert_close(single_gae, batched_gae[:, b], rtol=0, atol=0)
        torch.testing.assert_close(single_returns, batched_returns[:, b], rtol=0, atol=0)
        as_column = gae(*[x.unsqueeze(1) for x in tensors(column, *names)], gamma, lam)
        assert as_column.shape == (ro["rewards"].shape[0], 1)


def test_a_worked_example_by_hand():
    """Four steps, gamma = 0.5, lam = 0.5: truncated after step 0, terminated after step 2.

    step 0: truncated, final observation worth 4    -> delta = 1 + 0.5*4 - 1 = 2, A = 2, R = 3
    step 1: inside the episode, V(s_2) = 2          -> delta = 0 + 0.5*2 - 2 = -1
    step 2: terminated (V(final) = 100 is ignored)  -> delta = 1 + 0 - 2 = -1, A = -1, R = 1
    step 3: cut by the rollout, V(s_T) = 6          -> delta = 2 + 0.5*6 - 3 = 2, A = 2, R = 5
    A_1 = -1 + 0.25 * (-1) = -1.25, R_1 = 0 + 0.5 * R_2 = 0.5
    """
    rewards = torch.tensor([1.0, 0.0, 1.0, 2.0])
    values = torch.tensor([1.0, 2.0, 2.0, 3.0])
    next_values = torch.tensor([4.0, 2.0, 100.0, 6.0])
    terminated = torch.tensor([False, False, True, False])
    truncated = torch.tensor([True, False, False, False])
    advantages = gae(rewards, values, next_values, terminated, truncated, 0.5, 0.5)
    returns = n_step_returns(rewards, next_values, terminated, truncated, 0.5)
    torch.testing.assert_close(advantages, torch.tensor([2.0, -1.25, -1.0, 2.0]))
    torch.testing.assert_close(returns, torch.tensor([3.0, 0.5, 1.0, 5.0]))


def test_truncation_bootstraps_and_termination_does_not():
    """Same rollout, the same single episode end: only the flag differs."""
    rewards, values = torch.tensor([1.0, 1.0]), torch.tensor([0.0, 0.0])
    next_values = torch.tensor([10.0, 0.0])
    end = torch.tensor([True, False])
    no_end = torch.tensor([False, False])
    as_truncated = n_step_returns(rewards, next_values, no_end, end, 0.9)
    as_terminated = n_step_returns(rewards, next_values, end, no_end, 0.9)
    assert as_truncated[0].item() == pytest.approx(1.0 + 0.9 * 10.0)
    assert as_terminated[0].item() == pytest.approx(1.0)
    assert gae(rewards, values, next_values, no_end, end, 0.9, 1.0)[0].item() == pytest.approx(10.0)


def test_integer_rewards_and_mixed_dtypes_give_float_results():
    rewards = torch.tensor([1, 0, 1])  # int64: the result must not be rounded to integers
    next_values = torch.tensor([0.5, 0.5, 0.5], dtype=torch.float32)
    flags = torch.zeros(3, dtype=torch.bool)
    returns = n_step_returns(rewards, next_values, flags, flags, 0.9)
    assert returns.dtype == torch.float32
    r2 = 1 + 0.9 * 0.5  # the last step bootstraps from V(s_T) = 0.5
    torch.testing.assert_close(returns, torch.tensor([1 + 0.9 * (0.9 * r2), 0.9 * r2, r2]))
    advantages = gae(rewards, next_values.double(), next_values, flags, flags, 0.9, 0.9)
    assert advantages.dtype == torch.float64


def test_gradients_flow_through_values_unless_detached():
    values = torch.tensor([0.3, 0.2], requires_grad=True)
    next_values = torch.tensor([0.2, 0.7], requires_grad=True)
    flags = torch.zeros(2, dtype=torch.bool)
    gae(torch.ones(2), values, next_values, flags, flags, 0.9, 1.0).sum().backward()
    assert values.grad is not None and next_values.grad is not None


# ------------------------------------------------------------------ clear errors


@pytest.mark.parametrize("gamma", [-0.1, 1.01, float("nan"), float("inf")])
def test_gamma_out_of_range_is_a_clear_error(gamma):
    rollout = [torch.zeros(3)] * 5
    with pytest.raises(ValueError, match=r"gamma .* must be in \[0, 1\]"):
        gae(*rollout, gamma, 0.9)
    with pytest.raises(ValueError, match=r"gamma .* must be in \[0, 1\]"):
        n_step_returns(*rollout[:4], gamma)
    with pytest.raises(ValueError, match=r"gamma .* must be in \[0, 1\]"):
        td_errors(*rollout[:4], gamma)


@pytest.mark.parametrize("lam", [-0.5, 1.5, float("nan")])
def test_lambda_out_of_range_is_a_clear_error(lam):
    with pytest.raises(ValueError, match=r"lam .*lambda.* must be in \[0, 1\]"):
        gae(*[torch.zeros(3)] * 5, 0.99, lam)


def test_mismatched_shapes_are_a_clear_error_not_a_broadcast():
    values_with_extra_axis = torch.zeros(5, 1, 1)  # e.g. stacked (B, 1) critic outputs
    with pytest.raises(
        ValueError, match=r"values must be \(T,\) or \(T, B\), got shape \(5, 1, 1\)"
    ):
        gae(torch.zeros(5), values_with_extra_axis, torch.zeros(5), *[torch.zeros(5)] * 2, 0.9, 0.9)
    with pytest.raises(ValueError, match=r"rewards \(5, 2\), next_values \(5, 3\)"):
        n_step_returns(torch.zeros(5, 2), torch.zeros(5, 3), *[torch.zeros(5, 2)] * 2, 0.9)
    with pytest.raises(ValueError, match="the same"):
        a3c_loss(*[torch.zeros(4)] * 4, torch.zeros(3))


@pytest.mark.parametrize("name", ["entropy_coef", "value_coef"])
def test_negative_loss_coefficients_are_a_clear_error(name):
    with pytest.raises(ValueError, match=f"{name} must be a finite number >= 0, got -1"):
        a3c_loss(*[torch.zeros(3)] * 5, **{name: -1.0})


# ------------------------------------------------------------------ the loss


def policy_outputs(logits, actions):
    """log pi(a|s) of the actions and H(pi(.|s)), written out from softmax (not the model's code)."""
    probs = torch.exp(logits) / torch.exp(logits).sum(-1, keepdim=True)
    log_probs = torch.log(probs)
    taken = torch.gather(log_probs, -1, actions.unsqueeze(-1)).squeeze(-1)
    return taken, -(probs * log_probs).sum(-1)


@EXAMPLES
@given(
    steps=st.integers(1, 6),
    envs=st.integers(1, 3),
    n_actions=st.integers(2, 6),
    beta=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_loss_gradient_with_respect_to_the_logits_is_the_analytic_one(
    steps, envs, n_actions, beta, seed
):
    generator = torch.Generator().manual_seed(seed)
    logits = (2 * torch.randn(steps, envs, n_actions, generator=generator)).double()
    logits.requires_grad_(True)
    actions = torch.randint(n_actions, (steps, envs), generator=generator)
    advantages = torch.randn(steps, envs, generator=generator).double()
    values = torch.randn(steps, envs, generator=generator).double()
    log_probs, entropies = policy_outputs(logits, actions)

    a3c_loss(
        log_probs, entropies, values, advantages, values + 1, entropy_coef=beta
    ).total.backward()

    p = torch.softmax(logits.detach(), -1)
    onehot = torch.nn.functional.one_hot(actions, n_actions).double()
    entropy = -(p * p.log()).sum(-1, keepdim=True)
    d_entropy = -p * (p.log() + entropy)  # dH/dz_j = -p_j (log p_j + H)
    expected = (-advantages.unsqueeze(-1) * (onehot - p) - beta * d_entropy) / envs
    torch.testing.assert_close(logits.grad, expected)


def test_advantages_and_returns_carry_no_gradient_into_the_critic():
    """A and R are built from the critic's outputs (as a worker does); only V(s_t) may move."""
    values = torch.tensor([0.5, 0.1, -0.3], requires_grad=True)
    bootstrap = torch.tensor([0.8], requires_grad=True)  # V(s_T), also a critic output
    next_values = torch.cat([values[1:], bootstrap])
    rewards, flags = torch.tensor([1.0, 0.0, 1.0]), torch.zeros(3, dtype=torch.bool)
    returns = n_step_returns(rewards, next_values, flags, flags, 0.9)
    advantages = gae(rewards, values, next_values, flags, flags, 0.9, 0.95)
    assert returns.requires_grad and advantages.requires_grad  # so detaching them matters
    logits = torch.zeros(3, 2, requires_grad=True)
    log_probs, entropies = policy_outputs(logits, torch.zeros(3, dtype=torch.long))

    loss = a3c_loss(log_probs, entropies, values, advantages, returns)
    loss.policy.backward(retain_graph=True)
    assert values.grad is None and bootstrap.grad is None  # the policy term does not reach V
    assert logits.grad is not None and logits.grad.abs().sum() > 0

    loss.value.backward()  # d/dV 1/2 (R - V)^2 = -(R - V), with R held fixed
    torch.testing.assert_close(values.grad, -(returns - values).detach())
    assert bootstrap.grad is None  # R is a target: no gradient into V(s_T) through it


def test_value_loss_gradient_is_minus_the_error_averaged_over_environments():
    values = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    returns = torch.randn(5, 3, dtype=torch.float64)
    zeros = torch.zeros(5, 3, dtype=torch.float64)
    a3c_loss(zeros, zeros, values, zeros, returns).value.backward()
    torch.testing.assert_close(values.grad, -(returns - values.detach()) / 3)


def test_breakdown_of_a_loss_that_needs_gradients_gives_floats_without_warnings():
    values = torch.tensor([0.5, 0.1], requires_grad=True)
    log_probs = torch.tensor([-0.7, -0.2], requires_grad=True)
    loss = a3c_loss(log_probs, torch.ones(2), values, torch.ones(2), torch.zeros(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        floats = loss.as_floats()
    assert all(type(value) is float for value in floats.values())
    assert loss.total.requires_grad  # the breakdown did not detach the loss itself


def test_loss_terms_and_their_breakdown():
    log_probs = torch.tensor([[-0.5, -1.0], [-2.0, -0.1]])
    entropies = torch.tensor([[0.6, 0.7], [0.2, 0.5]])
    values = torch.tensor([[1.0, 0.0], [0.5, 0.5]])
    advantages = torch.tensor([[1.0, -1.0], [2.0, 0.5]])
    returns = torch.tensor([[2.0, 1.0], [0.5, -0.5]])
    loss = a3c_loss(log_probs, entropies, values, advantages, returns, 0.1, 0.25)
    assert isinstance(loss, A3CLoss)
    # -sum(log pi * A) over all (t, b), then / 2 environments
    policy_sum = -(-0.5 * 1.0 + -1.0 * -1.0 + -2.0 * 2.0 + -0.1 * 0.5) / 2
    entropy_sum = (0.6 + 0.7 + 0.2 + 0.5) / 2
    value_sum = 0.5 * (1.0**2 + 1.0**2 + 0.0**2 + 1.0**2) / 2
    floats = loss.as_floats()
    assert set(floats) == {"total", "policy", "value", "entropy"}
    assert floats["entropy"] == pytest.approx(entropy_sum)
    assert floats["policy"] == pytest.approx(policy_sum - 0.1 * entropy_sum)
    assert floats["value"] == pytest.approx(value_sum)
    assert floats["total"] == pytest.approx(floats["policy"] + 0.25 * floats["value"])


def original_loss(log_probs, entropies, values, rewards, bootstrap, gamma, tau):
    """The seed train.py's backward loop, modernised, for one environment and no time limits.

    values has T + 1 entries: the last is R's start, 0 after a game over, else V(s_T).
    """
    policy_loss, value_loss = 0.0, 0.0
    R, gae_ = bootstrap, 0.0
    for i in reversed(range(len(rewards))):
        R = gamma * R + rewards[i]
        advantage = R - values[i]
        value_loss = value_loss + 0.5 * advantage**2
        td = rewards[i] + gamma * values[i + 1] - values[i]
        gae_ = gae_ * gamma * tau + td
        policy_loss = policy_loss - log_probs[i] * gae_ - 0.01 * entropies[i]
    return policy_loss + 0.5 * value_loss


@pytest.mark.parametrize("game_over", [False, True])
def test_one_environment_reproduces_the_original_loss(game_over):
    """With no time limit in the rollout the course's loss equals the seed's, term by term."""
    rng = np.random.default_rng(3)
    steps, gamma, tau = 7, 0.99, 1.0 if game_over else 0.95
    rewards, values = rng.normal(size=steps), rng.normal(size=steps)
    log_probs, entropies = -rng.random(steps), rng.random(steps)
    bootstrap = 0.0 if game_over else rng.normal()
    expected = original_loss(
        log_probs, entropies, [*values, bootstrap], rewards, bootstrap, gamma, tau
    )

    next_values = torch.tensor([*values[1:], bootstrap])
    terminated = torch.zeros(steps, dtype=torch.bool)
    terminated[-1] = game_over
    truncated = torch.zeros(steps, dtype=torch.bool)
    r, v = torch.tensor(rewards), torch.tensor(values)
    advantages = gae(r, v, next_values, terminated, truncated, gamma, tau)
    returns = n_step_returns(r, next_values, terminated, truncated, gamma)
    loss = a3c_loss(torch.tensor(log_probs), torch.tensor(entropies), v, advantages, returns)
    assert loss.total.item() == pytest.approx(expected, rel=1e-12)
    assert math.isfinite(loss.total.item())
