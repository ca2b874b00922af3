"""medibio.results."""
