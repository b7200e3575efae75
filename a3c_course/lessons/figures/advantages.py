"""Unit 3's figures, and its CartPole testbed (a3c_course.lessons.figures.cartpole_testbed, re-exported).

The testbed: a fixed stochastic policy on CartPole-v1, true values V(s) and Q(s, a) by Monte-Carlo
averaging (Gymnasium's vectorised CartPole plays hundreds of thousands of copies at once), and an
imperfect critic (the truth, plus a bias of 1 and a fixed wiggly error of the state). The figures
return a matplotlib Figure made without pyplot, so that a notebook shows each one exactly once.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, Rectangle

from a3c_course.lessons.figures.cartpole_testbed import (  # noqa: F401  the notebook uses figs.<name>
    CRITIC_BIAS,
    CRITIC_NOISE,
    GAMMA,
    LAMBDAS,
    POLICY_WEIGHTS,
    BiasVariance,
    bias_variance_experiment,
    cartpoles_at,
    critic,
    n_step_target,
    policy_actions,
    prob_right,
    record_episodes,
    sampled_returns,
    true_values,
)
from a3c_course.lessons.notebook import fast_mode

# ------------------------------------------------------------------ the notebook's measurements

GAMES_PER_STATE = 2000  # the notebook's Monte-Carlo: games played from each state


def monte_carlo_values(states, rng, first_actions=None):
    """true_values from GAMES_PER_STATE games per state (a tenth of that when the course's tests
    run the notebook, so that the learner's cell stays plain)."""
    games = GAMES_PER_STATE // 10 if fast_mode() else GAMES_PER_STATE
    return true_values(states, games, rng, first_actions=first_actions)


FOLLOWED = 1  # the testbed section follows the second recorded episode (47 steps)


def testbed():
    """The testbed's data (Unit 3, optional), computed once: 20 recorded episodes of the fixed policy and, along the
    followed one, its rewards, its true values V(s_t) and action values Q(s_t, a_t) (Monte-Carlo
    estimates) and the imperfect critic's values V-hat(s_t)."""
    return _testbed(fast_mode())


@functools.lru_cache(maxsize=2)
def _testbed(fast):  # fast: only part of the cache's key (monte_carlo_values reads it itself)
    episodes = record_episodes(20, np.random.default_rng(0))
    episode = episodes[FOLLOWED]
    states = episode["states"]
    v_true = monte_carlo_values(states, np.random.default_rng(1))
    q_true = monte_carlo_values(states, np.random.default_rng(2), first_actions=episode["actions"])
    return dict(
        episodes=episodes,
        rewards=torch.tensor(episode["rewards"]),
        v_true=v_true,
        q_true=q_true,
        v_hat=critic(states, v_true),
    )


def measure_bias_variance(episodes):
    """bias_variance_experiment with its default settings (smaller ones when the course's tests run
    the notebook: the default takes up to a minute)."""
    if fast_mode():
        return bias_variance_experiment(
            episodes, n_states=4, n_rollouts=50, rollouts_for_v=8, rollouts_for_q=200
        )
    return bias_variance_experiment(episodes)


# ------------------------------------------------------------------ figures


def code_of(function) -> str:
    """A function's source without its docstring, to be read in the notebook."""
    source = textwrap.dedent(inspect.getsource(function))
    first = ast.parse(source).body[0].body[0]
    is_docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    if is_docstring and isinstance(first.value.value, str):
        lines = source.splitlines()
        del lines[first.lineno - 1 : first.end_lineno]
        source = "\n".join(lines)
    return source


def _axes(width, height):
    fig = Figure(figsize=(width, height))
    return fig, fig.subplots()


def plot_discount_weights(gammas=(0.5, 0.9, 0.99)):
    """gamma^k against k for a few gammas, each curve followed by a dot at its horizon
    1/(1 - gamma), with a dotted line down from the dot; the legend gives the weight there."""
    k = np.arange(301)
    fig, ax = _axes(8, 3.2)
    for gamma, colour in zip(gammas, ["tab:red", "tab:orange", "tab:blue"], strict=False):
        horizon = 1 / (1 - gamma)
        weight = gamma**horizon
        label = f"$\\gamma$ = {gamma}: horizon {horizon:.0f} steps, weight there {weight:.2f}"
        ax.plot(k, gamma**k, color=colour, label=label)
        ax.plot([horizon], [weight], "o", color=colour, markersize=9, markeredgecolor="k")
        ax.vlines(horizon, 0, weight, color=colour, linestyle=":", linewidth=2)
    ax.set(
        xlabel="steps ahead k",
        ylabel="weight $\\gamma^k$",
        title="Discount weights (dots: the horizon 1/(1-$\\gamma$))",
    )
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


def plot_testbed_episode():
    """The testbed section: prints the recorded episodes' lengths, and plots the estimates along the
    followed one against its true action values."""
    data = testbed()
    lengths = [len(e["rewards"]) for e in data["episodes"]]
    print(f"{len(lengths)} games of the fixed policy lasted {lengths} steps.")
    print(f"The figure follows game number {FOLLOWED + 1}, counted from 1 ({lengths[FOLLOWED]} steps).")
    return plot_estimates(data["rewards"], data["q_true"], data["v_hat"])


def plot_estimates(rewards, q_true, v_hat):
    """Monte-Carlo, one-step and 5-step returns along one episode that ended by a game over,
    against the true action values Q(s_t, a_t) of the actions the episode took."""
    steps = len(rewards)
    ended = np.arange(steps) == steps - 1
    next_v_hat = np.append(v_hat[1:], 0.0)  # V-hat(s_{t+1}); unused after the terminal step
    fig, ax = _axes(8, 3.2)
    ax.plot(q_true, "k-", linewidth=3, alpha=0.3, label="true $Q(s_t, a_t)$")
    for name, n, style in [
        ("Monte-Carlo $G_t$", None, "-"),
        ("one-step return", 1, "--"),
        ("5-step return", 5, ":"),
    ]:
        estimate = [n_step_target(rewards, next_v_hat, ended, t, n) for t in range(steps)]
        ax.plot(estimate, style, label=name)
    title = "Estimates of $Q(s_t, a_t)$ along one episode"
    ax.set(xlabel="step t", ylabel="return after step t", title=title)
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
    ax.set(
        xlabel="n (steps of real rewards)",
        ylabel="weight of $\\hat A^{(n)}_t$",
        title=f"GAE's weights on the n-step advantages, {steps_left} steps left in the rollout",
    )
    ax.legend()
    return fig


def plot_bias_variance(result: BiasVariance):
    """Bias squared, variance and their sum (the mean squared error) against lambda."""
    fig, ax = _axes(8, 3.5)
    _draw_bias_variance(ax, result)
    ax.set(
        ylabel="squared error of $\\hat Q_\\lambda$",
        title="GAE on CartPole with an imperfect critic: bias falls, variance grows",
    )
    best = result.lambdas[result.mse.argmin()]
    label = f"smallest mean squared error: $\\lambda$ = {best:.2f}"
    ax.axvline(best, color="grey", linestyle=":", label=label)
    ax.set_ylim(0, 1.5 * max(result.mse.max(), result.variance.max()))  # room for the legend
    ax.legend(fontsize=8, loc="upper center", ncol=2)
    return fig


def _draw_bias_variance(ax, result, small=False):
    ax.plot(
        result.lambdas,
        result.bias**2,
        "o-",
        label="bias$^2$" if small else "bias$^2$ (critic error that leaks in)",
    )
    ax.plot(
        result.lambdas,
        result.variance,
        "s-",
        label="variance" if small else "variance (randomness of the future)",
    )
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
    left.set(
        xlabel="$\\hat Q_\\lambda - Q$",
        ylabel="rollouts",
        title=f"$\\lambda$ = {result.lambdas[i]:.2f}",
    )
    left.legend()
    _draw_bias_variance(right, result, small=True)
    right.axvline(result.lambdas[i], color="tab:red")
    return fig


def draw_gae_backward(deltas, advantages, discount, ends=None):
    """The backward GAE pass on a short rollout: each step's TD error and advantage, and the carry
    A_t = delta_t + discount * A_{t+1} drawn as an arrow from step t+1 to step t (cut where an
    episode ends after step t: ends[t] True). A_T = 0 stands after the last step."""
    deltas, advantages = [float(d) for d in deltas], [float(a) for a in advantages]
    steps = len(deltas)
    ends = [False] * steps if ends is None else [bool(e) for e in ends]
    fig, ax = _axes(2.3 * (steps + 1), 2.4)
    for t in range(steps):
        ax.add_patch(Rectangle((2 * t, 0), 1.3, 1, color="tab:blue", alpha=0.25))
        text = f"step {t}\n$\\delta_{{{t}}}$ = {deltas[t]:+.2f}\n$\\hat A_{{{t}}}$ = {advantages[t]:+.2f}"
        ax.text(2 * t + 0.65, 0.5, text, ha="center", va="center", fontsize=9)
    after = Rectangle((2 * steps, 0), 1.3, 1, fill=False, color="tab:blue", linestyle=":")
    ax.add_patch(after)
    last = f"$\\hat A_{{{steps}}} = 0$\n(after the\nrollout)"
    ax.text(2 * steps + 0.65, 0.5, last, ha="center", va="center", fontsize=9)
    for t in range(steps):
        if ends[t]:
            stop = dict(color="tab:red", ha="center", va="center")
            ax.text(2 * t + 1.65, 0.5, "x", fontsize=14, fontweight="bold", **stop)
            ax.text(2 * t + 1.65, 1.3, "episode\nends", fontsize=8, **stop)
            continue
        arrow = FancyArrowPatch(
            (2 * t + 2, 0.5), (2 * t + 1.3, 0.5), arrowstyle="->", mutation_scale=12, color="grey"
        )
        ax.add_patch(arrow)
        ax.text(2 * t + 1.65, 0.62, f"× {discount:g}", ha="center", fontsize=8, color="grey")
    ax.set(xlim=(-0.2, 2 * steps + 1.5), ylim=(-0.2, 1.6))
    title = f"Backwards: $\\hat A_t = \\delta_t + {discount:g}\\,\\hat A_{{t+1}}$"
    if any(ends):
        title += " (no carry across an episode's end: x)"
    ax.set_title(title, fontsize=10)
    ax.axis("off")
    return fig


def draw_rollout_timeline():
    """A 20-step rollout holding three episodes: one terminated, one truncated, one cut."""
    fig, ax = _axes(11, 3.2)
    for first, last, colour, name in [
        (0, 5, "tab:blue", "episode 1"),
        (6, 13, "tab:green", "episode 2"),
        (14, 19, "tab:purple", "episode 3"),
    ]:
        for t in range(first, last + 1):
            ax.add_patch(Rectangle((t, 0), 0.9, 1, color=colour, alpha=0.35))
            ax.text(t + 0.45, 0.5, str(t), ha="center", va="center", fontsize=8)
        ax.text((first + last + 0.9) / 2, 1.15, name, ha="center", color=colour)
        for t in range(first + 1, last + 1):  # the recursion A_t <- A_{t+1}, inside an episode
            arrow = FancyArrowPatch(
                (t + 0.3, -0.25), (t - 0.3, -0.25), arrowstyle="->", mutation_scale=8, color="grey"
            )
            ax.add_patch(arrow)
    for t, colour, label in [
        (5, "tab:red", "terminated:\nno bootstrap\n$r_5 + 0$"),
        (
            13,
            "tab:orange",
            "truncated (time limit): bootstrap\nfrom the final observation\n$r_{13} + \\gamma \\hat V(s^{\\mathrm{final}})$",
        ),
        (19, "tab:green", "rollout cut:\nbootstrap\n$r_{19} + \\gamma \\hat V(s_{20})$"),
    ]:
        ax.plot([t + 0.95, t + 0.95], [-0.5, 1.5], color=colour, linewidth=2.5)
        ax.text(t + 1.0, 1.55, label, color=colour, fontsize=9, va="bottom", ha="center")
    for t in (5, 13):
        ax.text(
            t + 0.95,
            -0.25,
            "x",
            color="tab:red",
            ha="center",
            va="center",
            fontsize=13,
            fontweight="bold",
        )
    ax.text(
        0,
        -0.6,
        "grey arrows: the GAE recursion $\\hat A_t = \\delta_t + \\gamma\\lambda "
        "\\hat A_{t+1}$; it stops (x) after a step flagged terminated or truncated",
        fontsize=9,
        va="top",
    )
    ax.set(xlim=(-0.3, 21.5), ylim=(-1.0, 2.7))
    ax.axis("off")
    return fig


def plot_time_limit_targets(v_true, bootstrapped, as_game_over, limit):
    """The critic's targets on an episode cut by a time limit, handled both ways."""
    fig, ax = _axes(8, 3)
    ax.plot(v_true, "k-", linewidth=3, alpha=0.3, label="true $V(s_t)$ (the game goes on)")
    ax.plot(
        bootstrapped,
        "o-",
        markersize=3,
        color="tab:green",
        label="return target, truncated: bootstrap",
    )
    ax.plot(
        as_game_over,
        "s-",
        markersize=3,
        color="tab:red",
        label="return target, time limit as game over",
    )
    ax.set(
        xlabel="step t",
        ylabel="target for $\\hat V(s_t)$",
        title=f"An episode cut by a {limit}-step time limit",
    )
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
    bars = [
        (torch.softmax(torch.tensor([0.5, 0.0, -0.5]), 0), "before"),
        (after_one_step(2.0), "after, $\\hat A = +2$"),
        (after_one_step(-2.0), "after, $\\hat A = -2$"),
    ]
    for offset, (probs, label) in zip((-0.27, 0, 0.27), bars, strict=True):
        left.bar(np.arange(3) + offset, probs.numpy(), 0.27, label=label)
    left.set(
        xticks=range(3),
        xticklabels=["a=0 (taken)", "a=1", "a=2"],
        ylabel="$\\pi(a|s)$",
        title="One gradient step on $-\\hat A \\log \\pi(a_0|s)$",
    )
    left.legend(fontsize=8)
    with_return, with_advantage = baseline_samples()
    bins = np.linspace(-8, 8, 81)
    for samples, colour, name in [
        (with_return, "tab:red", "weight $G$ (no baseline)"),
        (with_advantage, "tab:green", "weight $G - V$"),
    ]:
        label = f"{name}: mean {samples.mean():.2f}, std {samples.std():.2f}"
        counts, _, _ = right.hist(samples, bins=bins, color=colour, alpha=0.6, label=label)
    right.axvline(0.25, color="k", linestyle=":", label="true gradient 0.25")
    right.set_ylim(0, 1.45 * counts.max())  # room for the legend above the humps
    right.set(
        xlabel="one sample of the gradient for the better action's logit",
        ylabel="samples",
        title="The baseline: same mean, far less noise",
    )
    right.legend(fontsize=8, loc="upper left")
    return fig


def plot_gradient_clipping(before, clipped, clamped):
    """A gradient's first two entries: rescaled to norm 40 (direction kept), clamped to [0, 40]."""
    fig, ax = _axes(4.5, 4.5)
    ax.add_patch(Circle((0, 0), 40, fill=False, linestyle=":", color="grey"))
    for vector, colour, label in [
        (before, "k", "gradient"),
        (clipped, "tab:green", "clip_grad_norm_ (norm 40)"),
        (clamped, "tab:red", "clamp(0, 40)"),
    ]:
        tip = (float(vector[0]), float(vector[1]))
        ax.annotate("", xy=tip, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=colour, lw=2))
        ax.plot([], [], color=colour, label=label)
    ax.set(
        xlim=(-50, 50),
        ylim=(-50, 50),
        aspect="equal",
        xlabel="$g_1$",
        ylabel="$g_2$",
        title="The first two gradient entries",
    )
    ax.legend(fontsize=8, loc="upper left")
    return fig
