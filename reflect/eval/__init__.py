"""Evaluation: replay recorded failure traces and compare memory on, recency-only and off."""
