"""What the committee looks at: dashboards of the GPUs' use, the monthly review and capacity planning.

Every number is computed by a selector into a `Table` (selectors.py, monthly.py, capacity.py); the
charts (charts.py), the table views, the CSV downloads and the PDF are drawn from those same tables,
so what a chart shows and what the CSV says cannot differ.
"""
