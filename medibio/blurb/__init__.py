"""BLURB: the 13 datasets, their loaders, metrics and the BLURB score."""
