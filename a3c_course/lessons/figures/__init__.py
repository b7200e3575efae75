"""The notebooks' figures and harnesses, one module per unit, called by name from the notebooks.

A notebook cell shows one idea in a few lines; the plotting and bookkeeping behind its picture
lives here, where it is tested and reused instead of pasted.
"""
