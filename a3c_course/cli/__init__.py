"""The `a3c-course` command line, on top of everything else: train, evaluate, play, doctor,
exercises. main.py builds the parser from one file per subcommand group; common.py holds what
they share (exit statuses, the one-line UsageError)."""
