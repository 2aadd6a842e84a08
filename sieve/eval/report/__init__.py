"""Many runs to one report: per-run summaries (`summary`), statistics (`stats`), the report's
tables and figures (`report`; the data in `tables`, `ablations`, `figure_data` over `context`;
the Markdown in `markdown`; the drawing in `figures`).
"""
