"""medibio.cli."""
