"""``python -m workers.cli``: the same as the ``council`` command (:mod:`workers.entry`)."""

from workers.entry import main

main()
