"""The ``contextforge`` command line: ``contextforge --help`` lists the commands.

Run it as the installed ``contextforge`` script, ``python -m contextforge.cli`` or
``python -m contextforge.cli.main``; the entry point is
:func:`contextforge.cli.main.main`. This module imports nothing, so that running
``contextforge.cli.main`` as a script does not import it twice.
"""
