"""How much of a trained network's conv body is silent (for ReLU: dead for good)?

    .venv/bin/python benchmarks/dead_units.py runs/breakout/checkpoint.pt runs/breakout/snapshots/*.pt
    .venv/bin/python benchmarks/dead_units.py --pretrained breakout pong

For each checkpoint: the fraction of each conv layer's channels that output nothing above 0 on 60
screens of random play of the checkpoint's game (`a3c_course.lessons.diagnostics`). A ReLU run whose last
layer is all silent plays the same policy on every screen and cannot learn any more.
"""

from __future__ import annotations

import argparse
import sys

from a3c_course.lessons import pretrained
from a3c_course.lessons.diagnostics import random_play_frames, silent_units
from a3c_course.training.checkpoint import load_checkpoint, model_from_checkpoint


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoints", nargs="*", help="checkpoint files")
    parser.add_argument("--pretrained", nargs="*", default=[], metavar="GAME",
                        help="the course's shipped agents for these games")  # fmt: skip
    parser.add_argument("--frames", type=int, default=60, help="screens of random play (60)")
    args = parser.parse_args(argv)
    checkpoints = [(path, load_checkpoint(path)) for path in args.checkpoints]
    checkpoints += [(f"pretrained {g}", pretrained.checkpoint(g)) for g in args.pretrained]
    if not checkpoints:
        parser.error("name at least one checkpoint or --pretrained GAME")
    frames = {}
    print("| checkpoint | activation | steps | layer 1 | layer 2 | layer 3 | layer 4 |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, checkpoint in checkpoints:
        model = model_from_checkpoint(checkpoint)
        game, size = checkpoint.config.game, model.obs_shape[-1]  # the frames it reads
        if (game, size) not in frames:
            frames[game, size] = random_play_frames(game, args.frames, size=size)
        fractions = silent_units(model, frames[game, size])
        steps = checkpoint.metadata.get("steps") or 0
        cells = " | ".join(f"{value:.0%}" for value in fractions.values())
        print(f"| {name} | {checkpoint.config.activation} | {steps:,} | {cells} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
