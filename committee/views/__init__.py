"""Pages of the committee app, one module per area."""
