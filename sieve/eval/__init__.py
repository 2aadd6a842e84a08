"""Evaluation: answer metrics, paired statistics, collections and reports."""
