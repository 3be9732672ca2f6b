"""Tests of vsfio's pure parts: `python3 -m unittest discover -s bench` from the repository's root."""
