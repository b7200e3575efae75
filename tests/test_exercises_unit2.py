"""Unit 2's checks: a correct solution passes, a stub is not attempted, typical mistakes are caught
with a message that says what is wrong."""

import itertools

import numpy as np
import pytest
import torch

from a3c_course.lessons.exercises import Case, unit2, unit2_mistakes
from a3c_course.lessons.exercises.unit2 import (
    HINTS,
    check_action_probabilities,
    check_entropy_from_logits,
    check_lstm_cell,
)


def stub(*args):
    raise NotImplementedError


def verdict(capsys):
    return capsys.readouterr().out


# ---------------------------------------------------------------- 2.1


def entropy_from_logits(logits):
    log_p = torch.log_softmax(logits, dim=-1)
    return -(log_p.exp() * log_p).sum(dim=-1)


def naive_entropy(logits):
    p = logits.exp() / logits.exp().sum(dim=-1, keepdim=True)
    return -(p * p.log()).sum(dim=-1)


def test_2_1_solution_passes(capsys):
    assert check_entropy_from_logits(entropy_from_logits)
    assert verdict(capsys).startswith("PASSED [2.1] entropy_from_logits: all 7 cases agree")


def test_2_1_stub_is_not_attempted(capsys):
    assert not check_entropy_from_logits(stub)
    assert verdict(capsys).startswith("NOT ATTEMPTED [2.1]")


def test_2_1_naive_softmax_overflows_and_is_told_why(capsys):
    assert not check_entropy_from_logits(naive_entropy)
    out = verdict(capsys)
    assert out.startswith("FAILED [2.1] naive_entropy: on very large logits [[1000, 999, 0]]")
    assert "NaN or inf" in out and "log_softmax" in out


def test_2_1_log_of_a_stable_softmax_still_fails_on_probabilities_that_round_to_0(capsys):
    def log_of_softmax(logits):
        p = torch.softmax(logits, dim=-1)  # no overflow, but exp(-1000) rounds to 0
        return -(p * p.log()).sum(dim=-1)  # 0 * log 0 = 0 * -inf = NaN

    assert not check_entropy_from_logits(log_of_softmax)
    out = verdict(capsys)
    assert "on very large logits" in out and "log(0) = -inf" in out


def test_2_1_wrong_axis_is_caught_with_the_shape(capsys):
    def over_the_batch(logits):
        log_p = torch.log_softmax(logits, dim=0)
        return -(log_p.exp() * log_p).sum(dim=0)

    assert not check_entropy_from_logits(over_the_batch)
    out = verdict(capsys)
    assert "FAILED [2.1]" in out and "expected:" in out and "got:" in out


def test_2_1_missing_minus_sign_shows_expected_and_got(capsys):
    assert not check_entropy_from_logits(lambda logits: -entropy_from_logits(logits))
    out = verdict(capsys)
    assert "on uniform logits for 6 actions" in out
    assert "expected: [1.7918]" in out and "got:      [-1.7918]" in out


def test_2_1_a_detour_through_numpy_is_caught(capsys):
    def detached(logits):
        return entropy_from_logits(logits).detach()

    assert not check_entropy_from_logits(detached)
    assert "cut off from the logits' graph" in verdict(capsys)


# ---------------------------------------------------------------- 2.2


def buggy_action_probabilities(logits):
    shifted = logits - logits.max(dim=0, keepdim=True).values
    weights = shifted.exp()
    return weights / weights.sum(dim=0, keepdim=True)


def action_probabilities(logits):
    shifted = logits - logits.max(dim=-1, keepdim=True).values
    weights = shifted.exp()
    return weights / weights.sum(dim=-1, keepdim=True)


def test_2_2_fixed_function_and_torch_softmax_pass(capsys):
    assert check_action_probabilities(action_probabilities)
    assert check_action_probabilities(lambda logits: torch.softmax(logits, dim=-1))
    assert verdict(capsys).count("PASSED [2.2]") == 2


def test_2_2_stub_is_not_attempted(capsys):
    assert not check_action_probabilities(stub)
    assert verdict(capsys).startswith("NOT ATTEMPTED [2.2]")


def test_2_2_the_bug_passes_one_state_and_fails_a_batch(capsys):
    assert not check_action_probabilities(buggy_action_probabilities)
    out = verdict(capsys)
    # the single unbatched state is right (dim=0 is the action axis there): the first failure is
    # the batch of one, where dim=0 normalises each action over a single state
    assert "on a batch of one state, shape (1, 4)" in out
    assert "must sum to 1; yours sum to [4.]" in out


def test_2_2_half_a_fix_is_still_caught(capsys):
    def only_the_sum_fixed(logits):
        shifted = logits - logits.max(dim=0, keepdim=True).values
        weights = shifted.exp()
        return weights / weights.sum(dim=-1, keepdim=True)

    def only_the_max_fixed(logits):
        shifted = logits - logits.max(dim=-1, keepdim=True).values
        weights = shifted.exp()
        return weights / weights.sum(dim=0, keepdim=True)

    assert not check_action_probabilities(only_the_sum_fixed)
    out = verdict(capsys)  # each logit minus its own column's max: 0 everywhere, a uniform policy
    assert "FAILED [2.2] only_the_sum_fixed: on a batch of one state" in out
    assert "got:      [[0.25 0.25 0.25 0.25]]" in out
    assert not check_action_probabilities(only_the_max_fixed)
    assert "FAILED [2.2] only_the_max_fixed: on a batch of one state" in verdict(capsys)


def test_2_2_dim_1_works_for_a_batch_but_not_for_one_state_or_a_rollout(capsys):
    assert not check_action_probabilities(lambda logits: torch.softmax(logits, dim=1))
    assert "on one state, shape (4,) it raised IndexError" in verdict(capsys)


def test_2_2_no_max_subtraction_overflows(capsys):
    def unstable(logits):
        return logits.exp() / logits.exp().sum(dim=-1, keepdim=True)

    assert not check_action_probabilities(unstable)
    out = verdict(capsys)
    assert "on large logits" in out and "NaN or inf" in out


def softmax_with(max_dim=-1, sum_dim=-1):
    """action_probabilities as a learner writes it, with the max and the sum over the given axes
    (None: with no dim, over the whole batch)."""

    def action_probabilities(logits):
        top = logits.max() if max_dim is None else logits.max(dim=max_dim, keepdim=True).values
        weights = (logits - top).exp()
        return weights / (
            weights.sum() if sum_dim is None else weights.sum(dim=sum_dim, keepdim=True)
        )

    return action_probabilities


def log_sum_exp_over_the_batch(logits):
    return (logits - torch.logsumexp(logits, dim=0, keepdim=True)).exp()


SUMS_OVER_STATES = "likely cause: you normalise over dim=0, an axis of states"


@pytest.mark.parametrize(
    "wrong, cause",
    [  # a batch of one state fails first; it cannot show where the max was: the sum is named
        (buggy_action_probabilities, SUMS_OVER_STATES),
        (log_sum_exp_over_the_batch, SUMS_OVER_STATES),
        (softmax_with(max_dim=0), "likely cause: you subtract the max over dim=0, an axis of states"),
        (softmax_with(max_dim=None), "likely cause: you subtract the largest logit of the whole batch"),
        (softmax_with(sum_dim=None), "likely cause: weights.sum() with no dim adds up the whole batch"),
        (softmax_with(None, None), "likely cause: your softmax runs over the whole batch"),
    ],
    ids=["the-bug", "log-sum-exp-dim-0", "max-dim-0", "max-no-dim", "sum-no-dim", "no-dims"],
)  # fmt: skip
def test_2_2_each_wrong_axis_is_named(wrong, cause, capsys):
    assert not check_action_probabilities(wrong)
    out = verdict(capsys)
    assert cause in out and "dim=-1" in out
    assert out.count("likely cause") == 1 and (cause == SUMS_OVER_STATES) == (
        SUMS_OVER_STATES in out
    )


def test_2_2_a_softmax_over_the_environments_of_a_rollout_is_named_with_its_axis():
    rollout = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0))
    cause = unit2_mistakes.probabilities_cause(Case("", (rollout,), None), rollout.softmax(dim=1))
    assert cause.startswith("you normalise over dim=1, an axis of states")


def test_2_2_an_unknown_mistake_names_no_cause(capsys):
    assert not check_action_probabilities(lambda logits: action_probabilities(logits * 1.1))
    assert "likely cause" not in verdict(capsys)


# ---------------------------------------------------------------- 2.3


def lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    gates = x @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh
    i, f, g, o = gates.chunk(4, dim=1)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c_new), c_new


def test_2_3_solution_passes(capsys):
    assert check_lstm_cell(lstm_cell)
    assert verdict(capsys).startswith("PASSED [2.3] lstm_cell: all 3 cases agree")


def test_2_3_stub_is_not_attempted(capsys):
    assert not check_lstm_cell(stub)
    assert verdict(capsys).startswith("NOT ATTEMPTED [2.3]")


def test_2_3_gates_in_the_wrong_order_are_named(capsys):
    def i_g_f_o(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
        gates = x @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh
        i, g, f, o = gates.chunk(4, dim=1)  # the order of the equations in many textbooks
        c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c_new), c_new

    assert not check_lstm_cell(i_g_f_o)
    out = verdict(capsys)
    assert out.startswith(
        "FAILED [2.3] i_g_f_o: on a batch of 1, 5 inputs, hidden 3, zero state: h_new:"
    )
    assert "your gates read the four chunks as i, g, f, o" in out
    assert "PyTorch's LSTMCell stacks them as input, forget, cell (g), output" in out


def test_2_3_sigmoid_where_tanh_belongs_is_named(capsys):
    def sigmoid_candidate(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
        gates = x @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh
        i, f, g, o = torch.sigmoid(gates).chunk(4, dim=1)  # one sigmoid for all four
        c_new = f * c + i * g
        return o * torch.tanh(c_new), c_new

    def sigmoid_output(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
        gates = x @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh
        i, f, g, o = gates.chunk(4, dim=1)
        c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.sigmoid(c_new), c_new

    assert not check_lstm_cell(sigmoid_candidate)
    assert "g, the candidate to write, takes tanh" in verdict(capsys)
    assert not check_lstm_cell(sigmoid_output)
    assert "the cell state goes through tanh, not sigmoid" in verdict(capsys)


def test_2_3_a_forgotten_recurrent_term_is_named(capsys):
    def no_recurrence(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
        return lstm_cell(x, torch.zeros_like(h), c, weight_ih, weight_hh, bias_ih, bias_hh)

    assert not check_lstm_cell(no_recurrence)
    out = verdict(capsys)  # a zero state hides it: the first failure is the carried state
    assert "on a batch of 4, 288 inputs, hidden 16, a carried state: h_new" in out
    assert "the gates ignore the previous h" in out


def test_2_3_a_forgotten_bias_and_the_old_cell_state_are_named(capsys):
    def one_bias(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
        return lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, torch.zeros_like(bias_hh))

    def old_c(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
        gates = x @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh
        i, f, g, o = gates.chunk(4, dim=1)
        c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c_new

    assert not check_lstm_cell(one_bias)
    assert "two biases, bias_ih and bias_hh: one is missing" in verdict(capsys)
    assert not check_lstm_cell(old_c)
    assert "not from the old c" in verdict(capsys)


def test_2_3_h_and_c_swapped_or_a_single_tensor_are_explained(capsys):
    assert not check_lstm_cell(lambda *args: lstm_cell(*args)[::-1])
    out = verdict(capsys)
    assert "h_new: values differ" in out and "yours returns (c_new, h_new)" in out
    assert not check_lstm_cell(lambda *args: lstm_cell(*args)[0])
    assert "return a pair (h_new, c_new), got a Tensor" in verdict(capsys)


def mistake_id(mistake: dict) -> str:
    """The same id in every process (pytest-xdist compares them): names, not object addresses."""
    return ",".join(f"{key}={getattr(value, '__name__', value)}" for key, value in mistake.items())


@pytest.mark.parametrize(
    "mistake, cause",
    unit2_mistakes.gate_order_mistakes() + unit2_mistakes.LSTM_MISTAKES,
    ids=lambda value: mistake_id(value) if isinstance(value, dict) else None,
)
def test_2_3_every_named_mistake_is_recognised(mistake, cause, capsys):
    assert not check_lstm_cell(lambda *args: unit2_mistakes.lstm_variant(args, **mistake))
    assert f"likely cause: {cause}." in verdict(capsys)


def test_2_3_an_unknown_mistake_names_no_cause(capsys):
    assert not check_lstm_cell(lambda *args: (lstm_cell(*args)[0] * 1.01, lstm_cell(*args)[1]))
    out = verdict(capsys)
    assert "h_new: values differ" in out and "likely cause" not in out


def lstm_with(order="ifgo", squash=torch.tanh, new_c_for_h=True, candidate=torch.tanh, uses_h=True):
    """The learner's cell as a learner writes it, with the chosen mistakes."""

    def lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
        gates = x @ weight_ih.T + bias_ih + (h @ weight_hh.T if uses_h else 0) + bias_hh
        chunks = dict(zip(order, gates.chunk(4, dim=1), strict=True))
        i, f, o = (torch.sigmoid(chunks[name]) for name in "ifo")
        c_new = f * c + i * candidate(chunks["g"])
        return o * squash(c_new if new_c_for_h else c), c_new

    return lstm_cell


def test_2_3_h_new_and_c_new_are_printed_apart_under_their_shape(capsys):
    """Not the pair stacked into one unlabelled (2, 1, 3) array under "a batch of 1": each half
    labelled, expected above got, under the shape (batch, hidden) that the description gives."""
    wrong = lstm_with(candidate=torch.sigmoid)
    assert not check_lstm_cell(wrong)
    lines = verdict(capsys).splitlines()
    assert lines[0].startswith(
        "FAILED [2.3] lstm_cell: on a batch of 1, 5 inputs, hidden 3, zero state: h_new: values"
    )
    assert lines[1].startswith("  likely cause: g, the candidate to write, takes tanh")
    assert lines[2] == "  h_new and c_new each have shape (batch, hidden) = (1, 3):"
    case = unit2._lstm_case("first", 1, 5, 3, seed=231, zero_state=True)
    got = wrong(*case.args)
    shown = [
        f"  {name} {label} {np.array2string(value.detach().numpy(), precision=4)}"
        for name, expected, mine in zip(("h_new", "c_new"), case.expected, got, strict=True)
        for label, value in (("expected:", expected), ("got:     ", mine))
    ]
    assert lines[3:] == shown
    assert all(np.asarray(value).shape == (1, 3) for value in (*case.expected, *got))


def test_2_3_two_mistakes_at_once_are_both_named(capsys):
    assert not check_lstm_cell(lstm_with(order="igfo", squash=lambda c: c))
    out = verdict(capsys)
    assert "likely cause: your gates read the four chunks as i, g, f, o" in out
    assert "; and h_new = o * tanh(c_new): the tanh of the cell state is missing." in out
    assert not check_lstm_cell(lstm_with(candidate=torch.sigmoid, new_c_for_h=False))
    out = verdict(capsys)
    assert "g, the candidate to write, takes tanh" in out and "not from the old c" in out


def test_2_3_a_mistake_a_zero_state_hides_is_named_with_the_one_it_shows(capsys):
    assert not check_lstm_cell(lstm_with(order="ifog", uses_h=False))
    out = verdict(capsys)  # the zero state fails first; the cause is read on a carried state
    assert "on a batch of 1, 5 inputs, hidden 3, zero state" in out
    assert "chunks as i, f, o, g" in out and "the gates ignore the previous h" in out


def test_2_3_one_sigmoid_for_all_four_in_the_textbook_order_names_the_nearest_order(capsys):
    def all_sigmoid_igfo(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
        gates = torch.sigmoid(x @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh)
        i, g, f, o = gates.chunk(4, dim=1)  # i * g: i's chunk and g's cannot be told apart
        c_new = f * c + i * g
        return o * torch.tanh(c_new), c_new

    assert not check_lstm_cell(all_sigmoid_igfo)
    out = verdict(capsys)
    assert out.count("your gates read the four chunks as") == 1 and "as i, g, f, o;" in out
    assert "g, the candidate to write, takes tanh" in out


def test_2_3_every_set_of_up_to_two_mistakes_gives_its_own_cell():
    """What lstm_causes relies on: on the diagnosis case, two sets of mistakes give the same cell
    only when they differ in gate orders that swap i and g."""
    args = tuple(a.double().numpy() for a in unit2._lstm_case("diagnosis", 3, 4, 5, seed=234).args)
    catalogue = unit2_mistakes.gate_order_mistakes() + unit2_mistakes.LSTM_MISTAKES
    cells = {}
    for size in (0, 1, 2):
        for combo in itertools.combinations(range(len(catalogue)), size):
            merged = [item for i in combo for item in catalogue[i][0].items()]
            if len({key for key, _ in merged}) == len(merged):
                cells[combo] = np.concatenate(unit2_mistakes.lstm_variant(args, **dict(merged)))
    combos = list(cells)
    flat = np.stack([cells[combo].ravel() for combo in combos])
    gaps = np.abs(flat[:, None] - flat[None]).max(axis=-1)

    def without_order(combo):
        return sorted(catalogue[i][1] for i in combo if "order" not in catalogue[i][0])

    for a, b in zip(*np.nonzero(gaps < 1e-3), strict=True):
        if a < b:
            assert without_order(combos[a]) == without_order(combos[b]), (combos[a], combos[b])


def test_2_3_reference_is_torch_lstm_cell():
    """The check's reference is nn.LSTMCell itself, independent of the solution above."""
    torch.manual_seed(0)
    cell = torch.nn.LSTMCell(7, 5)
    x, h, c = torch.randn(3, 7), torch.randn(3, 5), torch.randn(3, 5)
    with torch.no_grad():
        expected = cell(x, (h, c))
        got = lstm_cell(x, h, c, cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g.numpy(), e.numpy(), atol=1e-6)


@pytest.mark.parametrize("exercise_id", ["2.1", "2.2", "2.3"])
def test_each_exercise_has_two_or_three_hints(exercise_id):
    assert 2 <= len(HINTS[exercise_id]) <= 3
    assert all(isinstance(hint, str) and hint for hint in HINTS[exercise_id])


def test_2_2_a_max_or_sum_without_keepdim_is_named(capsys):
    def action_probabilities(logits):
        weights = torch.exp(logits - logits.max(dim=-1).values)
        return weights / weights.sum(dim=-1)

    assert unit2.check_action_probabilities(action_probabilities) is False
    out = capsys.readouterr().out
    assert "without keepdim=True" in out and "must match" not in out


def test_2_2_exp_of_the_raw_logits_is_named_with_the_fix_for_probabilities(capsys):
    def action_probabilities(logits):
        weights = torch.exp(logits)
        return weights / weights.sum(dim=-1, keepdim=True)

    assert unit2.check_action_probabilities(action_probabilities) is False
    out = capsys.readouterr().out
    assert "likely cause: you take exp() of the logits as they are" in out
    assert "log_softmax" not in out  # 2.1's advice does not fit a function returning probabilities


@pytest.mark.parametrize(
    "reduce, words",
    [(lambda t: t.sum(dim=0), "you add up over dim=0"), (lambda t: t.sum(), "with no dim")],
)
def test_2_1_an_entropy_summed_over_the_wrong_axes_is_named(reduce, words, capsys):
    def entropy_from_logits(logits):
        log_p = torch.log_softmax(logits, dim=-1)
        return -reduce(log_p.exp() * log_p)

    assert unit2.check_entropy_from_logits(entropy_from_logits) is False
    assert words in capsys.readouterr().out


def test_2_2_an_overflow_is_not_explained_with_a_log(capsys):
    def action_probabilities(logits):
        weights = torch.exp(logits)
        return weights / weights.sum(dim=-1, keepdim=True)

    unit2.check_action_probabilities(action_probabilities)
    assert "log(0)" not in capsys.readouterr().out
