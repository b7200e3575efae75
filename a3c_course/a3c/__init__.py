"""The algorithm: A3C itself, in the order the units build it. Read these files first.

    envs.py     Unit 1   the Atari screen -> a small grey frame; sticky actions, frame skip, clipping
    model.py    Unit 2   the conv + LSTM actor-critic network; sampled and greedy actions
    returns.py  Unit 3   n-step returns, TD errors, GAE and the A3C loss
    optim.py    Unit 4   Adam and RMSProp whose state lives in shared memory
    worker.py   Unit 4   one worker's step: pull the weights, roll out, one rollout's gradient, push

Nothing here knows about processes, runs or files: the training machinery (a3c_course.training)
runs these pieces in parallel and keeps the results.
"""
