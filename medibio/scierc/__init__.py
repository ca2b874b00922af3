"""SciERC (paper Table 4): entities, relations and coreference with a span model trained here.

:func:`medibio.scierc.runner.run_scierc` trains (or reuses) one run per seed through the one run protocol;
:func:`medibio.results.scierc.scierc_table` summarises the records. :mod:`medibio.scierc.presets` says how the
joint and pipeline modes map to DyGIE++ and PURE.
"""
