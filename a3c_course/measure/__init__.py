"""How fast training runs and where its time goes: used by notebook 04 and 05 and by benchmarks/.

    throughput.py   raw emulator speed and the trainer's agent steps per second
    profiling.py    one worker's time split into its parts; each layer of the network timed alone
    scaling.py      how many workers one parameter server feeds: compute and network ceilings
"""
