"""The policy lab's reads."""
