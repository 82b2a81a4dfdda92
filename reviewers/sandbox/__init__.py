"""The sandbox around reviewer programs and their scripts: bubblewrap, limits, the desk."""
