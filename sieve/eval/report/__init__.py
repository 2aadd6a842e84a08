"""Many runs to one report: per-run summaries (`summary`), statistics (`stats`), the report's
tables and figures (`report`, `tables`, `figures`).
"""
