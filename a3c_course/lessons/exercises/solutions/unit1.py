"""Unit 1's solutions: frame preprocessing, frame skipping, the original's normaliser."""

import cv2
import numpy as np

LUMA = np.array([0.299, 0.587, 0.114])  # ITU-R BT.601 luma weights, as in the notebook


def preprocess_frame(frame, rows, size=42):
    """Raw RGB screen (210, 160, 3) uint8 -> float32 observation (1, size, size) in [0, 1]."""
    ### BEGIN SOLUTION
    top, bottom = rows
    grey = np.round(frame[top:bottom] @ LUMA).astype(np.uint8)
    small = cv2.resize(grey, (size, size), interpolation=cv2.INTER_AREA)
    return (small.astype(np.float32) / 255.0)[None]
    ### END SOLUTION


def skip_frames(env, action, skip=4):
    """Repeat action up to skip times; return (max of the last two frames, summed reward,
    terminated, truncated, info)."""
    ### BEGIN SOLUTION
    frames, total_reward = [], 0.0
    for _ in range(skip):
        frame, reward, terminated, truncated, info = env.step(action)
        frames.append(frame)
        total_reward += reward
        if terminated or truncated:
            break
    pooled = np.maximum(frames[-2], frames[-1]) if len(frames) > 1 else frames[-1]
    return pooled, total_reward, terminated, truncated, info
    ### END SOLUTION


class RunningNormalizer:
    """A running mean/std normaliser, one per environment (the appendix's NormalizedEnv)."""

    def __init__(self, alpha=0.9999, eps=1e-8):
        ### BEGIN SOLUTION
        self.alpha, self.eps = alpha, eps
        self.mean = self.std = 0.0
        self.t = 0
        ### END SOLUTION

    def __call__(self, obs):
        ### BEGIN SOLUTION
        self.t += 1
        self.mean = self.alpha * self.mean + (1 - self.alpha) * obs.mean()
        self.std = self.alpha * self.std + (1 - self.alpha) * obs.std()
        correction = 1 - self.alpha**self.t
        return (obs - self.mean / correction) / (self.std / correction + self.eps)
        ### END SOLUTION
