"""English: Django's en formats, with Docket's own for times, money and percentages (core.datetimes, core.numbers).

Times are on the 24-hour clock with the zone named, the day spelled out so no reader takes 12/01 for January:
"Fri 4 Dec 2026, 18:00 CET". Django's English defaults ("Dec. 7, 2026, midnight", "7:42 a.m.") are replaced
for every page that uses the date filter with a named format too.
"""

DATE_FORMAT = "D j M Y"
DATETIME_FORMAT = "D j M Y, H:i T"
TIME_FORMAT = "H:i"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
MONTH_DAY_FORMAT = "j F"
YEAR_MONTH_FORMAT = "F Y"
FIRST_DAY_OF_WEEK = 1  # Monday, as the committee's week

DOCKET_WHEN_FORMAT = "D j M Y, H:i T"
DOCKET_WHEN_SHORT_FORMAT = "D j M, H:i T"
DOCKET_CLOCK_FORMAT = "H:i T"
DOCKET_DAY_FORMAT = "D j M Y"
DOCKET_MONEY_FORMAT = "%(currency)s %(amount)s"
DOCKET_PERCENT_FORMAT = "%(number)s%%"

DECIMAL_SEPARATOR = "."
THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3
