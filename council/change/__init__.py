"""The change under review: the diff, its paths and filters, commentable lines, secret masks."""
