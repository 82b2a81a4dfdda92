"""The coordinator: prepare a round from trusted inputs, dispatch its chord, wait, resume."""
