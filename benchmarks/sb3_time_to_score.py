"""Stable-Baselines3's A2C on the same game, to the same evaluation score: what a learner would
otherwise pick, timed the way time_to_score.py times the course's A3C.

    .venv/bin/pip install -e ".[bench]"      # stable-baselines3, for this benchmark only
    .venv/bin/python benchmarks/sb3_time_to_score.py --game pong --target-score 18 \
        --max-minutes 30 --seeds 0,1,2 --out runs/sb3_a2c

The settings are the RL Baselines3 Zoo's for A2C on Atari (hyperparams/a2c.yml, "atari"): 16
environments, stepped in --vec-env subproc processes (SubprocVecEnv, one per environment, so both
cores step them; "dummy" steps them serially in one process, as the Zoo does), SB3's AtariWrapper (30 random no-ops, frame skip 4 with
max-pooling, a life lost ends the training episode, FIRE on reset, 84 x 84 grey, clipped rewards),
4 stacked frames, ent_coef 0.01, vf_coef 0.25, RMSpropTFLike(eps=1e-5); A2C's defaults for the rest
(n_steps 5, learning rate 7e-4, gamma 0.99, max_grad_norm 0.5). torch uses --threads threads (the
course's two workers use one each).

Each run seed draws the model's, the training environments' and the evaluation games' seeds as the
course's trainer draws its own (`sb3_seeds`, training/seeds.py): two run seeds share none.

Evaluation follows the course's protocol: every --eval-interval-s seconds, the greedy policy
(deterministic=True) plays --eval-episodes whole games (no life-loss ends, raw scores) that start
with up to 30 random no-ops, with sticky actions 0.25 (--sticky-actions; training too), cut after --eval-max-episode-steps
agent steps. Training pauses while the policy is evaluated and its clock ("wall_s") stops, as
time_to_score.py's clock (with its default --eval-mode after) counts training alone.
"wall_with_eval_s" counts the evaluations too. Writes <out>/seed-<S>/ (learning_curve.png,
history.json) and <out>/summary.json in time_to_score.py's layout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from time_to_score import (
    CONSECUTIVE,
    first_met,
    seeds,
    write_summary,
)  # this folder is on sys.path when run as a script

from a3c_course.a3c.envs import STICKY_ACTIONS, is_atari, resolve_env_id
from a3c_course.lessons.reports import plot_learning_curve, save_figure
from a3c_course.training.seeds import evaluation_seed, network_seed, worker_seeds

FRAME_SKIP = 4
# RL Baselines3 Zoo, hyperparams/a2c.yml, "atari" (the optimizer is set in policy_kwargs below).
ZOO_ATARI = {"n_envs": 16, "frame_stack": 4, "ent_coef": 0.01, "vf_coef": 0.25}
# A2C's own defaults, which the Zoo's Atari settings keep (the slow test checks them against SB3's).
A2C_DEFAULTS = {"n_steps": 5, "learning_rate": 7e-4, "gamma": 0.99, "gae_lambda": 1.0,
                "max_grad_norm": 0.5}  # fmt: skip
INSTALL_HINT = 'pip install -e ".[bench]"  (or: pip install stable-baselines3)'


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--game", default="pong", help="an Atari game: pong, breakout or an ALE id (default: pong)")
    add("--target-score", type=float, default=18.0, help="evaluation mean to reach (default: 18)")
    add("--eval-episodes", type=int, default=10, help="games per evaluation (default: 10)")
    add("--eval-interval-s", type=float, default=60.0, help="training seconds between evaluations")
    add("--eval-max-episode-steps", type=int, default=10_000, help="agent-step cap per eval game")
    add(
        "--sticky-actions", type=float, default=STICKY_ACTIONS,
        help=f"probability of repeating the last action (default: {STICKY_ACTIONS})",
    )  # fmt: skip
    add("--vec-env", choices=("subproc", "dummy"), default="subproc",
        help="subproc: each training environment in its own process (default); dummy: all in one")  # fmt: skip
    add("--consecutive", type=int, default=CONSECUTIVE,
        help=f"evaluations in a row at the target (default: {CONSECUTIVE})")  # fmt: skip
    add("--max-minutes", type=float, default=30.0, help="training minutes per seed (default: 30)")
    add("--max-steps", type=int, default=None, help="agent steps per seed (default: no limit)")
    add("--threads", type=int, default=2, help="torch threads (default: 2, the machine's cores)")
    add("--seeds", type=seeds, default=[0], help="seeds, one run each, e.g. 0,1,2 (default: 0)")
    add("--out", default="runs/sb3_a2c", help="output folder (default: runs/sb3_a2c)")
    return parser


def check(args: argparse.Namespace) -> None:
    """Raise ValueError naming the first bad argument."""
    if not is_atari(resolve_env_id(args.game)):
        raise ValueError(f"--game must be an Atari game, got {args.game!r}")
    for name in ("eval_episodes", "eval_max_episode_steps", "threads"):
        if getattr(args, name) < 1:
            raise ValueError(
                f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}"
            )
    for name in ("eval_interval_s", "max_minutes"):
        if not getattr(args, name) > 0:
            raise ValueError(
                f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}"
            )
    if args.max_steps is not None and args.max_steps < 1:
        raise ValueError(f"--max-steps must be at least 1, got {args.max_steps}")
    if not 0.0 <= args.sticky_actions < 1.0:
        raise ValueError(f"--sticky-actions must be in [0, 1), got {args.sticky_actions}")


def sb3_env_id(game: str) -> str:
    """The v4 NoFrameskip id SB3's AtariWrapper is made for: "pong" -> "PongNoFrameskip-v4"."""
    name = resolve_env_id(game).split("/")[-1].split("-")[0]
    return f"{name}NoFrameskip-v4"


def make_envs(args, n_envs: int, seed: int, evaluation: bool):
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecFrameStack

    wrapper = {"action_repeat_probability": args.sticky_actions}
    env_kwargs = {}
    if evaluation:  # whole games, raw scores, the course's step cap (in emulator frames here)
        wrapper.update(terminal_on_life_loss=False, clip_reward=False)
        env_kwargs["max_episode_steps"] = args.eval_max_episode_steps * FRAME_SKIP
    envs = make_atari_env(  # "ale_py:" registers the Atari ids in every process, SubprocVecEnv's too
        f"ale_py:{sb3_env_id(args.game)}",
        n_envs=n_envs,
        seed=seed,
        wrapper_kwargs=wrapper,
        env_kwargs=env_kwargs,
        vec_env_cls=SubprocVecEnv if args.vec_env == "subproc" and not evaluation else DummyVecEnv,
    )
    return VecFrameStack(envs, n_stack=ZOO_ATARI["frame_stack"])


def make_callback(args, eval_envs, history: list[dict]):
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.evaluation import evaluate_policy

    class EvaluateOnTheClock(BaseCallback):
        """Records training episodes, evaluates every eval_interval_s of training time, stops
        at the target, the time limit or the step limit; the clock pauses while evaluating."""

        def _on_training_start(self) -> None:
            self.trained_s, self.resumed, self.began = 0.0, time.perf_counter(), time.perf_counter()
            self.last_eval_s, self.stop_reason = 0.0, "still running"

        def clock(self) -> float:
            return self.trained_s + time.perf_counter() - self.resumed

        def _on_step(self) -> bool:
            now_s = self.clock()
            for info in self.locals["infos"]:
                if "episode" in info:  # SB3's Monitor: the raw score of a whole game
                    history.append(
                        {"kind": "episode", "steps": self.num_timesteps, "elapsed_s": now_s,
                         "score": float(info["episode"]["r"])}
                    )  # fmt: skip
            if now_s - self.last_eval_s >= args.eval_interval_s:
                self.trained_s, self.last_eval_s = now_s, now_s
                scores, _ = evaluate_policy(
                    self.model, eval_envs, n_eval_episodes=args.eval_episodes,
                    deterministic=True, return_episode_rewards=True,
                )  # fmt: skip
                self.resumed = time.perf_counter()
                history.append(
                    {"kind": "eval", "steps": self.num_timesteps, "elapsed_s": now_s,
                     "wall_with_eval_s": self.resumed - self.began, "scores": scores,
                     "mean": sum(scores) / len(scores), "min": min(scores), "max": max(scores)}
                )  # fmt: skip
                print(f"  {now_s:7.0f} s, {self.num_timesteps:,} steps: eval mean "
                      f"{history[-1]['mean']:+.1f}", flush=True)  # fmt: skip
                if first_met(history, args.target_score, args.consecutive) is not None:
                    self.stop_reason = "target score"
                    return False
            if now_s >= args.max_minutes * 60:
                self.stop_reason = "time limit"
                return False
            if args.max_steps is not None and self.num_timesteps >= args.max_steps:
                self.stop_reason = "step limit"
                return False
            return True

    return EvaluateOnTheClock()


def sb3_settings(args, seed: int) -> dict:
    return {**ZOO_ATARI, "algo": "A2C", "env_id": sb3_env_id(args.game), "seed": seed,
            "drawn_seeds": sb3_seeds(seed),
            "optimizer": "RMSpropTFLike(eps=1e-5)", **A2C_DEFAULTS, "threads": args.threads,
            "sticky_actions": args.sticky_actions, "vec_env": args.vec_env,
            "consecutive": args.consecutive, "eval_episodes": args.eval_episodes,
            "eval_interval_s": args.eval_interval_s}  # fmt: skip


def sb3_seeds(seed: int) -> dict[str, int]:
    """The run's seeds, drawn as the course's trainer draws its own (training/seeds.py), so that
    two run seeds share none: SB3 seeds environment i with base + i (run seeds 0 and 1 would share
    15 of 16) and its model with one number below 2**32 (numpy's limit)."""
    return {
        "model": network_seed(seed) % 2**32,
        "envs": worker_seeds(seed, 0, 1).envs[0],
        "evaluation": evaluation_seed(seed, 0),
    }


def run_seed(args, seed: int, out: Path) -> dict:
    import torch
    from stable_baselines3 import A2C
    from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

    torch.set_num_threads(args.threads)
    drawn = sb3_seeds(seed)
    envs = make_envs(args, ZOO_ATARI["n_envs"], drawn["envs"], evaluation=False)
    eval_envs = make_envs(args, min(args.eval_episodes, 10), drawn["evaluation"], evaluation=True)
    model = A2C(
        "CnnPolicy", envs, ent_coef=ZOO_ATARI["ent_coef"], vf_coef=ZOO_ATARI["vf_coef"],
        policy_kwargs={"optimizer_class": RMSpropTFLike, "optimizer_kwargs": {"eps": 1e-5}},
        seed=drawn["model"], device="cpu", verbose=0,
    )  # fmt: skip
    history: list[dict] = []
    callback = make_callback(args, eval_envs, history)
    model.learn(total_timesteps=10**10, callback=callback)
    envs.close()
    eval_envs.close()
    return report(args, seed, out, history, callback)


def report(args, seed: int, out: Path, history: list[dict], callback) -> dict:
    met = first_met(history, args.target_score, args.consecutive)
    evaluations = [r for r in history if r["kind"] == "eval"]
    out.mkdir(parents=True, exist_ok=True)
    (out / "history.json").write_text(json.dumps(history) + "\n")
    figure = plot_learning_curve(history, title=f"SB3 A2C, {args.game}, seed {seed}")
    if met is not None:
        figure.axes[0].axvline(met["steps"], color="tab:green", ls="--", lw=1)
    return {
        "seed": seed,
        "met": met is not None,
        "wall_s": None if met is None else round(met["elapsed_s"], 3),
        "wall_with_eval_s": None if met is None else round(met["wall_with_eval_s"], 3),
        "steps": None if met is None else met["steps"],
        "frames": None if met is None else met["steps"] * FRAME_SKIP,
        "eval_mean": None if met is None else met["mean"],
        "stop_reason": callback.stop_reason,
        "total_steps": callback.num_timesteps,
        "total_wall_s": round(callback.clock(), 3),
        "best_eval_mean": max((r["mean"] for r in evaluations), default=None),
        "evaluations": len(evaluations),
        "learning_curve": str(save_figure(figure, out / "learning_curve.png")),
        "config": sb3_settings(args, seed),
    }


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        check(args)
        import stable_baselines3  # noqa: F401
    except ValueError as error:
        print(f"sb3_time_to_score.py: error: {error}", file=sys.stderr)
        return 2
    except ImportError:
        print(f"sb3_time_to_score.py: error: stable-baselines3 is not installed: {INSTALL_HINT}",
              file=sys.stderr)  # fmt: skip
        return 2
    out = Path(args.out)
    runs = []
    for seed in args.seeds:
        run = run_seed(args, seed, out / f"seed-{seed}")
        runs.append(run)
        result = (f"met after {run['wall_s']:.1f} s of training ({run['wall_with_eval_s']:.1f} s "
                  f"with evaluations), {run['steps']:,} steps" if run["met"] else
                  f"not met ({run['stop_reason']}, best eval mean {run['best_eval_mean']})")  # fmt: skip
        print(f"seed {seed}: target {args.target_score:g} {result}", flush=True)
    summary = write_summary(out, "sb3_time_to_score.py", argv, args.target_score, runs)
    print(
        f"target {args.target_score:g} met by {summary['met']} seeds; summary: {out / 'summary.json'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
