"""S2ORC field-of-study co-occurrence (paper Section III-B, Figures 2-4) and the medicine-related subset."""
