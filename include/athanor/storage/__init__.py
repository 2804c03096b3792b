"""Checkpoint storage: inventories, checkpoint runs, prices, policies, lifecycle rules, apply."""
