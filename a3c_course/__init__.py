"""Learn A3C by building it: the package behind the course's notebooks.

Five layers, each importing only the ones below it (checked by import-linter: `make lint`):

    a3c_course.cli        the `a3c-course` command line
    a3c_course.lessons    the course's material: figures, exercise checks, panels, videos
    a3c_course.measure    speed and scaling: raw emulator speed, a worker's profile, one server's limits
    a3c_course.training   the machinery: config, trainer, Hogwild and Ray backends, checkpoints
    a3c_course.a3c        the algorithm itself: envs, model, returns, optim, worker

Read a3c_course.a3c first, in the units' order; everything above it runs or shows those pieces.
"""

__version__ = "0.1.0"
