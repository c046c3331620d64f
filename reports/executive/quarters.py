"""Calendar quarters: committee.quarters (budgets read them there, below the reports); kept here for the executive
summary's imports."""

from committee.quarters import (
    parse_quarter,
    quarter_bounds,
    quarter_months,
    quarter_of,
    quarter_of_day,
    shift_quarter,
)

__all__ = ["parse_quarter", "quarter_bounds", "quarter_months", "quarter_of", "quarter_of_day", "shift_quarter"]
