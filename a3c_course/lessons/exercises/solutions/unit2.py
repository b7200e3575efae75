"""Unit 2's solutions: entropy, softmax, one LSTM cell step."""

import torch


def entropy_from_logits(logits):
    """H(pi) = -sum_a pi(a) log pi(a) over the last axis of logits."""
    ### BEGIN SOLUTION
    log_p = torch.log_softmax(logits, dim=-1)
    return -(log_p.exp() * log_p).sum(dim=-1)
    ### END SOLUTION


def action_probabilities(logits):
    """pi(.|s) for logits of shape (..., n_actions); each row sums to 1."""
    ### BEGIN SOLUTION
    shifted = logits - logits.max(dim=-1, keepdim=True).values
    weights = shifted.exp()
    return weights / weights.sum(dim=-1, keepdim=True)
    ### END SOLUTION


def lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    """One LSTMCell step: returns (h_new, c_new), each (B, H)."""
    ### BEGIN SOLUTION
    gates = x @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh  # (B, 4H)
    i, f, g, o = gates.chunk(4, dim=1)  # PyTorch's order: input, forget, cell, output
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    h_new = torch.sigmoid(o) * torch.tanh(c_new)
    return h_new, c_new
    ### END SOLUTION
