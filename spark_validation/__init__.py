"""spark_validation package."""
