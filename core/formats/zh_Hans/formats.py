"""Simplified Chinese: Django's zh_Hans formats, with thousands separated as mainland business writing does.

Django's zh_Hans locale groups digits by four with no separator ("12000"); GPU-hours and costs on Docket's
pages read as "12,000", the way Chinese finance and engineering reports write them.
"""

THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3
