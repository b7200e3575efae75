"""The `a3c-course evaluate` and `a3c-course play` subcommands: score a checkpoint, or film it.

    a3c-course evaluate --pretrained breakout --episodes 30
    a3c-course play --checkpoint runs/pong/checkpoint.pt --out pong.mp4

Both take a checkpoint by path (--checkpoint) or the course's shipped agent (--pretrained GAME).
main.py lists them in `commands()`.
"""

from __future__ import annotations

import argparse
import os

from a3c_course.a3c.envs import STICKY_ACTIONS
from a3c_course.cli.common import EXIT_OK, UsageError, add_command, check_writable, positive_int
from a3c_course.training.checkpoint import CheckpointError, check_game, load_checkpoint

# -- evaluate ------------------------------------------------------------------------------------


def add_evaluate(subparsers) -> None:
    from a3c_course.training.evaluate import DEFAULT_MAX_STEPS_PER_EPISODE

    parser = add_command(
        subparsers,
        "evaluate",
        run_evaluate,
        "play episodes with a trained checkpoint and print its raw scores",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--checkpoint", metavar="PATH", help="checkpoint file (checkpoint.pt)")
    source.add_argument(
        "--pretrained", metavar="GAME", help="the course's shipped agent for GAME, e.g. pong"
    )
    parser.add_argument("--episodes", type=positive_int, default=10, help="episodes to play")
    parser.add_argument("--game", default=None, help="game to play (default: the checkpoint's own)")
    parser.add_argument(
        "--sample",
        action="store_true",
        help="sample actions from the policy instead of taking the most probable one",
    )
    parser.add_argument(
        "--max-steps",
        type=positive_int,
        default=DEFAULT_MAX_STEPS_PER_EPISODE,
        help="cut an episode after this many agent steps",
    )
    parser.add_argument("--seed", type=int, default=0, help="episode k starts from seed + k")
    parser.add_argument(
        "--sticky-actions",
        type=float,
        default=STICKY_ACTIONS,
        help="Atari: probability that the emulator repeats the previous action (Machado et al. "
        "2018's recommendation: 0.25; 0: the deterministic game)",
    )


def checkpoint_from_args(args: argparse.Namespace):
    """The checkpoint named by --checkpoint PATH or --pretrained GAME (None when neither is given),
    checked against --game; a UsageError with the reason when it cannot be used."""
    from a3c_course.lessons import pretrained

    try:
        if args.pretrained is not None:
            checkpoint = pretrained.checkpoint(args.pretrained)
            if args.game is not None:
                check_game(checkpoint, args.game)
            return checkpoint
        if args.checkpoint is not None:
            return load_checkpoint(args.checkpoint, expect_game=args.game)
    except (CheckpointError, ValueError) as error:
        raise UsageError(str(error)) from None
    return None


def run_evaluate(args: argparse.Namespace) -> int:
    """Play episodes with a checkpoint's network and print the raw game score of each, then their
    mean, standard deviation, minimum and maximum."""
    from a3c_course.training.evaluate import evaluate

    checkpoint = checkpoint_from_args(args)
    if not 0.0 <= args.sticky_actions <= 1.0:
        raise UsageError(
            f"--sticky-actions must be a probability in [0, 1], got {args.sticky_actions}"
        )
    game = args.game or checkpoint.config.game
    policy = "sampled" if args.sample else "greedy"
    print(
        f"Evaluating {checkpoint.path} on {checkpoint.config.env_id}: {args.episodes} episodes, "
        f"{policy} policy, at most {args.max_steps:,} steps each"
    )
    result = evaluate(
        checkpoint,
        game,
        args.episodes,
        greedy=not args.sample,
        max_steps_per_episode=args.max_steps,
        seed=args.seed,
        sticky_actions=args.sticky_actions,
    )
    for k, (score, length, capped) in enumerate(
        zip(result.scores, result.lengths, result.capped, strict=True)
    ):
        print(
            f"episode {k + 1:>3}: score {score:7.1f}  ({length} steps{', cut at the cap' if capped else ''})"
        )
    print(
        f"score: mean {result.mean:.2f}, std {result.std:.2f}, min {result.min:.2f}, "
        f"max {result.max:.2f} over {len(result.scores)} episodes"
    )
    return EXIT_OK


# -- play ----------------------------------------------------------------------------------------


def add_play(subparsers) -> None:
    parser = add_command(
        subparsers, "play", run_play, "write a gameplay video of a checkpoint (or of random play)"
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--checkpoint",
        metavar="PATH",
        default=None,
        help="checkpoint file; without it (or --pretrained), random actions",
    )
    source.add_argument(
        "--pretrained", metavar="GAME", help="the course's shipped agent for GAME, e.g. pong"
    )
    parser.add_argument("--out", required=True, metavar="VIDEO", help="video file: .mp4 or .gif")
    parser.add_argument(
        "--game",
        default=None,
        help="game to play (default: the checkpoint's own; required for random play)",
    )
    parser.add_argument(
        "--episodes", type=positive_int, default=1, help="episodes to record (default: 1)"
    )
    policy = parser.add_mutually_exclusive_group()
    policy.add_argument(
        "--greedy", dest="greedy", action="store_true", default=True,
        help="take the most probable action (the default)",
    )  # fmt: skip
    policy.add_argument(
        "--sample", dest="greedy", action="store_false", help="sample actions from the policy"
    )
    parser.add_argument(
        "--max-steps",
        type=positive_int,
        default=2000,
        help="cut an episode after this many steps (default: 2000)",
    )
    parser.add_argument(
        "--max-frames", type=positive_int, default=1800,
        help="keep at most this many frames in the video (default: 1800, one minute at 30 per second)",
    )  # fmt: skip
    parser.add_argument(
        "--agent-view", action="store_true", help="show the agent's 42x42 input beside the game"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="episode k starts from seed + k (default: 0)"
    )


def run_play(args: argparse.Namespace) -> int:
    """Record episodes of a checkpoint's network (or of random actions, without --checkpoint) with
    the score in a caption, and write them as an MP4 (or GIF) video."""
    from a3c_course.lessons.play import load_player
    from a3c_course.lessons.reports import write_gameplay_video
    from a3c_course.lessons.video import VIDEO_FORMATS

    if os.path.splitext(args.out)[1].lower() not in VIDEO_FORMATS:
        raise UsageError(f"--out must end in {' or '.join(VIDEO_FORMATS)}, got {args.out}")
    checkpoint = checkpoint_from_args(args)
    if checkpoint is None and args.game is None:
        raise UsageError("random play (no --checkpoint) needs --game, e.g. --game pong")
    try:
        model, game = load_player(checkpoint, args.game)
    except (CheckpointError, ValueError) as error:
        raise UsageError(str(error)) from None
    check_writable(os.path.dirname(os.path.abspath(args.out)))
    who = "random play" if checkpoint is None else str(checkpoint.path)
    print(f"Playing {args.episodes} episode(s) of {game} with {who}...", flush=True)
    path, episodes = write_gameplay_video(
        args.out,
        game,
        model,
        args.episodes,
        greedy=args.greedy,
        seed=args.seed,
        max_steps=args.max_steps,
        max_frames=args.max_frames,
        agent_view=args.agent_view,
    )
    for k, episode in enumerate(episodes, 1):
        cut = "" if episode.ended else ", cut at the step cap"
        print(f"episode {k:>3}: score {episode.score:7.1f}  ({episode.length} steps{cut})")
    print(f"Video: {path}")
    return EXIT_OK
