"""The policy lab's records."""
