"""medibio.tasks."""
