"""The notebook's panels: set hyperparameters, start and stop training, watch the agent play.

    from a3c_course.lessons.panels import HyperparameterPanel, TrainingPanel, GameplayPanel

    settings = HyperparameterPanel(TrainConfig(game="pong"))
    settings                                    # sliders; a bad value shows its error in place
    training = TrainingPanel(settings)
    training                                    # Start / Stop, live learning curve, the result
    GameplayPanel()                             # pick a checkpoint, watch it play, evaluate it

Every panel is a plain object holding ipywidgets; what its buttons do are its methods
(`settings.read()`, `training.start()`, `training.stop()`, `player.play()`, `player.evaluate()`,
and "Keep this run"'s `training.keep()`, `player.keep()`: keep_run.py's zip of the run's folder,
downloaded, and copied to Google Drive when mounted), so the tests call them without a browser.
`panel.widget` is the box to display (a panel displays itself too).

Training runs in a background thread of the kernel, so the notebook stays responsive and the Stop
button can be pressed. Stop does not kill anything: it makes the trainer's next progress callback
raise KeyboardInterrupt, and the trainer stops its workers, joins them and saves the checkpoint,
as on Ctrl-C. The live plot is a PNG in an Image widget: updating a widget's value is safe from a
background thread, printing into an Output widget is not.

base.py holds what the panels share; settings.py, training.py and gameplay.py one panel each.
"""

from a3c_course.lessons.panels.gameplay import GameplayPanel
from a3c_course.lessons.panels.settings import HyperparameterPanel, describe_config
from a3c_course.lessons.panels.training import TrainingPanel

__all__ = ["GameplayPanel", "HyperparameterPanel", "TrainingPanel", "describe_config"]
