"""The finding and report model: anchors, findings, participants, clocks, the settled report."""
