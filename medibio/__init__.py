"""medibio: reproducibility companion of the MediBioDeBERTa paper.

The package holds all logic (data, metrics, training, analysis, tables, plots); the notebooks in
``notebooks/`` only call it.
"""

__version__ = "0.1.0"
