"""The executive summary of a month and the capacity buffer fund it reports (docs/executive.md)."""
