"""Monthly statements of what departments and teams are charged: one line per window (docs/chargeback.md)."""
