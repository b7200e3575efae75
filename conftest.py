"""Any pytest run (unit tests or `pytest --nbval notebooks/`) runs the notebooks in fast mode.

Notebook kernels inherit this process's environment, so setting the variable here is enough.
"""

import os

os.environ["A3C_COURSE_FAST"] = "1"
