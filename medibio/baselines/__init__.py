"""medibio.baselines."""
