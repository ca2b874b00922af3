"""medibio.training."""
