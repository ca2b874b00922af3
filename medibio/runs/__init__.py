"""Run records (one JSON per run, written atomically) and their aggregation into result tables."""
