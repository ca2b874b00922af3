"""Tables 1-7 of the MediBioDeBERTa paper, transcribed as CSV (read through :mod:`medibio.paper.tables`)."""
