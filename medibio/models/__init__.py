"""medibio.models."""
