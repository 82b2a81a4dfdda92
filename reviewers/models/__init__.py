"""Model reviewers: the conversation loop, the providers, streaming, retries."""
