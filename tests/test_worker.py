"""The worker's pieces, in one process: rollouts, the loss against a hand computation, episode
lengths in agent steps, and exactly one rollout's gradient per optimizer step."""

import contextlib
import queue
import threading

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.multiprocessing as mp
import torch.nn.functional as F
from gymnasium.wrappers import RecordEpisodeStatistics

from a3c_course.a3c.envs import make_env
from a3c_course.a3c.model import ActorCritic
from a3c_course.a3c.worker import (
    EnvRunner,
    LocalLink,
    annealed_lr,
    collect_rollout,
    rollout_loss,
    sync_from_shared,
    update_shared,
    worker_step,
)
from a3c_course.training.config import TrainConfig
from a3c_course.training.hogwild import SharedMemoryLink
from a3c_course.training.worker_loop import (
    learning_rate,
    loss_coefficients,
    make_worker_envs,
    step_options,
    worker_loop,
)


class ScriptedEnv(gym.Env):
    """A tiny deterministic task. Observation after k steps of an episode: [0.1 * k + offset, (-1)^k];
    reward 1 for action k % 2, else -0.5; the episode ends after `length` steps, as a game over
    (terminated) or a time limit (truncated)."""

    observation_space = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length, ending="terminated", offset=0.0):
        self.length, self.ending, self.offset = length, ending, offset
        self.k = 0

    def observe(self, k):
        return np.array([0.1 * k + self.offset, (-1.0) ** k], dtype=np.float32)

    def reward(self, k, action):
        return 1.0 if action == k % 2 else -0.5

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.k = 0
        return self.observe(0), {}

    def step(self, action):
        reward = self.reward(self.k, int(action))
        self.k += 1
        end = self.k == self.length
        return (
            self.observe(self.k),
            reward,
            end and self.ending == "terminated",
            end and self.ending == "truncated",
            {},
        )


def scripted(length, ending, offset=0.0):
    return RecordEpisodeStatistics(ScriptedEnv(length, ending, offset))


CONFIG = TrainConfig(
    game="CartPole-v1", gamma=0.9, gae_lambda=0.8, entropy_coef=0.05, value_coef=0.7
)


def tiny_model(seed=0):
    torch.manual_seed(seed)
    return ActorCritic((2,), 2, hidden_size=3)


def test_rollout_shapes_and_the_returns_contract():
    torch.manual_seed(0)
    env_count, steps = 3, 6
    model = ActorCritic((4,), 2, hidden_size=8)
    runner = EnvRunner([make_env("CartPole-v1", seed=s) for s in range(env_count)], 8)
    rollout, _ = collect_rollout(model, runner, steps)
    for name in ("actions", "log_probs", "entropies", "values", "rewards", "next_values"):
        assert getattr(rollout, name).shape == (steps, env_count), name
    assert rollout.observations.shape == (steps, env_count, 4)
    assert rollout.steps == steps * env_count
    assert rollout.values.requires_grad and rollout.log_probs.requires_grad
    assert not rollout.next_values.requires_grad
    inside = ~(rollout.terminated | rollout.truncated)[:-1]
    torch.testing.assert_close(
        rollout.next_values[:-1][inside], rollout.values[1:].detach()[inside]
    )
    # The last row is the bootstrap V(s_T): the value of the runner's current observation.
    with torch.no_grad():
        bootstrap = model(runner.obs, runner.state).value.squeeze(1)
    last_alive = ~(rollout.terminated | rollout.truncated)[-1]
    torch.testing.assert_close(rollout.next_values[-1][last_alive], bootstrap[last_alive])
    assert not runner.state[0].requires_grad  # carried on, detached


def hand_loss(model, actions, envs_script, steps, config):
    """The A3C loss of the scripted rollout, recomputed one environment and one step at a time with
    explicit loops, as in the original course: log-softmax by hand, returns and GAE backwards."""
    total_policy, total_value, total_entropy = 0.0, 0.0, 0.0
    for i, (length, ending, offset) in enumerate(envs_script):
        env = ScriptedEnv(length, ending, offset)
        h, c = torch.zeros(1, 3), torch.zeros(1, 3)
        k = 0
        values, log_probs, entropies, rewards, next_values, cut, over = [], [], [], [], [], [], []
        for t in range(steps):
            value, logits, (h, c) = model(torch.from_numpy(env.observe(k))[None], (h, c))
            log_policy = logits - logits.exp().sum().log()
            a = int(actions[t, i])
            values.append(value[0, 0])
            log_probs.append(log_policy[0, a])
            entropies.append(-(log_policy.exp() * log_policy).sum())
            rewards.append(env.reward(k, a))
            k += 1
            if k == length:  # the episode ends with this step
                if ending == "truncated":
                    with torch.no_grad():
                        final_value = model(torch.from_numpy(env.observe(k))[None], (h, c)).value
                    next_values.append(float(final_value))
                else:
                    next_values.append(0.0)
                cut.append(True)
                over.append(ending == "terminated")
                k, h, c = 0, torch.zeros(1, 3), torch.zeros(1, 3)
            else:
                next_values.append(None)  # filled below: the next step's value
                cut.append(False)
                over.append(False)
        with torch.no_grad():
            bootstrap = float(model(torch.from_numpy(env.observe(k))[None], (h, c)).value)
        for t in range(steps):
            if next_values[t] is None:
                next_values[t] = float(values[t + 1].detach()) if t + 1 < steps else bootstrap
        gamma, lam = config.gamma, config.gae_lambda
        R, A = 0.0, 0.0
        for t in reversed(range(steps)):
            if cut[t] or t == steps - 1:
                R = next_values[t]
                A = 0.0
            R = rewards[t] + gamma * (0.0 if over[t] else R)
            delta = rewards[t] + gamma * next_values[t] - float(values[t].detach())
            A = delta + gamma * lam * A
            total_value = total_value + 0.5 * (R - values[t]) ** 2
            total_policy = total_policy - log_probs[t] * A
            total_entropy = total_entropy + entropies[t]
    n = len(envs_script)
    policy = total_policy / n - config.entropy_coef * total_entropy / n
    value = total_value / n
    return policy + config.value_coef * value, policy, value, total_entropy / n


def test_loss_and_gradient_on_a_scripted_rollout_match_a_hand_computation():
    # Env 0 ends with a game over after 2 steps, env 1 with a time limit after 3; then both go on.
    script = [(2, "terminated", 0.0), (3, "truncated", 0.5)]
    steps = 5
    model = tiny_model()
    runner = EnvRunner([scripted(*s) for s in script], hidden_size=3)
    rollout, episodes = collect_rollout(model, runner, steps)
    assert rollout.terminated[:, 0].tolist() == [False, True, False, True, False]
    assert rollout.truncated[:, 1].tolist() == [False, False, True, False, False]
    assert not rollout.truncated[:, 0].any() and not rollout.terminated[:, 1].any()
    assert sorted((e.env_index, e.length) for e in episodes) == [(0, 2), (0, 2), (1, 3)]
    expected_obs = [[ScriptedEnv(*s).observe(k % s[0]) for k in range(steps)] for s in script]
    np.testing.assert_allclose(
        rollout.observations.numpy(), np.stack(expected_obs, axis=1), rtol=0, atol=1e-7
    )

    loss = rollout_loss(rollout, **loss_coefficients(CONFIG))
    model.zero_grad()
    loss.total.backward()
    package_grads = [p.grad.clone() for p in model.parameters()]

    total, policy, value, entropy = hand_loss(model, rollout.actions, script, steps, CONFIG)
    torch.testing.assert_close(loss.policy, policy)
    torch.testing.assert_close(loss.value, value)
    torch.testing.assert_close(loss.entropy, entropy)
    torch.testing.assert_close(loss.total, total)
    hand_grads = torch.autograd.grad(total, list(model.parameters()))
    for ours, theirs in zip(package_grads, hand_grads, strict=True):
        torch.testing.assert_close(ours, theirs)


def test_episode_length_is_counted_in_agent_steps_not_rollouts():
    """Pong cut by a 30-step time limit, 20-step rollouts: each episode lasts 30 agent steps (the
    original counted rollouts, so its limit of 30 would have meant 600 steps)."""
    torch.manual_seed(0)
    model = ActorCritic((1, 42, 42), 6, hidden_size=16)
    runner = EnvRunner([make_env("pong", seed=0, max_episode_steps=30)], 16)
    lengths, cut_at = [], []
    for r in range(4):
        rollout, episodes = collect_rollout(model, runner, 20)
        lengths += [e.length for e in episodes]
        cut_at += [
            20 * r + t + 1 for t in torch.nonzero(rollout.truncated[:, 0]).flatten().tolist()
        ]
        assert not rollout.terminated.any()
    assert lengths == [30, 30] and cut_at == [30, 60]


def test_a_truncated_episode_bootstraps_from_its_final_observation():
    model = tiny_model()
    runner = EnvRunner([scripted(2, "truncated", 0.3)], hidden_size=3)
    rollout, _ = collect_rollout(model, runner, 3)
    env = ScriptedEnv(2, "truncated", 0.3)
    with torch.no_grad():
        state = model.initial_state(1)
        for k in range(2):
            state = model(torch.from_numpy(env.observe(k))[None], state).state
        final = model(torch.from_numpy(env.observe(2))[None], state).value
    torch.testing.assert_close(rollout.next_values[1, 0], final[0, 0])
    # After the episode the LSTM state starts again from zero: step 2 sees the reset observation.
    with torch.no_grad():
        fresh = model(torch.from_numpy(env.observe(0))[None], model.initial_state(1)).value
    torch.testing.assert_close(rollout.values[2, 0].detach(), fresh[0, 0])


class LivesEnv(ScriptedEnv):
    """ScriptedEnv with 3 lives, one lost every 2 steps: the game is over after 6 steps."""

    def reset(self, *, seed=None, options=None):
        obs, _ = super().reset(seed=seed)
        return obs, {"lives": 3}

    def step(self, action):
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, reward, terminated, truncated, {"lives": 3 - self.k // 2}


@pytest.mark.parametrize("life_loss_terminal", [False, True])
def test_a_lost_life_ends_the_episode_for_the_returns_only_when_asked(life_loss_terminal):
    """With life_loss_terminal the steps that lose a life (2 and 4) count as terminal: no bootstrap
    across them, the LSTM starts afresh; the game plays on, and its episode is still the whole game."""
    model = tiny_model()
    runner = EnvRunner([RecordEpisodeStatistics(LivesEnv(6))], 3, life_loss_terminal)
    rollout, episodes = collect_rollout(model, runner, 8)
    ends = torch.nonzero(rollout.terminated[:, 0]).flatten().tolist()
    assert ends == (
        [1, 3, 5, 7] if life_loss_terminal else [5]
    )  # steps 2, 4, 6 and the next game's 2
    assert all(rollout.next_values[t, 0] == 0 for t in ends)
    assert not rollout.truncated.any()
    assert [e.length for e in episodes] == [6]  # one episode: the whole game, not one life
    # The value at step 2, just after the first lost life, is computed from a fresh LSTM state with
    # the flag, and from the state carried through steps 0 and 1 without it.
    env, state = LivesEnv(6), model.initial_state(1)
    with torch.no_grad():
        if not life_loss_terminal:
            for k in range(2):
                state = model(torch.from_numpy(env.observe(k))[None], state).state
        expected = model(torch.from_numpy(env.observe(2))[None], state).value[0, 0]
    torch.testing.assert_close(rollout.values[2, 0].detach(), expected)


# -- one rollout's gradient per optimizer step ---------------------------------------------------


def ensure_shared_grads(model, shared_model):
    """The original course's function, verbatim in behaviour."""
    for param, shared_param in zip(model.parameters(), shared_model.parameters(), strict=True):
        if shared_param.grad is not None:
            return
        shared_param._grad = param.grad


def original_update(local_model, shared_model, optimizer, loss, max_grad_norm):
    """The original course's update, as it behaves under PyTorch 2.x."""
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(local_model.parameters(), max_grad_norm)
    ensure_shared_grads(local_model, shared_model)
    optimizer.step()


class RecordingSGD(torch.optim.SGD):
    """SGD that remembers the gradient each step applied."""

    def __init__(self, params, lr):
        super().__init__(params, lr=lr)
        self.applied = []

    def step(self, closure=None):
        self.applied.append([p.grad.clone() for p in self.param_groups[0]["params"]])
        return super().step(closure)


def clipped(grads, max_norm):
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    return [g * min(1.0, max_norm / (float(norm) + 1e-6)) for g in grads]


def applies_one_rollout_per_step(update, max_grad_norm, rollouts=4):
    """Run `rollouts` worker iterations with `update`; True when every optimizer step applied the
    (clipped) gradient of its own rollout's loss and nothing else."""
    torch.manual_seed(0)
    shared = ActorCritic((4,), 2, hidden_size=8)
    local = ActorCritic((4,), 2, hidden_size=8)
    optimizer = RecordingSGD(shared.parameters(), lr=0.01)
    runner = EnvRunner([make_env("CartPole-v1", seed=s) for s in range(2)], 8)
    expected = []
    for _ in range(rollouts):
        sync_from_shared(local, shared)
        rollout, _ = collect_rollout(local, runner, 5)
        loss = rollout_loss(rollout, **loss_coefficients(CONFIG)).total
        own = torch.autograd.grad(loss, list(local.parameters()), retain_graph=True)
        expected.append(clipped(own, max_grad_norm))
        update(local, shared, optimizer, loss, max_grad_norm)
    assert len(optimizer.applied) == rollouts
    return all(
        torch.allclose(a, e, atol=1e-6)
        for applied, wanted in zip(optimizer.applied, expected, strict=True)
        for a, e in zip(applied, wanted, strict=True)
    )


@pytest.mark.parametrize("max_grad_norm", [1e9, 0.5])  # without and with clipping
def test_each_update_applies_exactly_one_rollouts_gradient(max_grad_norm):
    assert applies_one_rollout_per_step(update_shared, max_grad_norm)


@pytest.mark.parametrize("max_grad_norm", [1e9, 0.5])
def test_the_original_update_pattern_fails_the_same_check(max_grad_norm):
    """The reference: under PyTorch 2.x the original pattern sums the rollouts' gradients."""
    assert not applies_one_rollout_per_step(original_update, max_grad_norm)


def test_the_original_pattern_applies_the_running_sum():
    """What the original actually applies at step k: the sum of the k rollouts' gradients."""
    torch.manual_seed(0)
    shared, local = ActorCritic((4,), 2, hidden_size=8), ActorCritic((4,), 2, hidden_size=8)
    optimizer = RecordingSGD(
        shared.parameters(), lr=0.0
    )  # lr 0: every rollout sees the same weights
    runner = EnvRunner([make_env("CartPole-v1", seed=0)], 8)
    running = None
    for _ in range(3):
        sync_from_shared(local, shared)
        rollout, _ = collect_rollout(local, runner, 5)
        loss = rollout_loss(rollout, **loss_coefficients(CONFIG)).total
        own = torch.autograd.grad(loss, list(local.parameters()), retain_graph=True)
        running = (
            list(own) if running is None else [r + g for r, g in zip(running, own, strict=True)]
        )
        original_update(local, shared, optimizer, loss, 1e9)
        for applied, total in zip(optimizer.applied[-1], running, strict=True):
            torch.testing.assert_close(applied, total)


# -- the worker's loop, in this process ------------------------------------------------------------


def test_worker_loop_reports_episodes_losses_and_counts_steps():
    torch.manual_seed(0)
    config = TrainConfig(
        game="CartPole-v1", envs_per_worker=2, rollout_steps=10, max_steps=600, lr=1e-3
    )
    shared = ActorCritic((4,), 2, hidden_size=16).share_memory()
    before = [p.detach().clone() for p in shared.parameters()]
    from a3c_course.a3c.optim import SharedAdam

    optimizer = SharedAdam(shared.parameters(), lr=config.lr)
    counter, messages = mp.get_context("fork").Value("q", 0), queue.Queue()
    updates = mp.get_context("fork").Value("q", 0)
    link = SharedMemoryLink(config, shared, optimizer, threading.Event(), counter, updates, messages)
    worker_loop(0, config, link)
    records = [messages.get_nowait() for _ in range(messages.qsize())]
    assert counter.value == 600  # 30 rollouts of 10 steps in 2 environments
    assert updates.value == 30
    episodes = [r for r in records if r["kind"] == "episode"]
    losses = [r for r in records if r["kind"] == "loss"]
    assert episodes and all(r["score"] == r["length"] for r in episodes)  # CartPole: +1 per step
    assert sum(r["rollouts"] for r in losses) == 30
    assert {"total", "policy", "value", "entropy", "grad_norm", "staleness"} <= set(losses[0])
    assert all(r["staleness"] == 0 for r in losses)  # alone: nobody updates between pull and push
    assert float(optimizer.state[next(shared.parameters())]["step"]) == 30
    assert any(not torch.equal(p, q) for p, q in zip(shared.parameters(), before, strict=True))


def test_the_learning_rate_anneals_linearly_to_zero_when_asked():
    config = TrainConfig(game="CartPole-v1", lr=1e-3, lr_anneal_steps=1_000)
    assert [learning_rate(config, s) for s in (0, 250, 1_000, 5_000)] == pytest.approx(
        [1e-3, 7.5e-4, 0.0, 0.0]
    )
    assert learning_rate(config.replace(lr_anneal_steps=None), 10**9) == 1e-3
    assert annealed_lr(1e-3, 1_000, 250) == pytest.approx(7.5e-4)
    # In the loop: 30 rollouts of 20 steps; the last update starts at 580 of 600 steps.
    config = config.replace(envs_per_worker=2, rollout_steps=10, max_steps=600, lr_anneal_steps=600)
    shared = ActorCritic((4,), 2, hidden_size=16).share_memory()
    from a3c_course.a3c.optim import SharedAdam

    optimizer = SharedAdam(shared.parameters(), lr=config.lr)
    counter, updates = mp.get_context("fork").Value("q", 0), mp.get_context("fork").Value("q", 0)
    link = SharedMemoryLink(
        config, shared, optimizer, threading.Event(), counter, updates, queue.Queue()
    )
    worker_loop(0, config, link)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(1e-3 * 20 / 600)
    with pytest.raises(ValueError, match="lr_anneal_steps must be an integer >= 1, or None, got 0"):
        TrainConfig(lr_anneal_steps=0)


def test_worker_loop_stops_when_the_stop_event_is_set():
    config = TrainConfig(game="CartPole-v1", rollout_steps=5)
    shared = ActorCritic((4,), 2, hidden_size=8).share_memory()
    from a3c_course.a3c.optim import SharedAdam

    stop = threading.Event()
    stop.set()
    counter, updates = mp.get_context("fork").Value("q", 0), mp.get_context("fork").Value("q", 0)
    optimizer = SharedAdam(shared.parameters(), lr=1e-3)
    link = SharedMemoryLink(config, shared, optimizer, stop, counter, updates, queue.Queue())
    worker_loop(0, config, link)
    assert counter.value == 0


def with_random_grads(model, seed):
    generator = torch.Generator().manual_seed(seed)
    for p in model.parameters():
        p.grad = torch.randn(p.shape, generator=generator)
    return model


def test_hogwild_counts_staleness_as_the_updates_made_between_a_pull_and_a_push():
    """Two workers, one step at a time: A and B pull the same weights, A pushes (nobody came
    between: 0), B pushes (A's update came between: 1), A pulls afresh and pushes (0)."""
    config = TrainConfig(game="CartPole-v1")
    shared = tiny_model(0).share_memory()
    optimizer = torch.optim.SGD(shared.parameters(), lr=config.lr)
    context = mp.get_context("fork")
    counters = (context.Value("q", 0), context.Value("q", 0))
    a, b = (
        SharedMemoryLink(config, shared, optimizer, threading.Event(), *counters, queue.Queue())
        for _ in range(2)
    )
    model_a, model_b = tiny_model(1), tiny_model(2)
    a.pull(model_a)
    b.pull(model_b)
    assert a.push(with_random_grads(model_a, 1), 10) == (10, 0)
    assert b.push(with_random_grads(model_b, 2), 10) == (20, 1)
    a.pull(model_a)
    assert a.push(with_random_grads(model_a, 3), 10) == (30, 0)
    assert a.steps == 30 and counters[1].value == 3


def test_sync_copies_the_shared_weights_in_place():
    shared, local = tiny_model(0), tiny_model(1)
    storage = [p.data_ptr() for p in local.parameters()]
    sync_from_shared(local, shared)
    for p, q in zip(local.parameters(), shared.parameters(), strict=True):
        assert torch.equal(p, q)
    assert storage == [p.data_ptr() for p in local.parameters()]


def test_hand_log_softmax_matches_torch():  # keeps the hand computation above honest
    logits = torch.randn(1, 2)
    torch.testing.assert_close(logits - logits.exp().sum().log(), F.log_softmax(logits, dim=1))


def test_a_breakout_policy_that_never_fires_cannot_stall_training():
    """Sampled from a policy that all but never picks FIRE (NOOP's logit far above the others),
    Breakout's training episodes still end: FireOnLifeStart serves each ball, the paddle misses,
    the lives run out. Without the wrapper the ball never comes and a game could last forever."""
    config = TrainConfig(game="breakout", envs_per_worker=2, rollout_steps=20)
    envs = make_worker_envs(config, worker_id=0)
    model = ActorCritic.for_env(envs[0], **config.network_options)
    fire = envs[0].unwrapped.get_action_meanings().index("FIRE")
    with torch.no_grad():
        model.actor.weight.zero_()
        model.actor.bias.fill_(-50.0)
        model.actor.bias[0] = 50.0  # NOOP
    runner = EnvRunner(envs, model.hidden_size)
    episodes, actions = [], []
    try:
        for _ in range(150):  # 6,000 agent steps: several whole games of a paddle that never moves
            rollout, ended = collect_rollout(model, runner, config.rollout_steps)
            actions.append(rollout.actions)
            episodes += ended
            if len(episodes) >= 2:
                break
    finally:
        runner.close()
    assert not (torch.cat(actions) == fire).any()  # the policy itself never fired
    assert len(episodes) >= 2, "training episodes of a never-firing policy did not end"
    assert all(e.length < 3_000 for e in episodes)


def clock_of(parts: list[str]):
    """A worker_step clock that lists the parts it is asked to time."""

    def clock(part):
        parts.append(part)
        return contextlib.nullcontext()

    return clock


def test_worker_step_is_pull_rollout_one_gradient_push_and_its_clock_sees_each_part():
    """worker_step on a LocalLink makes the same update as the pieces called by hand (the pull,
    collect_rollout, rollout_loss, update_shared), and a clock passed in sees every part once."""
    config = TrainConfig(game="CartPole-v1", envs_per_worker=2, rollout_steps=5, lr=1e-3)
    from a3c_course.a3c.optim import SharedAdam

    results = []
    for by_hand in (False, True):
        torch.manual_seed(3)
        shared = ActorCritic((4,), 2, hidden_size=8)
        optimizer = SharedAdam(shared.parameters(), lr=config.lr)
        local = ActorCritic(**shared.architecture)
        runner = EnvRunner(make_worker_envs(config, 0), local.hidden_size)
        torch.manual_seed(4)
        if by_hand:
            sync_from_shared(local, shared)
            rollout, _ = collect_rollout(local, runner, config.rollout_steps)
            loss = rollout_loss(rollout, **loss_coefficients(config)).total
            update_shared(local, shared, optimizer, loss, config.max_grad_norm)
        else:
            parts: list[str] = []
            link = LocalLink(shared, optimizer)
            step = worker_step(local, runner, link, clock=clock_of(parts), **step_options(config))
            assert parts == ["sync", "rollout", "loss", "clip", "backward", "clip", "optimizer"]
            assert (step.steps, step.staleness, link.updates) == (10, 0, 1)
        runner.close()
        results.append([p.detach().clone() for p in shared.parameters()])
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
