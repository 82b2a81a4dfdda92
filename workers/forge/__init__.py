"""Code hosts (forges) council publishes to: :mod:`workers.forge.github`."""
