"""Learn A3C by building it."""

__version__ = "0.1.0"
