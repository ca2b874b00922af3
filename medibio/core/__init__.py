"""medibio.core."""
