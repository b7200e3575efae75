"""The machinery that trains the algorithm of a3c_course.a3c and keeps what a run makes.

    config.py           TrainConfig: every setting of a run, validated, with its command-line name
    trainer.py          train(): the parent's loop (budgets, metrics, progress, checkpoints)
    backend.py          the Backend protocol that both backends implement, and make_backend
    hogwild.py          worker processes on one machine sharing one model in shared memory
    parameter_server.py the parameter server's arithmetic (plain PyTorch, no Ray)
    ray_backend.py      worker actors on a Ray cluster around a parameter server
    worker_loop.py      what each worker runs: the A3C step until the run stops
    processes.py        what every child process does (start-up, stop, crash reports)
    evaluate.py         greedy games under the protocol, in a process of their own or in bulk
    checkpoint.py       checkpoints: saved atomically, loaded weights-only, checked
    run_record.py       a run folder's files: config, metrics, optimizer state, snapshots
    run_folder.py       the folder while its run trains: the metrics log, a deleted folder noticed
    runlock.py          one run per folder (an operating-system file lock)
    files.py            one atomic write (with fsync) for every file a run keeps; StorageError
    seeds.py            every seed of a run, derived from its one seed: two runs share none
"""
