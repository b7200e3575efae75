"""Unit 3's testbed and figures: CartPole with a fixed policy whose true values we can compute.

The testbed: a fixed stochastic policy on CartPole-v1, true values V(s) and Q(s, a) by Monte-Carlo
averaging (Gymnasium's vectorised CartPole plays hundreds of thousands of copies at once), and an
imperfect critic (the truth, plus a bias of 1 and a fixed wiggly error of the state). The figures
return a matplotlib Figure made without pyplot, so that a notebook shows each one exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, Rectangle
from tqdm.auto import tqdm

from a3c_course import returns
from a3c_course.envs import make_env

GAMMA = 0.9  # horizon 10 steps, which suits the policy's ~35-step episodes
POLICY_WEIGHTS = np.array([0.0, 0.0, 2.0, 0.5])  # (cart x, cart v, pole angle, pole angular v)
CRITIC_BIAS, CRITIC_NOISE = 1.0, 1.0
LAMBDAS = np.round(np.linspace(0, 1, 21), 2)  # 0, 0.05, ..., 1
_error_rng = np.random.default_rng(123)
_ERROR_FREQUENCIES = _error_rng.normal(size=4) * np.array([10.0, 10.0, 100.0, 10.0])
_ERROR_PHASE = _error_rng.uniform(0, 2 * np.pi)

# ------------------------------------------------------------------ the testbed


def prob_right(states):
    """pi(right | s) = sigmoid(2 angle + 0.5 angular velocity), for a batch of states (N, 4)."""
    return 1.0 / (1.0 + np.exp(-np.asarray(states) @ POLICY_WEIGHTS))


def policy_actions(states, rng):
    return (rng.random(len(states)) < prob_right(states)).astype(np.int64)


def cartpoles_at(states):
    """Gymnasium's vectorised CartPole, one copy per row of states (N, 4), put in those states."""
    envs = CartPoleVectorEnv(num_envs=len(states))
    envs.reset(seed=0)  # sizes the batch; we then overwrite its physical state
    envs.state = np.array(states, dtype=np.float64).T.copy()
    return envs


def sampled_returns(states, rng, first_actions=None, horizon=60):
    """One discounted return per row of states, playing the policy until the pole falls.

    first_actions, if given, are taken first (for Q(s, a)). 60 steps suffice: 0.9^60 = 0.002.
    """
    total = np.zeros(len(states))
    index = np.arange(len(states))  # which rows the CartPoles still running belong to
    envs, alive = cartpoles_at(states), np.ones(len(states), dtype=bool)
    for k in range(horizon):
        first = k == 0 and first_actions is not None
        actions = first_actions[index] if first else policy_actions(envs.state.T, rng)
        _, reward, terminated, _, _ = envs.step(actions)
        total[index[alive]] += GAMMA**k * reward[alive]
        alive &= ~terminated
        if not alive.any():
            break
        if alive.mean() < 0.5:  # drop the fallen ones to save time
            index, envs = index[alive], cartpoles_at(envs.state.T[alive])
            alive = np.ones(len(index), dtype=bool)
    return total


def true_values(states, n_rollouts, rng, first_actions=None, chunk=400_000):
    """Monte-Carlo V(s) (or Q(s, a) with first_actions): the mean of n_rollouts sampled returns."""
    states = np.asarray(states)
    out = np.zeros(len(states))
    rows = max(1, chunk // n_rollouts)
    for start in range(0, len(states), rows):
        part = slice(start, start + rows)
        repeated = np.repeat(states[part], n_rollouts, axis=0)
        firsts = None if first_actions is None else np.repeat(first_actions[part], n_rollouts)
        out[part] = sampled_returns(repeated, rng, firsts).reshape(-1, n_rollouts).mean(axis=1)
    return out


def critic(states, values):
    """The imperfect critic: the true values plus 1, plus a fixed wiggly error of the state."""
    wiggle = np.sqrt(2) * np.sin(np.asarray(states) @ _ERROR_FREQUENCIES + _ERROR_PHASE)
    return values + CRITIC_BIAS + CRITIC_NOISE * wiggle


def record_episodes(n_episodes, rng, max_episode_steps=None):
    """Play the policy with make_env("CartPole-v1"); per episode: states (L, 4), actions, rewards,
    the final state and how it ended (terminated, truncated)."""
    env = make_env("CartPole-v1", max_episode_steps=max_episode_steps)
    episodes = []
    for episode in range(n_episodes):
        env.reset(seed=episode)
        states, actions, rewards, ended = [], [], [], False
        while not ended:
            states.append(np.array(env.unwrapped.state, dtype=np.float64))
            actions.append(int(policy_actions(states[-1][None], rng)[0]))
            _, reward, terminated, truncated, _ = env.step(actions[-1])
            rewards.append(reward)
            ended = terminated or truncated
        final = np.array(env.unwrapped.state, dtype=np.float64)
        episodes.append(
            dict(states=np.array(states), actions=np.array(actions), rewards=np.array(rewards),
                 final_state=final, terminated=terminated, truncated=truncated)
        )
    env.close()
    return episodes


def n_step_target(rewards, next_values, terminated, t, n, gamma=GAMMA, truncated=None):
    """sum_{k<m} gamma^k r_{t+k} + gamma^m V(s_{t+m}), m = min(n, steps to the episode's or the
    rollout's end); n=None: to the end. Nothing is added after a game over (terminated)."""
    total, horizon = 0.0, len(rewards) if n is None else min(t + n, len(rewards))
    for u in range(t, horizon):
        total += gamma ** (u - t) * float(rewards[u])
        if terminated[u]:
            return total
        if u == horizon - 1 or (truncated is not None and truncated[u]):
            return total + gamma ** (u - t + 1) * float(next_values[u])  # bootstrap
    return total


# ------------------------------------------------------------------ the bias-variance experiment


@dataclass
class BiasVariance:
    """The errors Q-hat_lambda - Q for each lambda (L,), start state (K,) and rollout (M,)."""

    lambdas: np.ndarray
    errors: np.ndarray  # (L, K, M)

    @property
    def bias(self):  # root mean square over the states of the mean error over the rollouts
        return np.sqrt((self.errors.mean(axis=2) ** 2).mean(axis=1))

    @property
    def variance(self):  # variance over the rollouts, averaged over the states
        return self.errors.var(axis=2).mean(axis=1)

    @property
    def mse(self):
        return (self.errors**2).mean(axis=(1, 2))

    def table(self, every=2) -> str:
        rows = ["lambda  bias   variance   mean squared error"]
        for i in range(0, len(self.lambdas), every):
            row = (self.lambdas[i], self.bias[i], self.variance[i], self.mse[i])
            rows.append("{:<6.1f} {:6.3f} {:9.3f} {:12.3f}".format(*row))
        best = self.lambdas[self.mse.argmin()]
        return "\n".join([*rows, f"smallest mean squared error at lambda = {best:.2f}"])


def _rollouts_from(start_states, start_actions, n_rollouts, steps, rng):
    """n_rollouts of `steps` steps from each (s, a): visited states, still in play, game overs."""
    n = len(start_states) * n_rollouts
    visited = np.zeros((n, steps + 1, 4))
    in_play = np.ones((n, steps + 1), dtype=bool)
    game_over = np.zeros((n, steps), dtype=bool)
    visited[:, 0] = np.repeat(start_states, n_rollouts, axis=0)
    envs = cartpoles_at(visited[:, 0])
    for t in range(steps):
        first = np.repeat(start_actions, n_rollouts)
        _, _, terminated, _, _ = envs.step(first if t == 0 else policy_actions(envs.state.T, rng))
        game_over[:, t] = terminated & in_play[:, t]
        in_play[:, t + 1] = in_play[:, t] & ~terminated
        visited[:, t + 1] = envs.state.T
    return visited, in_play, game_over


def bias_variance_experiment(
    episodes, n_states=16, n_rollouts=400, steps=20, rollouts_for_v=100, rollouts_for_q=4000,
    lambdas=LAMBDAS, seed=2,
):
    """The error of Q-hat_lambda = A_0^GAE + V-hat(s_0) against the true Q(s, a), for each lambda.

    From n_states (s, a) picked in the recorded episodes: the true Q(s, a), n_rollouts rollouts of
    `steps` steps (what a worker collects), the critic at every visited state (its true value by
    Monte-Carlo, plus the critic's error), and the package's GAE on all rollouts at once.
    """
    rng = np.random.default_rng(seed)
    all_states = np.concatenate([e["states"] for e in episodes])
    all_actions = np.concatenate([e["actions"] for e in episodes])
    picked = rng.choice(len(all_states), size=n_states, replace=False)
    states, actions = all_states[picked], all_actions[picked]
    q_true = true_values(states, rollouts_for_q, rng, first_actions=actions)
    v_start = true_values(states, rollouts_for_q, rng)
    visited, in_play, game_over = _rollouts_from(states, actions, n_rollouts, steps, rng)
    needed = in_play.copy()
    needed[:, 0] = False
    # Rollouts from the same (s, a) share their first states exactly (the physics is deterministic):
    # value each distinct state once, so the critic is a function of the state, as a network is.
    distinct, which = np.unique(visited[needed], axis=0, return_inverse=True)
    values_distinct = np.zeros(len(distinct))
    for start in tqdm(range(0, len(distinct), 2000), desc="true values of visited states"):
        part = slice(start, start + 2000)
        values_distinct[part] = true_values(distinct[part], rollouts_for_v, rng)
    v_visited = np.zeros(in_play.shape)
    v_visited[needed] = values_distinct[which.reshape(-1)]
    v_visited[:, 0] = np.repeat(v_start, n_rollouts)
    v_hat = torch.tensor(np.where(in_play, critic(visited, v_visited), 0.0)).T  # (steps + 1, N)
    rewards = torch.tensor(in_play[:, :-1], dtype=torch.float64).T  # +1 for each step played
    ends = torch.tensor(game_over).T
    errors = np.zeros((len(lambdas), n_states, n_rollouts))
    for i, lam in enumerate(lambdas):
        no_limit = torch.zeros_like(ends)
        a = returns.gae(rewards, v_hat[:-1], v_hat[1:], ends, no_limit, GAMMA, float(lam))
        q_hat = (a[0] + v_hat[0]).numpy().reshape(n_states, n_rollouts)
        errors[i] = q_hat - q_true[:, None]
    return BiasVariance(np.asarray(lambdas), errors)


# ------------------------------------------------------------------ figures


def _axes(width, height):
    fig = Figure(figsize=(width, height))
    return fig, fig.subplots()


def plot_discount_weights(gammas=(0.5, 0.9, 0.99)):
    """gamma^k against k for a few gammas, each with its horizon 1/(1 - gamma); prints the table."""
    k = np.arange(301)
    fig, ax = _axes(8, 3.2)
    print("gamma   horizon 1/(1-gamma)   weight at the horizon   weight after 100 steps")
    for gamma, colour in zip(gammas, ["tab:red", "tab:orange", "tab:blue"], strict=False):
        horizon = 1 / (1 - gamma)
        ax.plot(k, gamma**k, color=colour, label=f"$\\gamma$ = {gamma}")
        ax.axvline(horizon, color=colour, linestyle=":")
        print(f"{gamma:<7} {horizon:>8.0f} steps {gamma**horizon:>18.2f} {gamma**100:>24.1e}")
    ax.set(xlabel="steps ahead k", ylabel="weight $\\gamma^k$",
           title="Discount weights (dotted: the horizon 1/(1-$\\gamma$))")
    ax.legend()
    return fig


def show_discount(gamma):
    """One gamma's weights, the first 1/(1 - gamma) steps shaded (for a slider)."""
    horizon = 1 / (1 - gamma)
    k = np.arange(int(4 * horizon) + 2)
    fig, ax = _axes(8, 3)
    ax.plot(k, gamma**k)
    near = k <= horizon
    ax.fill_between(k[near], gamma ** k[near], alpha=0.3, label="the first 1/(1-$\\gamma$) steps")
    ax.axvline(horizon, color="k", linestyle=":")
    weight = gamma**horizon
    title = f"$\\gamma$ = {gamma:.3f}: horizon {horizon:.0f} steps, weight {weight:.2f} there"
    ax.set(xlabel="steps ahead k", ylabel="$\\gamma^k$", ylim=(0, 1.05), title=title)
    ax.legend()
    return fig


def plot_values(v_true, v_hat):
    """One episode's true values and the critic's."""
    fig, ax = _axes(8, 3)
    ax.plot(v_true, "k-", label="true value $V^\\pi(s_t)$ (Monte-Carlo)")
    ax.plot(v_hat, "o-", color="tab:purple", markersize=3, label="critic $\\hat V(s_t)$")
    title = "One recorded episode: true values and our critic"
    ax.set(xlabel="step t", ylabel="value", title=title)
    ax.legend()
    return fig


def plot_estimates(rewards, v_true, v_hat):
    """Monte-Carlo, one-step TD and 5-step estimates along one episode that ended by a game over."""
    steps = len(rewards)
    ended = np.arange(steps) == steps - 1
    next_v_hat = np.append(v_hat[1:], 0.0)  # V-hat(s_{t+1}); unused after the terminal step
    fig, ax = _axes(8, 3.2)
    ax.plot(v_true, "k-", linewidth=3, alpha=0.3, label="true $V^\\pi(s_t)$")
    for name, n, style in [("Monte-Carlo $G_t$", None, "-"), ("one-step TD", 1, "--"),
                           ("5-step return", 5, ":")]:
        estimate = [n_step_target(rewards, next_v_hat, ended, t, n) for t in range(steps)]
        ax.plot(estimate, style, label=name)
    ax.set(xlabel="step t", ylabel="estimate of the return", title="Estimates along one episode")
    ax.legend(fontsize=8)
    return fig


def plot_gae_weights(lambdas=(0.5, 0.9, 0.95), steps_left=20):
    """GAE's weights (1 - lam) lam^(n-1) on the n-step advantages; the last takes what remains."""
    n = np.arange(1, steps_left + 1)
    fig, ax = _axes(8, 3)
    for lam, colour in zip(lambdas, ["tab:red", "tab:orange", "tab:blue"], strict=False):
        weights = (1 - lam) * lam ** (n - 1)
        weights[-1] = lam ** (steps_left - 1)  # all the remaining weight: the longest advantage
        label = f"$\\lambda$ = {lam} (sum {weights.sum():.2f})"
        ax.plot(n, weights, "o-", color=colour, markersize=3, label=label)
    ax.set(xlabel="n (steps of real rewards)", ylabel="weight of $\\hat A^{(n)}_t$",
           title=f"GAE's weights on the n-step advantages, {steps_left} steps left in the rollout")
    ax.legend()
    return fig


def plot_bias_variance(result: BiasVariance):
    """Bias squared, variance and their sum (the mean squared error) against lambda."""
    fig, ax = _axes(8, 3.5)
    _draw_bias_variance(ax, result)
    ax.set(ylabel="squared error of $\\hat Q_\\lambda$",
           title="GAE on CartPole with an imperfect critic: bias falls, variance grows")
    ax.axvline(result.lambdas[result.mse.argmin()], color="grey", linestyle=":")
    return fig


def _draw_bias_variance(ax, result, small=False):
    ax.plot(result.lambdas, result.bias**2, "o-", label="bias$^2$" if small else
            "bias$^2$ (critic error that leaks in)")
    ax.plot(result.lambdas, result.variance, "s-",
            label="variance" if small else "variance (randomness of the future)")
    ax.plot(result.lambdas, result.mse, "k--", label="mean squared error")
    ax.set(xlabel="$\\lambda$")
    ax.legend(fontsize=8 if small else None)


def show_lambda(result: BiasVariance, lam):
    """The distribution of the errors Q-hat_lambda - Q for one lambda, beside the curves."""
    i = int(np.argmin(np.abs(result.lambdas - lam)))
    everything = result.errors.ravel()
    bins = np.linspace(np.percentile(everything, 0.5), np.percentile(everything, 99.5), 50)
    fig = Figure(figsize=(10, 3.2))
    left, right = fig.subplots(1, 2)
    errors = result.errors[i].ravel()
    left.hist(errors, bins=bins, color="tab:blue", alpha=0.7)
    left.axvline(0, color="k")
    left.axvline(errors.mean(), color="tab:red", linestyle="--", label=f"mean {errors.mean():+.2f}")
    left.set(xlabel="$\\hat Q_\\lambda - Q^\\pi$", ylabel="rollouts",
             title=f"$\\lambda$ = {result.lambdas[i]:.2f}")
    left.legend()
    _draw_bias_variance(right, result, small=True)
    right.axvline(result.lambdas[i], color="tab:red")
    return fig


def draw_rollout_timeline():
    """A 20-step rollout holding three episodes: one terminated, one truncated, one cut."""
    fig, ax = _axes(11, 3.2)
    for first, last, colour, name in [(0, 5, "tab:blue", "episode 1"),
                                      (6, 13, "tab:green", "episode 2"),
                                      (14, 19, "tab:purple", "episode 3")]:
        for t in range(first, last + 1):
            ax.add_patch(Rectangle((t, 0), 0.9, 1, color=colour, alpha=0.35))
            ax.text(t + 0.45, 0.5, str(t), ha="center", va="center", fontsize=8)
        ax.text((first + last + 0.9) / 2, 1.15, name, ha="center", color=colour)
        for t in range(first + 1, last + 1):  # the recursion A_t <- A_{t+1}, inside an episode
            arrow = FancyArrowPatch((t + 0.3, -0.25), (t - 0.3, -0.25), arrowstyle="->",
                                    mutation_scale=8, color="grey")
            ax.add_patch(arrow)
    for t, colour, label in [
        (5, "tab:red", "terminated:\nno bootstrap\n$r_5 + 0$"),
        (13, "tab:orange", "truncated (time limit):\nbootstrap\n"
         "$r_{13} + \\gamma \\hat V(s^{final})$"),
        (19, "tab:green", "rollout cut:\nbootstrap\n$r_{19} + \\gamma \\hat V(s_{20})$"),
    ]:
        ax.plot([t + 0.95, t + 0.95], [-0.5, 1.5], color=colour, linewidth=2.5)
        ax.text(t + 1.0, 1.55, label, color=colour, fontsize=9, va="bottom", ha="center")
    for t in (5, 13):
        ax.text(t + 0.95, -0.25, "x", color="tab:red", ha="center", va="center", fontsize=13,
                fontweight="bold")
    ax.text(0, -0.6, "grey arrows: the GAE recursion $\\hat A_t = \\delta_t + \\gamma\\lambda "
            "\\hat A_{t+1}$; it stops (x) where an episode ends: $(1 - \\mathrm{done}_t) = 0$",
            fontsize=9, va="top")
    ax.set(xlim=(-0.3, 21.5), ylim=(-1.0, 2.7))
    ax.axis("off")
    return fig


def plot_time_limit_targets(v_true, bootstrapped, as_game_over, limit):
    """The critic's targets on an episode cut by a time limit, handled both ways."""
    fig, ax = _axes(8, 3)
    ax.plot(v_true, "k-", linewidth=3, alpha=0.3, label="true $V^\\pi(s_t)$ (the game goes on)")
    ax.plot(bootstrapped, "o-", markersize=3, color="tab:green",
            label="return target, truncated: bootstrap")
    ax.plot(as_game_over, "s-", markersize=3, color="tab:red",
            label="return target, time limit as game over")
    ax.set(xlabel="step t", ylabel="target for $\\hat V(s_t)$",
           title=f"An episode cut by a {limit}-step time limit")
    ax.legend(fontsize=8)
    return fig


# ------------------------------------------------------------------ the policy gradient


def after_one_step(advantage, logits=(0.5, 0.0, -0.5), learning_rate=0.5):
    """pi after one gradient step on -advantage * log pi(a=0 | s), from the given logits."""
    z = torch.tensor(logits, requires_grad=True)
    (-advantage * torch.log_softmax(z, dim=0)[0]).backward()
    with torch.no_grad():
        return torch.softmax(z - learning_rate * z.grad, dim=0)


def baseline_samples(n=10_000, seed=0):
    """Samples of the policy gradient for the better action's logit, in a one-state game with two
    actions (pi = 1/2 each) whose returns are N(10, 1) and N(11, 1): weighted by the return G, and
    by G - V with the baseline V = 10.5. Returns (with_return, with_advantage)."""
    rng = np.random.default_rng(seed)
    better = rng.random(n) < 0.5  # the action taken: the better one (returns 11) or not
    g = rng.normal(np.where(better, 11.0, 10.0), 1.0)
    grad_log_pi = np.where(better, 0.5, -0.5)  # d log pi(a) / d z_better = 1[a=better] - pi
    return grad_log_pi * g, grad_log_pi * (g - 10.5)


def plot_policy_gradient():
    """Left: one step on -A log pi(a_0|s) for A = +2 and -2. Right: the gradient samples with and
    without the baseline: the same mean, a far smaller spread."""
    fig = Figure(figsize=(10, 3.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    bars = [(torch.softmax(torch.tensor([0.5, 0.0, -0.5]), 0), "before"),
            (after_one_step(2.0), "after, $\\hat A = +2$"),
            (after_one_step(-2.0), "after, $\\hat A = -2$")]
    for offset, (probs, label) in zip((-0.27, 0, 0.27), bars, strict=True):
        left.bar(np.arange(3) + offset, probs.numpy(), 0.27, label=label)
    left.set(xticks=range(3), xticklabels=["a=0 (taken)", "a=1", "a=2"], ylabel="$\\pi(a|s)$",
             title="One gradient step on $-\\hat A \\log \\pi(a_0|s)$")
    left.legend(fontsize=8)
    with_return, with_advantage = baseline_samples()
    bins = np.linspace(-8, 8, 81)
    for samples, colour, name in [(with_return, "tab:red", "weight $G$ (no baseline)"),
                                  (with_advantage, "tab:green", "weight $G - V$")]:
        label = f"{name}: mean {samples.mean():.2f}, std {samples.std():.2f}"
        counts, _, _ = right.hist(samples, bins=bins, color=colour, alpha=0.6, label=label)
    right.axvline(0.25, color="k", linestyle=":", label="true gradient 0.25")
    right.set_ylim(0, 1.45 * counts.max())  # room for the legend above the humps
    right.set(xlabel="one sample of the gradient for the better action's logit", ylabel="samples",
              title="The baseline: same mean, far less noise")
    right.legend(fontsize=8, loc="upper left")
    return fig


def plot_gradient_clipping(before, clipped, clamped):
    """A gradient's first two entries: rescaled to norm 40 (direction kept), clamped to [0, 40]."""
    fig, ax = _axes(4.5, 4.5)
    ax.add_patch(Circle((0, 0), 40, fill=False, linestyle=":", color="grey"))
    for vector, colour, label in [(before, "k", "gradient"),
                                  (clipped, "tab:green", "clip_grad_norm_ (norm 40)"),
                                  (clamped, "tab:red", "clamp(0, 40)")]:
        tip = (float(vector[0]), float(vector[1]))
        ax.annotate("", xy=tip, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=colour, lw=2))
        ax.plot([], [], color=colour, label=label)
    ax.set(xlim=(-50, 50), ylim=(-50, 50), aspect="equal", xlabel="$g_1$", ylabel="$g_2$",
           title="The first two gradient entries")
    ax.legend(fontsize=8, loc="upper left")
    return fig
