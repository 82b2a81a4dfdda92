"""``council outcomes``: track records, imported and shown (docs/ranking.md)."""
