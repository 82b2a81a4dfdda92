"""``python -m workers.cli``: the same as the ``council`` command."""

from workers.cli import main

main()
