"""Test helpers shared across test layers."""
