"""Simplified Chinese: Django's zh_Hans formats, with thousands separated as mainland business writing does.

Django's zh_Hans locale groups digits by four with no separator ("12000"); GPU-hours and costs on Docket's
pages read as "12,000", the way Chinese finance and engineering reports write them.
"""

THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3

# Times: the 24-hour clock with the zone named, as in "2026年12月4日（星期五）18:00 CET" (core.datetimes).
DATE_FORMAT = "Y年n月j日（l）"
DATETIME_FORMAT = "Y年n月j日（l）H:i T"
TIME_FORMAT = "H:i"
DOCKET_WHEN_FORMAT = "Y年n月j日（l）H:i T"
DOCKET_WHEN_SHORT_FORMAT = "n月j日（l）H:i T"
DOCKET_CLOCK_FORMAT = "H:i T"
DOCKET_DAY_FORMAT = "Y年n月j日（l）"
# Money: the amount, then the currency's code ("1,234.50 USD").
DOCKET_MONEY_FORMAT = "%(amount)s %(currency)s"
DOCKET_PERCENT_FORMAT = "%(number)s%%"
