"""Intermediate fine-tuning tasks: STS-B, SICK, ClinicalSTS, SciRepEval; loaders in the BLURB schema."""
