"""Checks and hints for the course's exercises, one module per unit."""

from a3c_course.lessons.exercises.core import Case, check_cases, close, report, show_hints

__all__ = ["Case", "check_cases", "close", "report", "show_hints"]
