"""Unit 5's solutions: a parameter server's push, and how many workers one server feeds."""


class ParameterServer:
    """Holds the network and its optimizer; applies each pushed gradient the moment it arrives."""

    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer
        self.updates = 0  # gradients applied so far: the version of the weights
        self.steps = 0  # agent steps behind those gradients

    def pull(self):
        """The weights' version and a copy of the weights."""
        return self.updates, [p.detach().clone() for p in self.model.parameters()]

    def push(self, grads, pulled_at, steps):
        """Apply one worker's gradient (one tensor per parameter) with one optimizer step, count
        the update in self.updates, add its agent steps to self.steps, and return the gradient's
        staleness: the updates applied since that worker pulled version pulled_at."""
        ### BEGIN SOLUTION
        staleness = self.updates - pulled_at  # before counting this one
        for param, grad in zip(self.model.parameters(), grads, strict=True):
            param.grad = grad
        self.optimizer.step()
        self.updates += 1
        self.steps += steps
        return staleness
        ### END SOLUTION


def workers_one_server_feeds(
    apply_s, reply_s, model_bytes, worker_steps_per_s, steps_per_update, gbit_per_s
):
    """How many workers one parameter server can feed before it saturates: its updates/s limit
    (the smaller of 1 / (apply_s + reply_s) and the link's bytes/s over model_bytes) divided by
    one worker's updates/s. gbit_per_s is the link's speed: 1e9 bits a second each, 8 bits a
    byte."""
    ### BEGIN SOLUTION
    compute = 1 / (apply_s + reply_s)
    network = gbit_per_s * 1e9 / 8 / model_bytes
    per_worker = worker_steps_per_s / steps_per_update
    return min(compute, network) / per_worker
    ### END SOLUTION
