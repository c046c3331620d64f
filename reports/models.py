"""The decision archive, PDF exports and charts."""
