"""Sequence generation with BERT: greedy and beam decoding over a key/value cache, n-gram blocking."""
