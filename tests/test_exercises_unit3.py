"""Unit 3 exercise checks: a correct answer passes, a stub is NOT ATTEMPTED, and the mistakes a
learner is likely to make (off-by-one, no reset at episode ends, the original's truncation bug) fail
with a message that names the input and shows expected versus got."""

import re

import pytest
import torch

from a3c_course.a3c.returns import gae, n_step_returns
from a3c_course.lessons.exercises import unit3

# ------------------------------------------------------------------ correct answers


def discounted_returns(rewards, gamma):
    returns, following = torch.zeros_like(rewards), 0.0
    for t in reversed(range(len(rewards))):
        following = rewards[t] + gamma * following
        returns[t] = following
    return returns


def gae_one_env(rewards, values, next_values, terminated, truncated, gamma, lam):
    advantages, following = torch.zeros_like(rewards), 0.0
    for t in reversed(range(len(rewards))):
        if terminated[t] or truncated[t]:
            following = 0.0  # A_{t+1} belongs to the next episode
        bootstrap = 0.0 if terminated[t] else next_values[t]
        delta = rewards[t] + gamma * bootstrap - values[t]
        following = delta + gamma * lam * following
        advantages[t] = following
    return advantages


def fixed_advantages_and_returns(rewards, values, next_values, terminated, truncated, gamma, lam):
    n = len(rewards)
    advantages, returns = torch.zeros(n), torch.zeros(n)
    R, advantage = next_values[-1], 0.0
    for t in reversed(range(n)):
        if terminated[t]:
            R, advantage = 0.0, 0.0
        elif truncated[t]:
            R, advantage = next_values[t], 0.0  # a time limit: the game would go on
        next_value = 0.0 if terminated[t] else next_values[t]
        R = rewards[t] + gamma * R
        delta = rewards[t] + gamma * next_value - values[t]
        advantage = delta + gamma * lam * advantage
        advantages[t], returns[t] = advantage, R
    return advantages, returns


def package_gae(rewards, values, next_values, terminated, truncated, gamma, lam):
    return gae(rewards, values, next_values, terminated, truncated, gamma, lam)


def package_pair(rewards, values, next_values, terminated, truncated, gamma, lam):
    return (
        gae(rewards, values, next_values, terminated, truncated, gamma, lam),
        n_step_returns(rewards, next_values, terminated, truncated, gamma),
    )


@pytest.mark.parametrize(
    ("check", "answer", "exercise_id"),
    [
        (unit3.check_discounted_returns, discounted_returns, "3.1"),
        (unit3.check_gae_one_env, gae_one_env, "3.2"),
        (unit3.check_gae_one_env, package_gae, "3.2"),
        (unit3.check_truncation_fix, fixed_advantages_and_returns, "3.3"),
        (unit3.check_truncation_fix, package_pair, "3.3"),
    ],
)
def test_correct_answers_pass(check, answer, exercise_id, capsys):
    assert check(answer) is True
    out = capsys.readouterr().out
    assert out.startswith(f"PASSED [{exercise_id}] {answer.__name__}: all 6 cases agree")


@pytest.mark.parametrize(
    ("check", "exercise_id"),
    [
        (unit3.check_discounted_returns, "3.1"),
        (unit3.check_gae_one_env, "3.2"),
        (unit3.check_truncation_fix, "3.3"),
    ],
)
def test_a_stub_is_not_attempted(check, exercise_id, capsys):
    def stub(*args, **kwargs):
        raise NotImplementedError

    assert check(stub) is False
    assert capsys.readouterr().out.startswith(f"NOT ATTEMPTED [{exercise_id}] stub")


# ------------------------------------------------------------------ wrong answers are caught


def returns_one_step_late(rewards, gamma):
    """Off by one: G_t = gamma r_t + gamma^2 r_{t+1} + ... (the first reward discounted too)."""
    returns, following = torch.zeros_like(rewards), 0.0
    for t in reversed(range(len(rewards))):
        following = gamma * (rewards[t] + following)
        returns[t] = following
    return returns


def returns_accumulated_forwards(rewards, gamma):
    """Walks forwards: each entry sums the past rewards instead of the future ones."""
    returns, running = torch.zeros_like(rewards), 0.0
    for t in range(len(rewards)):
        running = rewards[t] + gamma * running
        returns[t] = running
    return returns


def gae_without_episode_resets(rewards, values, next_values, terminated, truncated, gamma, lam):
    """Bootstraps correctly but lets A_{t+1} of the next episode leak into A_t."""
    advantages, following = torch.zeros_like(rewards), 0.0
    for t in reversed(range(len(rewards))):
        bootstrap = 0.0 if terminated[t] else next_values[t]
        following = rewards[t] + gamma * bootstrap - values[t] + gamma * lam * following
        advantages[t] = following
    return advantages


def gae_with_the_truncation_bug(rewards, values, next_values, terminated, truncated, gamma, lam):
    return unit3.buggy_advantages_and_returns(
        rewards, values, next_values, terminated, truncated, gamma, lam
    )[0]


def gae_off_by_one(rewards, values, next_values, terminated, truncated, gamma, lam):
    """Uses delta_{t+1} for A_t: the loop stores the advantage before adding this step."""
    advantages, following = torch.zeros_like(rewards), 0.0
    for t in reversed(range(len(rewards))):
        if terminated[t] or truncated[t]:
            following = 0.0
        advantages[t] = following
        bootstrap = 0.0 if terminated[t] else next_values[t]
        following = rewards[t] + gamma * bootstrap - values[t] + gamma * lam * following
    return advantages


def half_fixed(rewards, values, next_values, terminated, truncated, gamma, lam):
    """Fixes the returns but still zeroes the bootstrap in the TD error on a time limit."""
    advantages, _ = unit3.buggy_advantages_and_returns(
        rewards, values, next_values, terminated, truncated, gamma, lam
    )
    return advantages, fixed_advantages_and_returns(
        rewards, values, next_values, terminated, truncated, gamma, lam
    )[1]


def only_the_advantages(rewards, values, next_values, terminated, truncated, gamma, lam):
    return fixed_advantages_and_returns(
        rewards, values, next_values, terminated, truncated, gamma, lam
    )[0]


@pytest.mark.parametrize(
    ("check", "wrong", "exercise_id", "names"),
    [
        (unit3.check_discounted_returns, returns_one_step_late, "3.1", "rewards=[1, 1, 1]"),
        (unit3.check_discounted_returns, returns_accumulated_forwards, "3.1", "rewards=[1, 1, 1]"),
        (unit3.check_gae_one_env, gae_without_episode_resets, "3.2", "a game over after step 2"),
        (unit3.check_gae_one_env, gae_with_the_truncation_bug, "3.2", "a time limit after step 2"),
        (unit3.check_gae_one_env, gae_off_by_one, "3.2", "one episode running past"),
        (unit3.check_truncation_fix, half_fixed, "3.3", "the advantages differ"),
        (unit3.check_truncation_fix, only_the_advantages, "3.3", "expected a pair"),
    ],
)
def test_wrong_answers_are_caught_with_a_helpful_message(check, wrong, exercise_id, names, capsys):
    assert check(wrong) is False
    out = capsys.readouterr().out
    assert out.startswith(f"FAILED [{exercise_id}] {wrong.__name__}: on ")
    assert names in out
    if "pair" not in names:
        assert "expected:" in out and "got:" in out


def test_the_original_truncation_bug_is_caught_on_a_time_limit(capsys):
    """The buggy function is right until a time limit cuts an episode; the check says so, and
    names both halves of the bug."""
    assert unit3.check_truncation_fix(unit3.buggy_advantages_and_returns) is False
    out = capsys.readouterr().out
    assert out.startswith("FAILED [3.3] buggy_advantages_and_returns: on a time limit after step 2")
    assert "truncated=00100" in out and "bootstrap from V(final observation) = 2" in out
    assert "differ" in out and "expected:" in out and "got:" in out
    assert "your TD error at step 2 drops the bootstrap although a time limit" in out
    assert (
        "your return at step 2 (the largest gap in your returns) restarts from 0 at the time "
        "limit at step 2" in out
    )


# ------------------------------------------------------------------ the likely cause, named


def gae_without_reset_after_time_limits(
    rewards, values, next_values, terminated, truncated, gamma, lam
):
    """Resets the running sum after a game over only: a time limit's carry leaks through."""
    advantages, following = torch.zeros_like(rewards), 0.0
    for t in reversed(range(len(rewards))):
        if terminated[t]:
            following = 0.0
        bootstrap = 0.0 if terminated[t] else next_values[t]
        following = rewards[t] + gamma * bootstrap - values[t] + gamma * lam * following
        advantages[t] = following
    return advantages


def gae_bootstrapping_at_game_overs(
    rewards, values, next_values, terminated, truncated, gamma, lam
):
    """Resets at every end, but keeps gamma * V(final observation) after a game over too."""
    advantages, following = torch.zeros_like(rewards), 0.0
    for t in reversed(range(len(rewards))):
        if terminated[t] or truncated[t]:
            following = 0.0
        following = rewards[t] + gamma * next_values[t] - values[t] + gamma * lam * following
        advantages[t] = following
    return advantages


def gae_resetting_after_storing(rewards, values, next_values, terminated, truncated, gamma, lam):
    """Resets the running sum at an end, but only after storing that step's advantage."""
    advantages, following = torch.zeros_like(rewards), 0.0
    for t in reversed(range(len(rewards))):
        bootstrap = 0.0 if terminated[t] else next_values[t]
        following = rewards[t] + gamma * bootstrap - values[t] + gamma * lam * following
        advantages[t] = following
        if terminated[t] or truncated[t]:
            following = 0.0
    return advantages


def gae_without_lambda(rewards, values, next_values, terminated, truncated, gamma, lam):
    """Right at every end, but carries gamma * A_{t+1} back: lam is left out (as if lam = 1)."""
    advantages, following = torch.zeros_like(rewards), 0.0
    for t in reversed(range(len(rewards))):
        if terminated[t] or truncated[t]:
            following = 0.0
        bootstrap = 0.0 if terminated[t] else next_values[t]
        following = rewards[t] + gamma * bootstrap - values[t] + gamma * following
        advantages[t] = following
    return advantages


def pair_without_lambda(rewards, values, next_values, terminated, truncated, gamma, lam):
    """3.3 with lam left out of the advantages' carry (the returns are right)."""
    args = (rewards, values, next_values, terminated, truncated, gamma, lam)
    return gae_without_lambda(*args), fixed_advantages_and_returns(*args)[1]


def returns_bootstrapping_at_game_overs(
    rewards, values, next_values, terminated, truncated, gamma, lam
):
    """Restarts R from next_values at both kinds of end (the advantages are right)."""
    advantages, right_returns = fixed_advantages_and_returns(
        rewards, values, next_values, terminated, truncated, gamma, lam
    )
    returns, R = torch.zeros(len(rewards)), next_values[-1]
    for t in reversed(range(len(rewards))):
        if terminated[t] or truncated[t]:
            R = next_values[t]
        R = rewards[t] + gamma * R
        returns[t] = R
    return advantages, returns


def returns_without_resets(rewards, values, next_values, terminated, truncated, gamma, lam):
    """Never restarts R: the next episode's rewards leak into this one's returns."""
    advantages, _ = fixed_advantages_and_returns(
        rewards, values, next_values, terminated, truncated, gamma, lam
    )
    returns, R = torch.zeros(len(rewards)), next_values[-1]
    for t in reversed(range(len(rewards))):
        R = rewards[t] + gamma * R
        returns[t] = R
    return advantages, returns


@pytest.mark.parametrize(
    ("check", "wrong", "cause"),
    [
        (
            unit3.check_gae_one_env,
            gae_without_episode_resets,
            "your advantage at step 2 (the largest gap in your advantages) carries across the "
            "episode end at step 2 (that same step) into the next episode: reset the running sum "
            "when an episode terminates or is truncated",
        ),
        (
            unit3.check_gae_one_env,
            gae_without_reset_after_time_limits,
            "your advantage at step 2 (the largest gap in your advantages) carries across the "
            "episode end at step 2 (that same step) into the next episode: reset the running sum "
            "when an episode terminates or is truncated",
        ),
        (
            unit3.check_gae_one_env,
            gae_bootstrapping_at_game_overs,
            "your TD error at step 2 bootstraps from next_values[2] although the episode "
            "terminated there (game over)",
        ),
        (
            unit3.check_gae_one_env,
            gae_with_the_truncation_bug,
            "your TD error at step 2 drops the bootstrap although a time limit truncated",
        ),
        (
            unit3.check_gae_one_env,
            gae_resetting_after_storing,
            "you reset the running sum after storing the advantage of step 2, where an episode "
            "ends: that advantage still carries the next episode's",
        ),
        (
            unit3.check_gae_one_env,
            gae_without_lambda,
            "you carry gamma * A_(t+1) back without lam (as if lam = 1): each step back multiplies "
            "the running sum by gamma * lam",
        ),
        (
            unit3.check_truncation_fix,
            pair_without_lambda,
            "you carry gamma * A_(t+1) back without lam",
        ),
        (
            unit3.check_truncation_fix,
            half_fixed,
            "your TD error at step 2 drops the bootstrap although a time limit truncated",
        ),
        (
            unit3.check_truncation_fix,
            returns_bootstrapping_at_game_overs,
            "your return at step 2 (the largest gap in your returns) restarts from "
            "next_values[2] at the game over at step 2",
        ),
        (
            unit3.check_truncation_fix,
            returns_without_resets,
            "your return at step 2 (the largest gap in your returns) carries across the episode "
            "end at step 2 (that same step) into the next episode",
        ),
    ],
)
def test_the_check_names_the_likely_cause(check, wrong, cause, capsys):
    assert check(wrong) is False
    out = capsys.readouterr().out
    assert f"likely cause: {cause}" in out, out
    assert "expected:" in out and "got:" in out


def test_the_cause_names_the_later_episode_end_where_the_carry_crosses(capsys):
    """On the 20-step case (a game over after step 4, a time limit after step 12) a learner who
    resets only after game overs is wrong from step 5 to 12, because of the end at step 12 (not
    the one at step 4); the cause names the step of the largest gap, the one the verdict shows."""
    case = unit3._rollout_cases("advantages")[-1]
    got = gae_without_reset_after_time_limits(*case.args)
    cause = unit3.likely_cause(case, got, "advantage")
    assert "largest gap at index (12,)" in unit3.close(got, case.expected)
    assert cause.startswith(
        "your advantage at step 12 (the largest gap in your advantages) carries across the "
        "episode end at step 12"
    )


@pytest.mark.parametrize(
    ("check", "wrong"),
    [
        (unit3.check_gae_one_env, gae_without_episode_resets),
        (unit3.check_gae_one_env, gae_without_reset_after_time_limits),
        (unit3.check_gae_one_env, gae_resetting_after_storing),
        (unit3.check_truncation_fix, returns_bootstrapping_at_game_overs),
        (unit3.check_truncation_fix, returns_without_resets),
    ],
)
def test_the_cause_gives_the_step_of_the_largest_gap_the_verdict_shows(check, wrong, capsys):
    """Not "largest gap at index (2,)" above "your advantage at step 0 ...": the step the cause
    names for the learner's values is the index the verdict shows."""
    assert check(wrong) is False
    out = capsys.readouterr().out
    index = re.search(r"largest gap at index \((\d+),\)", out)[1]
    cause = next(line for line in out.splitlines() if "likely cause:" in line)
    steps = re.findall(r"(?:your \w+ at step|the largest gap is at step) (\d+)", cause)
    assert steps and set(steps) == {index}, (index, cause)


def gae_with_one_minus_flags(rewards, values, next_values, terminated, truncated, gamma, lam):
    """The textbook's (1 - done) written on the bool flags: PyTorch refuses `-` on bool tensors."""
    advantages, following = torch.zeros_like(rewards), 0.0
    for t in reversed(range(len(rewards))):
        following = following * (1 - terminated[t]) * (1 - truncated[t])
        delta = rewards[t] + gamma * next_values[t] * (1 - terminated[t]) - values[t]
        following = delta + gamma * lam * following
        advantages[t] = following
    return advantages


def gae_with_negated_flags(rewards, values, next_values, terminated, truncated, gamma, lam):
    """The same with the fixes the message suggests: ~flag, not flag, .float()."""
    advantages, following = torch.zeros_like(rewards), 0.0
    for t in reversed(range(len(rewards))):
        following = following * (~terminated[t]) * (not truncated[t])
        delta = rewards[t] + gamma * next_values[t] * (1 - terminated[t].float()) - values[t]
        following = delta + gamma * lam * following
        advantages[t] = following
    return advantages


def pair_with_one_minus_flags(rewards, values, next_values, terminated, truncated, gamma, lam):
    args = (rewards, values, next_values, terminated, truncated, gamma, lam)
    return gae_with_one_minus_flags(*args), fixed_advantages_and_returns(*args)[1]


BOOL_FLAGS = (
    "terminated and truncated are bool tensors: use `~terminated[t]` (or `not terminated[t]`, "
    "or `.float()`) instead of `1 - terminated[t]`"
)


@pytest.mark.parametrize(
    ("check", "wrong", "exercise_id"),
    [
        (unit3.check_gae_one_env, gae_with_one_minus_flags, "3.2"),
        (unit3.check_truncation_fix, pair_with_one_minus_flags, "3.3"),
    ],
)
def test_one_minus_a_bool_flag_is_named_in_one_line(check, wrong, exercise_id, capsys):
    """Not PyTorch's RuntimeError about `-` on bool tensors: what to write instead, one line."""
    assert check(wrong) is False
    assert capsys.readouterr().out == f"FAILED [{exercise_id}] {wrong.__name__}: {BOOL_FLAGS}\n"


def test_the_fixes_the_bool_message_suggests_pass(capsys):
    assert unit3.check_gae_one_env(gae_with_negated_flags) is True


def test_other_runtime_errors_are_reported_as_they_are(capsys):
    def broken(rewards, values, next_values, terminated, truncated, gamma, lam):
        raise RuntimeError("shapes cannot be multiplied")

    assert unit3.check_gae_one_env(broken) is False
    out = capsys.readouterr().out
    assert "it raised RuntimeError: shapes cannot be multiplied" in out


def test_no_cause_is_named_for_an_unrelated_mistake(capsys):
    """An off-by-one is not one of the known mistakes: the verdict shows only expected and got."""
    assert unit3.check_gae_one_env(gae_off_by_one) is False
    assert "likely cause" not in capsys.readouterr().out


def test_the_hints_escalate_in_three_steps():
    assert set(unit3.HINTS) == {"3.1", "3.2", "3.3"}
    assert all(len(hints) == 3 for hints in unit3.HINTS.values())


def test_the_buggy_function_agrees_with_the_package_without_time_limits():
    """So the bug really is the truncation handling, and only that."""
    rewards = torch.tensor([1.0, 0.0, 1.0, 0.0])
    values = torch.tensor([0.5, 0.1, 0.4, 0.2])
    next_values = torch.tensor([0.1, 0.9, 0.2, 0.3])
    terminated = torch.tensor([False, True, False, False])
    no_limit = torch.zeros(4, dtype=torch.bool)
    advantages, returns = unit3.buggy_advantages_and_returns(
        rewards, values, next_values, terminated, no_limit, 0.9, 0.95
    )
    torch.testing.assert_close(
        advantages, gae(rewards, values, next_values, terminated, no_limit, 0.9, 0.95)
    )
    torch.testing.assert_close(
        returns, n_step_returns(rewards, next_values, terminated, no_limit, 0.9)
    )


def test_the_references_are_explicit_sums():
    """Spot-check the checks' own references on numbers worked by hand."""
    expected = unit3._explicit_discounted_returns([1.0, 1.0, 1.0], 0.5)
    assert expected.tolist() == [1.75, 1.5, 1.0]
    advantages, returns = unit3._explicit_gae_and_returns(
        [1.0, 0.0], [1.0, 2.0], [4.0, 6.0], [False, False], [True, False], 0.5, 0.5
    )
    assert advantages.tolist() == [2.0, 1.0]  # truncated: 1 + 0.5*4 - 1; then 0 + 0.5*6 - 2
    assert returns.tolist() == [3.0, 3.0]


def _returns_with(mistake):
    """discounted_returns written with one known slip."""

    def discounted_returns(rewards, gamma):
        if mistake == "rewards only":
            return rewards.clone()
        if mistake == "reversed order":
            backwards, following = [], 0.0
            for t in reversed(range(len(rewards))):
                following = float(rewards[t]) + gamma * following
                backwards.append(following)
            return torch.tensor(backwards)
        out = torch.zeros(len(rewards), dtype=torch.long if mistake == "integers" else None)
        following = 0.0
        steps = range(len(rewards)) if mistake == "forwards" else reversed(range(len(rewards)))
        for t in steps:
            if mistake == "without own reward":
                out[t] = gamma * following
            if mistake == "store before adding":
                out[t] = following
            following = (
                gamma * (rewards[t] + following)
                if mistake == "discounts own reward"
                else rewards[t] + (1.0 if mistake == "no discount" else gamma) * following
            )
            if mistake not in ("without own reward", "store before adding"):
                out[t] = following
        return out.tolist() if mistake == "a list" else out

    return discounted_returns


@pytest.mark.parametrize(
    "mistake, words",
    [
        ("forwards", "each G_t adds up the rewards before t"),
        ("reversed order", "or the right returns in reverse order"),  # [1, 1, 1] tells no more
        ("rewards only", "each G_t is just r_t"),
        ("without own reward", "each G_t leaves out r_t itself"),
        ("store before adding", "you store G_t before adding r_t"),
        ("discounts own reward", "you discount r_t too"),
        ("no discount", "without gamma"),
        ("integers", "your returns are integers"),
        ("a list", "return a torch tensor of shape (T,), got a list"),
    ],
)
def test_3_1_each_known_mistake_is_named(mistake, words, capsys):
    assert unit3.check_discounted_returns(_returns_with(mistake)) is False
    assert words in capsys.readouterr().out
    assert unit3.check_discounted_returns(_returns_with("none")) is True


def test_3_2_bootstrapping_from_the_next_episodes_first_value_is_named(capsys):
    # values[t + 1] stands for the next state's value until a time limit resets the game
    def gae_one_env(rewards, values, next_values, terminated, truncated, gamma, lam):
        advantages, running = torch.zeros(len(rewards)), 0.0
        for t in reversed(range(len(rewards))):
            following = values[t + 1] if t + 1 < len(rewards) else next_values[t]
            delta = rewards[t] + gamma * (0.0 if terminated[t] else following) - values[t]
            running = delta + gamma * lam * (0.0 if terminated[t] or truncated[t] else running)
            advantages[t] = running
        return advantages

    assert unit3.check_gae_one_env(gae_one_env) is False
    out = capsys.readouterr().out
    assert "likely cause: your TD error at step 2 bootstraps from values[3]" in out
    assert "bootstrap from next_values[2]" in out
