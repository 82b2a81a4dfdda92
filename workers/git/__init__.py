"""Reading git: refs, the diff, files at a ref, the packed head tree."""
