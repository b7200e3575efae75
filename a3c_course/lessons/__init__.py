"""The course's own material: what the notebooks show and check, built on the package below it.

    figures/            each unit's figures and harnesses, one module per unit
    exercises/          each unit's exercise checks and hints; solutions/ holds the solutions
    panels/             the notebook's widget panels: settings, training, gameplay
    video.py            recording episodes, captions, mp4/gif files; play.py a network playing them
    reports.py          a run's learning curve and gameplay video
    pretrained.py       the shipped agents; reference.py the shipped reference runs (data/)
    diagnostics.py      silent units of a conv body; random play's frames
    original_course.py  the original course's update code, verbatim (exercise 4.2, the appendix)
    notebook.py         seeding and fast mode for the notebooks; colab.py the Colab setup cell
    doctor.py           is this machine ready for the course?
"""
